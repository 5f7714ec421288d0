package sitetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Update returns t's file with each step marked record rewritten: the
// record key and its list become an expect of the values observed at
// those paths in r (an absent path is written as {absent: true}). The
// rest of the file is kept byte for byte. changed is false when no step
// records.
func Update(t *Test, r *Result) (out []byte, changed bool, err error) {
	lines := strings.SplitAfter(string(t.data), "\n")
	byStep := map[*Step]StepResult{}
	for _, sr := range r.Steps {
		byStep[sr.Step] = sr
	}
	// Rewrite from the bottom so that earlier line numbers hold.
	for i := len(t.Steps) - 1; i >= 0; i-- {
		st := &t.Steps[i]
		if len(st.Record) == 0 {
			continue
		}
		sr, ok := byStep[st]
		if !ok || sr.Body == nil {
			return nil, false, fmt.Errorf("%s: step %d (line %d): no answer to record", t.File, i+1, st.Pos.Line)
		}
		from, to, col, err := recordLines(lines, st)
		if err != nil {
			return nil, false, fmt.Errorf("%s: step %d: %w", t.File, i+1, err)
		}
		text := lines[from][:col] + "expect: " + expectText(st.Record, sr.Body) + "\n"
		lines = append(lines[:from], append([]string{text}, lines[to+1:]...)...)
		changed = true
	}
	return []byte(strings.Join(lines, "")), changed, nil
}

// recordLines finds the record key's line (0-based) and column, and the
// last line of its value.
func recordLines(lines []string, st *Step) (from, to, col int, err error) {
	first, last := st.recordFrom-1, st.recordTo-1
	if first < 0 || last >= len(lines) {
		return 0, 0, 0, fmt.Errorf("record: position out of the file")
	}
	for l := first; l >= 0 && l >= first-2; l-- {
		if i := strings.Index(lines[l], "record:"); i >= 0 {
			return l, last, i, nil
		}
	}
	return 0, 0, 0, fmt.Errorf("line %d: cannot find the record key to rewrite", st.recordFrom)
}

// expectText is a flow mapping {body: {path: value, ...}} in JSON, which
// YAML reads as it is.
func expectText(paths []string, body map[string]any) string {
	var b bytes.Buffer
	b.WriteString("{body: {")
	for i, p := range paths {
		if i > 0 {
			b.WriteString(", ")
		}
		k, _ := json.Marshal(p)
		b.Write(k)
		b.WriteString(": ")
		v, ok := lookup(body, p)
		if !ok {
			b.WriteString("{absent: true}")
			continue
		}
		if m, isMap := v.(map[string]any); isMap && len(m) > 0 {
			// A mapping whose keys are all matcher words would read as a
			// matcher: wrap it.
			j, _ := json.Marshal(v)
			fmt.Fprintf(&b, "{equals: %s}", j)
			continue
		}
		j, _ := json.Marshal(v)
		b.Write(j)
	}
	b.WriteString("}}")
	return b.String()
}
