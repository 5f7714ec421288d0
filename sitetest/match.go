package sitetest

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// Matcher is what one field must hold. The zero Matcher only requires the
// field to be present.
type Matcher struct {
	Equals    any
	HasEquals bool
	Min, Max  *float64
	Pattern   *regexp.Regexp
	Absent    bool
	Present   bool
}

// String says what the matcher wants, for the report.
func (m Matcher) String() string {
	var parts []string
	if m.Absent {
		return "absent"
	}
	if m.HasEquals {
		parts = append(parts, show(m.Equals))
	}
	if m.Min != nil {
		parts = append(parts, ">= "+strconv.FormatFloat(*m.Min, 'g', -1, 64))
	}
	if m.Max != nil {
		parts = append(parts, "<= "+strconv.FormatFloat(*m.Max, 'g', -1, 64))
	}
	if m.Pattern != nil {
		parts = append(parts, "matching /"+m.Pattern.String()+"/")
	}
	if len(parts) == 0 {
		return "present"
	}
	return strings.Join(parts, " and ")
}

// Match checks got (found says whether the path exists) against m and
// returns "" or why not.
func (m Matcher) Match(got any, found bool) string {
	if m.Absent {
		if found {
			return "present"
		}
		return ""
	}
	if !found {
		return "absent"
	}
	if m.HasEquals && !equal(m.Equals, got) {
		return "differs"
	}
	if m.Min != nil || m.Max != nil {
		f, ok := got.(float64)
		if !ok {
			return "not a number"
		}
		if m.Min != nil && f < *m.Min || m.Max != nil && f > *m.Max {
			return "out of range"
		}
	}
	if m.Pattern != nil {
		s, ok := got.(string)
		if !ok {
			s = show(got)
		}
		if !m.Pattern.MatchString(s) {
			return "does not match"
		}
	}
	return ""
}

// equal compares two JSON-like values; numbers by value.
func equal(want, got any) bool {
	if w, ok := want.(float64); ok {
		g, ok := got.(float64)
		return ok && (w == g || math.Abs(w-g) <= 1e-9*math.Max(math.Abs(w), math.Abs(g)))
	}
	a, _ := json.Marshal(want)
	b, _ := json.Marshal(got)
	return string(a) == string(b)
}

// show prints a value as JSON, shortened for the report.
func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	s := string(b)
	if len(s) > 200 {
		s = s[:197] + "..."
	}
	return s
}

// pathPart is one step of a path: a key, or an index into a list.
type pathPart struct {
	key   string
	index int // -1 for a key
}

// parsePath reads "$.a.b[0].c" or "a.b[0].c".
func parsePath(p string) ([]pathPart, error) {
	s := strings.TrimPrefix(strings.TrimPrefix(p, "$"), ".")
	if s == "" {
		if p == "$" {
			return nil, nil
		}
		return nil, fmt.Errorf("empty path %q (want a field such as value or $.error.code)", p)
	}
	var out []pathPart
	for _, seg := range strings.Split(s, ".") {
		key, rest, _ := strings.Cut(seg, "[")
		if key == "" && rest == "" {
			return nil, fmt.Errorf("path %q: empty field name", p)
		}
		if key != "" {
			out = append(out, pathPart{key: key, index: -1})
		}
		for rest != "" {
			num, after, ok := strings.Cut(rest, "]")
			i, err := strconv.Atoi(num)
			if !ok || err != nil || i < 0 || i > 1<<20 {
				return nil, fmt.Errorf("path %q: want [N] with N a list index", p)
			}
			out = append(out, pathPart{index: i})
			if after == "" {
				break
			}
			if !strings.HasPrefix(after, "[") {
				return nil, fmt.Errorf("path %q: want . or [ after ]", p)
			}
			rest = after[1:]
		}
	}
	return out, nil
}

// lookup returns the value at path p in v, and whether it exists.
func lookup(v any, p string) (any, bool) {
	parts, err := parsePath(p)
	if err != nil {
		return nil, false
	}
	for _, part := range parts {
		if part.index < 0 {
			m, ok := v.(map[string]any)
			if !ok {
				return nil, false
			}
			if v, ok = m[part.key]; !ok {
				return nil, false
			}
			continue
		}
		l, ok := v.([]any)
		if !ok || part.index >= len(l) {
			return nil, false
		}
		v = l[part.index]
	}
	return v, true
}

// expand replaces ${name} in v (strings, recursively) with the captured
// values: a string that is exactly ${name} takes the value itself, with
// its type; one that contains it takes its text. Unknown names are
// returned in missing.
func expand(v any, vars map[string]any, missing *[]string) any {
	switch x := v.(type) {
	case string:
		return expandString(x, vars, missing)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = expand(e, vars, missing)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = expand(e, vars, missing)
		}
		return out
	}
	return v
}

var varRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\$\{([A-Za-z0-9_]+)\}`) })

func expandString(s string, vars map[string]any, missing *[]string) any {
	if m := varRe().FindStringSubmatch(s); m != nil && m[0] == s {
		v, ok := vars[m[1]]
		if !ok {
			*missing = append(*missing, m[1])
			return s
		}
		return v
	}
	return varRe().ReplaceAllStringFunc(s, func(ref string) string {
		name := ref[2 : len(ref)-1]
		v, ok := vars[name]
		if !ok {
			*missing = append(*missing, name)
			return ref
		}
		if str, ok := v.(string); ok {
			return str
		}
		return show(v)
	})
}
