package sitetest

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"time"
)

// summary is the part of an answer a person reads first.
func summary(tool string, b map[string]any, isErr bool, loc *time.Location) string {
	if b == nil {
		return "no body"
	}
	var parts []string
	if isErr {
		parts = append(parts, "isError")
	}
	add := func(k string) {
		if v, ok := b[k]; ok {
			parts = append(parts, k+"="+show(v))
		}
	}
	switch {
	case tool == "can_do":
		add("feasible")
		for _, key := range []string{"candidates", "blocked"} {
			l, _ := b[key].([]any)
			for _, e := range l {
				m, _ := e.(map[string]any)
				parts = append(parts, fmt.Sprintf("%s %v %v", strings.TrimSuffix(key, "s"), m["capability"], m["permission"]))
			}
		}
	case strings.HasPrefix(tool, "read_"):
		add("value")
		add("unit")
		add("quality")
		add("quality_reason")
		if s, ok := b["timestamp"].(string); ok {
			if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
				parts = append(parts, "at "+t.In(loc).Format("15:04:05"))
			}
		}
	default:
		for _, k := range []string{"status", "previous_value", "applied_value", "replayed", "permission", "reason", "text"} {
			add(k)
		}
		if e, ok := b["error"].(map[string]any); ok {
			parts = append(parts, fmt.Sprintf("error=%v: %v", e["code"], e["message"]))
		}
	}
	return strings.Join(parts, " ")
}

// Report writes a readable report of results to w: each step with what
// came back, each failed check with what was expected and what came back,
// the first difference of each test marked.
func Report(w io.Writer, results []*Result) { ReportAll(w, results, 0) }

// ReportAll is Report for a run in which unloaded more files could not be
// loaded (their errors were printed where they were found): the summary
// counts them, so that a run that loaded nothing never reads as
// "0 passed, 0 failed".
func ReportAll(w io.Writer, results []*Result, unloaded int) {
	pass, fail, broken := 0, 0, 0
	for _, r := range results {
		fmt.Fprintf(w, "site test %s (%s)\n", r.Test.Name, r.Test.File)
		if r.Err != nil {
			broken++
			fmt.Fprintf(w, "  COULD NOT RUN: %v\n\n", r.Err)
			continue
		}
		first := true
		for _, s := range r.Steps {
			mark := "ok  "
			if s.Failed() {
				mark = "FAIL"
			}
			fmt.Fprintf(w, "  %s %2d [%s] %s\n", mark, s.Index, s.At.Format("15:04:05"), s.Title)
			if s.Got != "" {
				fmt.Fprintf(w, "            ← %s\n", s.Got)
			}
			for _, c := range s.Checks {
				if c.Fail == "" {
					continue
				}
				lead := "           "
				if first {
					lead, first = "  >>> first difference:\n           ", false
				}
				fmt.Fprintf(w, "%s %s (%s)\n", lead, c.What, c.Fail)
				fmt.Fprintf(w, "              expected: %s\n", c.Want)
				fmt.Fprintf(w, "              got:      %s\n", c.Got)
			}
		}
		if n := r.Failed(); n > 0 {
			fail++
			fmt.Fprintf(w, "  FAIL: %d of %d steps failed (%s)\n\n", n, len(r.Steps), r.Duration.Round(time.Millisecond))
		} else {
			pass++
			fmt.Fprintf(w, "  PASS: %d steps (%s)\n\n", len(r.Steps), r.Duration.Round(time.Millisecond))
		}
	}
	summary := fmt.Sprintf("%d passed, %d failed, %d could not run", pass, fail, broken)
	switch {
	case unloaded > 0 && len(results) == 0:
		summary = fmt.Sprintf("no site test ran: %s could not be loaded (see the errors above)", plural(unloaded, "file"))
	case unloaded > 0:
		summary += fmt.Sprintf(", and %s could not be loaded (see the errors above)", plural(unloaded, "file"))
	}
	fmt.Fprintln(w, summary)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// JUnit XML, as the Ant JUnit task writes it and Jenkins, GitLab and
// GitHub test reporters read it: one testsuite per site test, one
// testcase per step.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name      string      `xml:"name,attr"`
	Tests     int         `xml:"tests,attr"`
	Failures  int         `xml:"failures,attr"`
	Errors    int         `xml:"errors,attr"`
	Skipped   int         `xml:"skipped,attr"`
	Time      string      `xml:"time,attr"`
	Timestamp string      `xml:"timestamp,attr"`
	Hostname  string      `xml:"hostname,attr"`
	ID        int         `xml:"id,attr"`
	Package   string      `xml:"package,attr"`
	Props     struct{}    `xml:"properties"`
	Cases     []junitCase `xml:"testcase"`
	SystemOut string      `xml:"system-out"`
	SystemErr string      `xml:"system-err"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

func secs(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

// JUnit writes results as JUnit XML; started is when the run began.
func JUnit(w io.Writer, results []*Result, started time.Time) error {
	all := junitSuites{}
	var total time.Duration
	for i, r := range results {
		s := junitSuite{Name: r.Test.Name, Time: secs(r.Duration), Timestamp: started.UTC().Format("2006-01-02T15:04:05"),
			Hostname: "localhost", ID: i, Package: "sitetest", SystemOut: r.Test.File}
		if r.Err != nil {
			s.Tests, s.Errors = 1, 1
			s.Cases = append(s.Cases, junitCase{Name: "load and open", Classname: r.Test.Name, Time: secs(r.Duration),
				Error: &junitProblem{Message: r.Err.Error(), Type: "could not run", Text: r.Err.Error()}})
		}
		for _, st := range r.Steps {
			c := junitCase{Name: fmt.Sprintf("%02d %s", st.Index, st.Title), Classname: r.Test.Name, Time: secs(st.Duration)}
			if st.Failed() {
				c.Failure = failureOf(st)
				s.Failures++
			}
			s.Tests++
			s.Cases = append(s.Cases, c)
		}
		all.Tests += s.Tests
		all.Failures += s.Failures
		all.Errors += s.Errors
		total += r.Duration
		all.Suites = append(all.Suites, s)
	}
	all.Time = secs(total)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(all); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func failureOf(st StepResult) *junitProblem {
	var text strings.Builder
	msg := ""
	for _, c := range st.Checks {
		if c.Fail == "" {
			continue
		}
		if msg == "" {
			msg = fmt.Sprintf("%s: expected %s, got %s", c.What, c.Want, c.Got)
		}
		fmt.Fprintf(&text, "%s (%s)\n  expected: %s\n  got:      %s\n", c.What, c.Fail, c.Want, c.Got)
	}
	if st.Got != "" {
		fmt.Fprintf(&text, "answer: %s\n", st.Got)
	}
	return &junitProblem{Message: msg, Type: "expectation", Text: text.String()}
}
