package audit

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"
)

// Tail returns the last n records of a log (all when n <= 0), oldest first.
func Tail(r io.Reader, n int) ([]Record, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	var out []Record
	for sc.Scan() {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var rec Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return nil, fmt.Errorf("audit log: %w", err)
		}
		out = append(out, rec)
		if n > 0 && len(out) > n {
			out = out[1:]
		}
	}
	return out, sc.Err()
}

// TailLog returns the last n records (all when n <= 0) of the log at path
// across its rotated files, oldest first.
func TailLog(path string, n int) ([]Record, error) {
	files, err := Files(path)
	if err != nil {
		return nil, err
	}
	var out []Record
	for i := len(files) - 1; i >= 0 && (n <= 0 || len(out) < n); i-- {
		f, err := os.Open(files[i])
		if os.IsNotExist(err) && i == len(files)-1 {
			continue
		}
		if err != nil {
			return nil, err
		}
		recs, err := Tail(f, 0)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", files[i], err)
		}
		out = append(recs, out...)
	}
	if n > 0 && len(out) > n {
		out = out[len(out)-n:]
	}
	return out, nil
}

// Format renders a record on one line for people:
//
//	2026-11-30T12:00:00.123Z #42 result  do_set_heater key=warm-1 by alice (operator) allowed success 3.1ms {"value":true}
//
// Control characters (C0, DEL, C1, bidi overrides, line separators) and
// invalid UTF-8 from the record are escaped (\x1b, \u202e), so that a
// crafted key or argument cannot move the cursor, recolour, or fake a line
// on a terminal.
func Format(r Record) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s #%d %-9s %s key=%s by %s (%s)", r.Time.UTC().Format("2006-01-02T15:04:05.000Z"), r.Seq, Escape(r.Event), Escape(r.Tool),
		Escape(r.Key), Escape(orDash(r.Caller)), Escape(orDash(r.Role)))
	if r.Via != "" {
		b.WriteString(" via " + Escape(r.Via))
	}
	for _, s := range []string{r.Permission, r.Status} {
		if s != "" {
			b.WriteString(" " + Escape(s))
		}
	}
	if a := r.Approval; a != nil {
		fmt.Fprintf(&b, " approved by %s (%s)", Escape(a.By), Escape(a.Method))
	}
	fmt.Fprintf(&b, " %.1fms", r.DurationMS)
	if len(r.Arguments) > 0 {
		b.WriteString(" " + Escape(string(r.Arguments)))
	}
	if r.Reason != "" {
		b.WriteString(" — " + Escape(r.Reason))
	}
	return b.String()
}

// Escape replaces control characters and invalid UTF-8 in s with visible
// escapes: \x1b for bytes and C0/DEL, \u009b, \u202e for the others.
func Escape(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || isControl(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < 0x80 && isControl(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case isControl(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
