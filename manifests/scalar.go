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
		if i, ok := integerAs[int64](v); ok {
			return i, true
		}
		d.addAt(n, path, ErrRange, ": %s is too large", describe(n))
		return 0, false
	}
	d.addAt(n, path, ErrType, ": got %s, want an integer", describe(n))
	return 0, false
}

// integerAs is the value of an integer node as a T. The parser holds an
// int64 or, beyond math.MaxInt64, a uint64: ok is false for one that T
// cannot hold (an int64 that the conversion would make negative).
func integerAs[T int64 | float64](v *ast.IntegerNode) (T, bool) {
	switch i := v.Value.(type) {
	case int64:
		return T(i), true
	case uint64:
		if t := T(i); t >= 0 {
			return t, true
		}
	}
	return 0, false
}

func (d *decoder) number(n ast.Node, path string) (float64, bool) {
	n = d.resolve(n, path)
	switch v := n.(type) {
	case nil, *ast.NullNode:
		return 0, false
	case *ast.IntegerNode:
		if f, ok := integerAs[float64](v); ok {
			return f, true
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

// obj is a decoded mapping: its values by key, at path. Its methods decode
// one key each, reporting problems at the key's path.
type obj struct {
	d    *decoder
	f    map[string]ast.Node // nil for an absent or broken mapping
	path string
}

// obj decodes the mapping at n with the keys known.
func (d *decoder) obj(n ast.Node, path string, known []string) (obj, bool) {
	f, ok := d.fields(n, path, known...)
	return obj{d, f, path}, ok
}

// item decodes a list item, a mapping: a null item is reported, as it would
// otherwise vanish.
func (d *decoder) item(n ast.Node, path string, known []string) (obj, bool) {
	o, ok := d.obj(n, path, known)
	if !ok && (n == nil || isNull(d.peek(n))) {
		d.add(path, ErrMissing, "value (want a mapping)")
	}
	return o, ok
}

// sub decodes the mapping at key k.
func (o obj) sub(k string, known []string) (obj, bool) { return o.d.obj(o.f[k], o.at(k), known) }

// list decodes the list at key k, of mappings with the keys known, each
// into a T by fill.
func list[T any](o obj, k string, known []string, fill func(o obj, v *T)) []T {
	var out []T
	p := o.at(k)
	for i, n := range o.d.seq(o.f[k], p) {
		var v T
		if item, ok := o.d.item(n, index(p, i), known); ok {
			fill(item, &v)
		}
		out = append(out, v)
	}
	return out
}

// opt decodes the optional mapping at key k, of the keys known, into a new
// T by fill; nil when k is absent, null or no mapping.
func opt[T any](o obj, k string, known []string, fill func(o obj, v *T)) *T {
	sub, ok := o.sub(k, known)
	if !ok {
		return nil
	}
	v := new(T)
	fill(sub, v)
	return v
}

// document returns the top-level keys of a file's single document, which
// must be a mapping of known keys (example names two of them for the error
// message). An empty file is an empty mapping: it lacks everything. It
// reports false, after reporting why, when the document is no mapping.
func (d *decoder) document(root ast.Node, known []string, example string) (obj, bool) {
	if a, ok := d.peek(root).(*ast.AliasNode); ok {
		d.addAt(a, "", ErrSyntax, ": the document is an alias (want a mapping of keys such as %s)", example)
		return obj{d: d}, false
	}
	switch n := d.resolve(root, "").(type) {
	case nil, *ast.NullNode:
		return obj{d, map[string]ast.Node{}, ""}, true
	case *ast.MappingNode:
		return d.obj(n, "", known)
	default:
		d.addAt(n, "", ErrSyntax, ": the document is %s (want a mapping of keys such as %s)", describe(n), example)
		return obj{d: d}, false
	}
}

// version decodes the format version, which must be 1.
func (o obj) version() int {
	v, ok := o.integer("version")
	if ok && v != 1 {
		o.add("version", ErrUnknownValue, "%d (want 1)", v)
	}
	o.require("version", "1")
	return int(v)
}

func (o obj) at(k string) string { return join(o.path, k) }

// has reports whether key k was given a non-null value.
func (o obj) has(k string) bool { return o.d.has(o.at(k)) }

func (o obj) add(k string, sentinel error, format string, args ...any) {
	o.d.add(o.at(k), sentinel, format, args...)
}

// requiredScalar decodes the boolean, string or number at key k,
// reporting it missing (want says what it is) when the mapping lacks it.
func (o obj) requiredScalar(k, want string) any {
	o.require(k, want)
	if !o.has(k) {
		return nil
	}
	return o.scalar(k)
}

// require reports key k missing when the mapping lacks it.
func (o obj) require(k, want string) {
	if o.f != nil && !o.has(k) {
		o.add(k, ErrMissing, "%s (want %s)", k, want)
	}
}

func (o obj) strOK(k string) (string, bool) { return o.d.str(o.f[k], o.at(k)) }

func (o obj) str(k string) string {
	s, _ := o.strOK(k)
	return s
}

// requiredStr decodes a string that must be present and not empty.
func (o obj) requiredStr(k, want string) string {
	s, ok := o.strOK(k)
	if o.f != nil && (!o.has(k) || ok && s == "") {
		o.add(k, ErrMissing, "%s (want %s)", k, want)
	}
	return s
}

// name decodes the required lower_snake_case name.
func (o obj) name() string {
	s, _ := o.d.name(o.f["name"], o.at("name"))
	o.require("name", "a lower_snake_case name")
	return s
}

func (o obj) strs(k string) []string         { return o.d.strs(o.f[k], o.at(k)) }
func (o obj) scalar(k string) any            { return o.d.scalar(o.f[k], o.at(k)) }
func (o obj) boolean(k string) bool          { return o.d.boolean(o.f[k], o.at(k)) }
func (o obj) dur(k string) time.Duration     { return o.d.duration(o.f[k], o.at(k)) }
func (o obj) integer(k string) (int64, bool) { return o.d.integer(o.f[k], o.at(k)) }
func (o obj) numOK(k string) (float64, bool) { return o.d.number(o.f[k], o.at(k)) }
func (o obj) num(k string) float64           { v, _ := o.numOK(k); return v }

// numPtr decodes an optional number: nil when absent or broken.
func (o obj) numPtr(k string) *float64 {
	if v, ok := o.numOK(k); ok {
		return &v
	}
	return nil
}

// enum decodes a word of words into dst and reports whether it is one. A
// word outside words is reported and still stored (the checks skip it); a
// key that is absent, null or not a string leaves dst as it was.
func enum[T ~string](o obj, k string, dst *T, words []string, required bool) bool {
	s, known := o.d.oneOfValue(o.f[k], o.at(k), words...)
	if known || s != "" {
		*dst = T(s)
	}
	if required {
		o.require(k, oneOf(words))
	}
	return known
}

// intIn decodes an integer in lo..hi into dst. One outside is reported with
// format, given the value (as a hexInt) and args, and leaves dst as it was.
func intIn[T ~int | ~uint8 | ~uint16](o obj, k string, dst *T, lo, hi int64, format string, args ...any) {
	v, ok := o.integer(k)
	switch {
	case !ok:
	case v < lo || v > hi:
		o.add(k, ErrRange, format, append([]any{hexInt(v)}, args...)...)
	default:
		*dst = T(v)
	}
}

// numIf decodes a number that valid accepts into dst. One it refuses is
// reported with format, given the value, and leaves dst as it was.
func numIf(o obj, k string, dst *float64, valid func(float64) bool, format string) {
	v, ok := o.numOK(k)
	switch {
	case !ok:
	case !valid(v):
		o.add(k, ErrRange, format, v)
	default:
		*dst = v
	}
}
