package sitetest

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/promcp"
)

// maxNodes bounds the nodes a site test may hold, so that a hostile file
// ends in an error instead of exhausting memory.
const maxNodes = 1 << 18

// dec walks a site test's YAML tree, collecting positioned problems as the
// manifest's decoder does (file:line:col field: message).
type dec struct {
	file  string
	errs  []*manifests.Error
	nodes int
}

func (d *dec) add(n ast.Node, field string, sentinel error, format string, args ...any) {
	err := sentinel
	if format != "" {
		err = fmt.Errorf("%w: "+format, append([]any{sentinel}, args...)...)
	}
	pos := manifests.NodePos(n)
	pos.File = d.file
	d.errs = append(d.errs, &manifests.Error{Pos: pos, Field: field, Err: err})
}

var syntaxPos = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\[(\d+):(\d+)\]\s*(.*)$`) })

// parseYAML parses data into its single document's body; a syntax error,
// or a panic of the parser, is reported at its position.
func (d *dec) parseYAML(data []byte) (root ast.Node) {
	defer func() {
		if r := recover(); r != nil {
			d.add(nil, "", manifests.ErrSyntax, "yaml parser: %v", r)
			root = nil
		}
	}()
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		msg := err.Error()
		if i := strings.IndexByte(msg, '\n'); i > 0 {
			msg = msg[:i]
		}
		p := manifests.Position{File: d.file, Line: 1, Column: 1}
		if m := syntaxPos().FindStringSubmatch(msg); m != nil {
			p.Line, _ = strconv.Atoi(m[1])
			p.Column, _ = strconv.Atoi(m[2])
			msg = m[3]
		}
		d.errs = append(d.errs, &manifests.Error{Pos: p, Err: fmt.Errorf("%w: %s", manifests.ErrSyntax, strings.TrimSpace(msg))})
		return nil
	}
	var docs []ast.Node
	for _, doc := range f.Docs {
		if doc != nil && doc.Body != nil {
			docs = append(docs, doc.Body)
		}
	}
	if len(docs) != 1 {
		d.add(nil, "", manifests.ErrSyntax, "want one YAML document, got %d", len(docs))
		return nil
	}
	return docs[0]
}

// unwrap looks through anchors, tags and comments; an alias is refused
// (a site test has no use for them, and they can expand without bound).
func (d *dec) unwrap(n ast.Node, field string) ast.Node {
	for range 16 {
		switch v := n.(type) {
		case *ast.AnchorNode:
			n = v.Value
		case *ast.TagNode:
			n = v.Value
		case *ast.CommentGroupNode:
			return nil
		case *ast.AliasNode:
			d.add(v, field, manifests.ErrNotAllowed, "aliases (*name) are not supported in site tests")
			return nil
		default:
			return n
		}
	}
	return n
}

// fields returns the mapping n by key, reporting keys outside known and
// duplicates; nil when n is not a mapping.
func (d *dec) fields(n ast.Node, field string, known ...string) map[string]ast.Node {
	n = d.unwrap(n, field)
	m, ok := n.(*ast.MappingNode)
	if !ok {
		if mv, ok2 := n.(*ast.MappingValueNode); ok2 {
			m, ok = &ast.MappingNode{Values: []*ast.MappingValueNode{mv}}, true
		}
	}
	if !ok {
		if n != nil {
			d.add(n, field, manifests.ErrType, "want a mapping, got %s", describe(n))
		}
		return nil
	}
	out := make(map[string]ast.Node, len(m.Values))
	for _, mv := range m.Values {
		if mv == nil || mv.Key == nil {
			continue
		}
		k := keyString(mv.Key)
		kf := join(field, k)
		switch {
		case known != nil && !contains(known, k):
			d.add(mv.Key, kf, manifests.ErrUnknownField, "want one of %s", strings.Join(known, ", "))
		case out[k] != nil:
			d.add(mv.Key, kf, manifests.ErrDuplicate, "key %q given twice", k)
		default:
			out[k] = mv.Value
			if mv.Value == nil || isNull(mv.Value) {
				out[k] = &ast.NullNode{BaseNode: &ast.BaseNode{}, Token: mv.Key.GetToken()}
			}
		}
	}
	return out
}

// optFields is fields for an optional mapping: nil, and no problem, when
// n is absent or null.
func (d *dec) optFields(n ast.Node, field string, known ...string) map[string]ast.Node {
	if isNull(n) {
		return nil
	}
	return d.fields(n, field, known...)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func keyString(k ast.MapKeyNode) string {
	if s, ok := k.(*ast.StringNode); ok {
		return s.Value
	}
	if tk := k.GetToken(); tk != nil {
		return tk.Value
	}
	return k.String()
}

func join(field, key string) string {
	if field == "" {
		return key
	}
	return field + "." + key
}

func isNull(n ast.Node) bool {
	_, ok := n.(*ast.NullNode)
	return n == nil || ok
}

func describe(n ast.Node) string {
	if n == nil {
		return "nothing"
	}
	switch v := n.(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.StringNode:
		return fmt.Sprintf("string %q", trunc(v.Value))
	case *ast.NullNode:
		return "null"
	}
	if tk := n.GetToken(); tk != nil {
		return fmt.Sprintf("%s %s", n.Type(), trunc(tk.Value))
	}
	return n.Type().String()
}

func trunc(s string) string {
	if len(s) > 40 {
		return s[:37] + "..."
	}
	return s
}

// str decodes a string (a plain scalar of another type counts as its text,
// as YAML authors expect of "1.0" versions or "on").
func (d *dec) str(n ast.Node, field string) (string, bool) {
	n = d.unwrap(n, field)
	switch v := n.(type) {
	case *ast.StringNode:
		return v.Value, true
	case *ast.LiteralNode:
		return v.Value.Value, true
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode:
		return v.GetToken().Value, true
	case nil, *ast.NullNode:
		return "", false
	}
	d.add(n, field, manifests.ErrType, "want a string, got %s", describe(n))
	return "", false
}

func (d *dec) boolean(n ast.Node, field string) (bool, bool) {
	n = d.unwrap(n, field)
	if b, ok := n.(*ast.BoolNode); ok {
		return b.Value, true
	}
	if !isNull(n) {
		d.add(n, field, manifests.ErrType, "want true or false, got %s", describe(n))
	}
	return false, false
}

func (d *dec) number(n ast.Node, field string) (float64, bool) {
	if isNull(n) {
		return 0, false
	}
	v, ok := d.value(n, field)
	if !ok {
		return 0, false
	}
	if f, ok := promcp.Number(v); ok && !math.IsNaN(f) && !math.IsInf(f, 0) {
		return f, true
	}
	d.add(n, field, manifests.ErrType, "want a number, got %s", describe(n))
	return 0, false
}

func (d *dec) seq(n ast.Node, field string) []ast.Node {
	n = d.unwrap(n, field)
	s, ok := n.(*ast.SequenceNode)
	if !ok {
		if n != nil {
			d.add(n, field, manifests.ErrType, "want a list, got %s", describe(n))
		}
		return nil
	}
	return s.Values
}

// value turns a node into the JSON-like value it stands for: a mapping
// into map[string]any, a list into []any, numbers into float64 (integers
// stay exact as float64 up to 2^53), null into nil.
func (d *dec) value(n ast.Node, field string) (any, bool) {
	d.nodes++
	if d.nodes > maxNodes {
		d.add(n, field, manifests.ErrRange, "more than %d YAML nodes", maxNodes)
		return nil, false
	}
	n = d.unwrap(n, field)
	switch v := n.(type) {
	case nil, *ast.NullNode:
		return nil, true
	case *ast.MappingNode, *ast.MappingValueNode:
		out := map[string]any{}
		for k, vn := range d.fields(v, field) {
			x, ok := d.value(vn, join(field, k))
			if !ok {
				return nil, false
			}
			out[k] = x
		}
		return out, true
	case *ast.SequenceNode:
		out := make([]any, 0, len(v.Values))
		for i, vn := range v.Values {
			x, ok := d.value(vn, field+"["+strconv.Itoa(i)+"]")
			if !ok {
				return nil, false
			}
			out = append(out, x)
		}
		return out, true
	case *ast.StringNode:
		return v.Value, true
	case *ast.LiteralNode:
		return v.Value.Value, true
	case *ast.BoolNode:
		return v.Value, true
	case *ast.IntegerNode, *ast.FloatNode:
		f, err := strconv.ParseFloat(strings.ReplaceAll(v.GetToken().Value, "_", ""), 64)
		if err != nil {
			if i, ok := v.(*ast.IntegerNode); ok {
				if x, ok := promcp.Number(i.Value); ok {
					return x, true
				}
			}
			d.add(n, field, manifests.ErrType, "number %s does not fit a float64", v.GetToken().Value)
			return nil, false
		}
		return f, true
	}
	d.add(n, field, manifests.ErrType, "unsupported YAML value %s", describe(n))
	return nil, false
}
