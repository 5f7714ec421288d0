package lint

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode"
)

// printable replaces control characters (a hostile server's names and
// descriptions could carry terminal escapes) with U+FFFD.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return '\uFFFD'
		}
		return r
	}, s)
}

var icon = map[Severity]string{Error: "✗", Warning: "⚠", Info: "·"}

// WriteText prints r as the spec's example does: the surface's findings,
// then a line per tool (✓ when clean, else its name and a line per
// finding with its code), and the totals.
func WriteText(w io.Writer, r *Report, strict bool) {
	fmt.Fprintf(w, "promcp-device lint  proMCP v0.2 — %s\n\n", printable(r.Target))
	if len(r.Server) > 0 {
		fmt.Fprintln(w, "server")
		for _, f := range r.Server {
			fmt.Fprintf(w, "    %s %-30s [%s] %s\n", icon[f.Severity], "server", f.Code, printable(f.Message))
		}
	}
	for _, t := range r.Tools {
		if len(t.Findings) == 0 {
			fmt.Fprintf(w, "  ✓ %s\n", printable(t.Name))
			continue
		}
		fmt.Fprintf(w, "  %s\n", printable(t.Name))
		for _, f := range t.Findings {
			fmt.Fprintf(w, "    %s %-30s [%s] %s\n", icon[f.Severity], printable(f.Tool), f.Code, printable(f.Message))
		}
	}
	e, wn, in := r.Count()
	if r.Calls > 0 {
		fmt.Fprintf(w, "\n--call-reads: %d calls to read_* and can_do, answers checked (no do_* called)\n", r.Calls)
	}
	verdict := "pass"
	if !r.Pass(strict) {
		verdict = "fail"
	}
	if strict {
		verdict += " (strict: warnings fail)"
	}
	mark := "✓"
	if e > 0 {
		mark = "✗"
	}
	fmt.Fprintf(w, "\n%s %d error(s)  %d warning(s)  %d info  %d tools: %s\n", mark, e, wn, in, len(r.Tools), verdict)
}

// jsonReport is the --json shape, the reference linter's plus the target
// and each finding's tool.
type jsonReport struct {
	PromcpVersion string       `json:"promcp_version"`
	Target        string       `json:"target"`
	Server        []Finding    `json:"server"`
	Tools         []ToolReport `json:"tools"`
	Summary       struct {
		Errors   int  `json:"errors"`
		Warnings int  `json:"warnings"`
		Info     int  `json:"info"`
		Calls    int  `json:"calls"`
		Strict   bool `json:"strict"`
		Pass     bool `json:"pass"`
	} `json:"summary"`
}

// WriteJSON prints r as JSON.
func WriteJSON(w io.Writer, r *Report, strict bool) error {
	out := jsonReport{PromcpVersion: "0.2", Target: r.Target, Server: r.Server, Tools: r.Tools}
	if out.Server == nil {
		out.Server = []Finding{}
	}
	if out.Tools == nil {
		out.Tools = []ToolReport{}
	}
	out.Summary.Errors, out.Summary.Warnings, out.Summary.Info = r.Count()
	out.Summary.Calls = r.Calls
	out.Summary.Strict, out.Summary.Pass = strict, r.Pass(strict)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}
