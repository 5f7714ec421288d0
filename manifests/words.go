package manifests

import (
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/goccy/go-yaml/ast"
)

var (
	nameRE    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`) })
	gatewayRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9_-]*$`) })
)

// maxToolName is the longest tool name that MCP clients accept everywhere
// (the Anthropic API allows 64 characters).
const maxToolName = 64

// name decodes a lower_snake_case name.
func (d *decoder) name(n ast.Node, path string) (string, bool) {
	s, ok := d.str(n, path)
	if !ok {
		return "", false
	}
	if !nameRE().MatchString(s) {
		d.add(path, ErrBadName, "%q (want lower_snake_case%s)", s, suggestion(s))
	}
	return s, true
}

// suggestion returns `, such as "x"` for a name that can be fixed.
func suggestion(s string) string {
	var b strings.Builder
	prevLower := false
	for _, r := range s {
		switch {
		case r >= 'A' && r <= 'Z':
			if prevLower {
				b.WriteByte('_')
			}
			b.WriteRune(r - 'A' + 'a')
			prevLower = false
		case r >= 'a' && r <= 'z':
			b.WriteRune(r)
			prevLower = true
		case r >= '0' && r <= '9':
			b.WriteRune(r)
			prevLower = false
		default:
			b.WriteByte('_')
			prevLower = false
		}
	}
	fixed := b.String()
	for strings.Contains(fixed, "__") {
		fixed = strings.ReplaceAll(fixed, "__", "_")
	}
	fixed = strings.Trim(fixed, "_")
	if fixed != s && nameRE().MatchString(fixed) {
		return fmt.Sprintf(", such as %q", fixed)
	}
	return ""
}

// oneOf lists words as OneOf does, an empty list as "nothing".
func oneOf(words []string) string { return OneOf(words, "nothing") }

// OneOf lists words as "a", "a or b", "a, b or c", for the "want …" part
// of an error; an empty list reads none.
func OneOf(words []string, none string) string {
	switch len(words) {
	case 0:
		return none
	case 1:
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// closest returns the word of known nearest to s, if it is near enough to
// be a typo.
func closest(s string, known []string) string {
	best, bestDist := "", 3
	for _, k := range known {
		if dist := levenshtein(s, k); dist < bestDist && dist < len(k)/2+1 {
			best, bestDist = k, dist
		}
	}
	return best
}

func levenshtein(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 64
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
