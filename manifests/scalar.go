package manifests

import (
	"math"
	"slices"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"
)

func (d *decoder) str(n ast.Node, path string) (string, bool) {
	n = d.resolve(n, path)
	switch v := n.(type) {
	case nil, *ast.NullNode:
		return "", false
	case *ast.StringNode:
		return v.Value, true
	case *ast.LiteralNode:
		if v.Value != nil {
			return v.Value.Value, true
		}
		return "", true
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
		s := describe(n)
		d.addAt(n, path, ErrType, ": got %s, want a string (quote it: %q)", s, s[strings.IndexByte(s, ' ')+1:])
		return "", false
	}
	d.addAt(n, path, ErrType, ": got %s, want a string", describe(n))
	return "", false
}

func (d *decoder) strs(n ast.Node, path string) []string {
	var out []string
	for i, it := range d.seq(n, path) {
		s, ok := d.str(it, index(path, i))
		if ok && s == "" {
			d.add(index(path, i), ErrMissing, "value (want a non-empty string)")
		}
		out = append(out, s) // "" too, to keep indexes aligned with paths
	}
	return out
}

func (d *decoder) integer(n ast.Node, path string) (int64, bool) {
	n = d.resolve(n, path)
	switch v := n.(type) {
	case nil, *ast.NullNode:
		return 0, false
	case *ast.IntegerNode:
		switch i := v.Value.(type) {
		case int64:
			return i, true
		case uint64:
			if i <= math.MaxInt64 {
				return int64(i), true
			}
		}
		d.addAt(n, path, ErrRange, ": %s is too large", describe(n))
		return 0, false
	}
	d.addAt(n, path, ErrType, ": got %s, want an integer", describe(n))
	return 0, false
}

func (d *decoder) number(n ast.Node, path string) (float64, bool) {
	n = d.resolve(n, path)
	switch v := n.(type) {
	case nil, *ast.NullNode:
		return 0, false
	case *ast.IntegerNode:
		switch i := v.Value.(type) {
		case int64:
			return float64(i), true
		case uint64:
			return float64(i), true
		}
	case *ast.FloatNode:
		if !math.IsInf(v.Value, 0) && !math.IsNaN(v.Value) {
			return v.Value, true
		}
	case *ast.InfinityNode, *ast.NanNode:
		d.addAt(n, path, ErrType, ": got %s, want a finite number", describe(n))
		return 0, false
	}
	d.addAt(n, path, ErrType, ": got %s, want a number", describe(n))
	return 0, false
}

func (d *decoder) boolean(n ast.Node, path string) bool {
	n = d.resolve(n, path)
	switch v := n.(type) {
	case nil, *ast.NullNode:
		return false
	case *ast.BoolNode:
		return v.Value
	}
	d.addAt(n, path, ErrType, ": got %s, want true or false", describe(n))
	return false
}

// duration parses a positive duration such as "250ms".
func (d *decoder) duration(n ast.Node, path string) time.Duration {
	n = d.resolve(n, path)
	switch v := n.(type) {
	case nil, *ast.NullNode:
		return 0
	case *ast.StringNode:
		t, err := time.ParseDuration(v.Value)
		if err != nil {
			d.addAt(n, path, ErrType, `: got %s, want a duration such as "250ms", "2s" or "2h"`, describe(n))
			return 0
		}
		if t <= 0 {
			d.addAt(n, path, ErrRange, ": %s (want more than 0)", v.Value)
			return 0
		}
		return t
	case *ast.IntegerNode, *ast.FloatNode:
		d.addAt(n, path, ErrType, `: got %s, want a duration with a unit, such as "2s"`, describe(n))
		return 0
	}
	d.addAt(n, path, ErrType, `: got %s, want a duration such as "250ms", "2s" or "2h"`, describe(n))
	return 0
}

// oneOfValue decodes a string that must be one of want.
func (d *decoder) oneOfValue(n ast.Node, path string, want ...string) (string, bool) {
	s, ok := d.str(n, path)
	if !ok {
		return "", false
	}
	if !slices.Contains(want, s) {
		d.add(path, ErrUnknownValue, "%q (want %s)", s, oneOf(want))
		return s, false
	}
	return s, true
}
