package manifests

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/ast"
)

// maxSteps bounds the nodes the decoder visits, so that aliases that expand
// exponentially ("billion laughs") end in an error instead of a hang.
const maxSteps = 1 << 20

// decoder turns the YAML tree into Manifest values. It reports type errors,
// unknown fields and local checks (a name's spelling, a number's range) as it
// goes, and remembers where every key was so that check can report the
// problems that span several keys at the right place.
type decoder struct {
	p       *problems
	root    ast.Node
	anchors map[string][]*ast.AnchorNode // by name, in document order
	pos     map[string]Position          // every key seen, by path
	given   map[string]bool              // keys with a non-null value, by path
	bad     map[string]bool              // paths already reported
	steps   int
	aborted bool
	// physmcp is set while a PhysMCP file is read: a key it has no way
	// to say (a JWT provider's keys) is noted, not required.
	physmcp bool
}

func newDecoder(p *problems, root ast.Node) *decoder {
	d := &decoder{
		p:       p,
		root:    root,
		anchors: make(map[string][]*ast.AnchorNode),
		pos:     make(map[string]Position),
		given:   make(map[string]bool),
		bad:     make(map[string]bool),
	}
	if root != nil {
		for _, n := range ast.Filter(ast.AnchorType, root) {
			if a, ok := n.(*ast.AnchorNode); ok && a.Name != nil {
				d.anchors[a.Name.String()] = append(d.anchors[a.Name.String()], a)
			}
		}
	}
	return d
}

// add reports a problem at the node of path (or its nearest ancestor seen).
func (d *decoder) add(path string, sentinel error, format string, args ...any) {
	d.bad[path] = true
	d.p.add(d.at(path), path, sentinel, format, args...)
}

// addAt reports a problem at n, naming path.
func (d *decoder) addAt(n ast.Node, path string, sentinel error, format string, args ...any) {
	d.bad[path] = true
	d.p.add(NodePos(n), path, sentinel, format, args...)
}

// at returns the position of path, or of its nearest ancestor that the
// decoder saw: a missing key is reported at the mapping that lacks it.
func (d *decoder) at(path string) Position {
	for path != "" {
		if p, ok := d.pos[path]; ok {
			return p
		}
		path = parent(path)
	}
	return NodePos(d.root)
}

// has reports whether path was given a non-null value.
func (d *decoder) has(path string) bool { return d.given[path] }

func parent(path string) string {
	i := strings.LastIndexAny(path, ".[")
	if i < 0 {
		return ""
	}
	return path[:i]
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// resolve looks through anchors, tags and aliases. It returns nil for an
// absent value, an undefined alias, or once the step budget is spent.
func (d *decoder) resolve(n ast.Node, path string) ast.Node {
	for range 64 {
		if n == nil || d.aborted {
			return nil
		}
		d.steps++
		if d.steps > maxSteps {
			d.aborted = true
			d.addAt(n, path, ErrRange, ": aliases expand to more than %d nodes", maxSteps)
			return nil
		}
		var wrapped bool
		if a, ok := n.(*ast.AliasNode); ok {
			n = d.alias(a, path)
		} else if n, wrapped = unwrap(n); !wrapped {
			return n
		}
	}
	d.addAt(n, path, ErrBadReference, "alias chain (an alias refers to itself)")
	return nil
}

// alias returns the value of the last anchor of the alias's name that
// precedes it.
func (d *decoder) alias(a *ast.AliasNode, path string) ast.Node {
	name := ""
	if a.Value != nil {
		name = a.Value.String()
	}
	off := offset(a)
	var found *ast.AnchorNode
	for _, an := range d.anchors[name] {
		if offset(an) < off {
			found = an
		}
	}
	if found == nil {
		d.addAt(a, path, ErrBadReference, "anchor %q (an alias needs an &%s earlier in the file)", name, name)
		return nil
	}
	if found.Value != nil && offset(found.Value) > off {
		// The alias sits inside its own anchor's value: a cycle.
		d.addAt(a, path, ErrBadReference, "anchor %q (an alias cannot refer to the value that contains it)", name)
		return nil
	}
	return found.Value
}

func offset(n ast.Node) int {
	if tk := n.GetToken(); tk != nil && tk.Position != nil {
		return tk.Position.Offset
	}
	return 0
}

func isNull(n ast.Node) bool {
	_, ok := n.(*ast.NullNode)
	return n == nil || ok
}

// describe names a node's type and value for "got ..." messages.
func describe(n ast.Node) string {
	text := func() string {
		s := ""
		if tk := n.GetToken(); tk != nil {
			s = tk.Value
		}
		if len(s) > 40 {
			s = s[:37] + "..."
		}
		return s
	}
	switch v := n.(type) {
	case *ast.MappingNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.StringNode:
		s := v.Value
		if len(s) > 40 {
			s = s[:37] + "..."
		}
		return fmt.Sprintf("string %q", s)
	case *ast.LiteralNode:
		return "a block string"
	case *ast.IntegerNode:
		return "integer " + text()
	case *ast.FloatNode, *ast.InfinityNode, *ast.NanNode:
		return "number " + text()
	case *ast.BoolNode:
		return "boolean " + text()
	case *ast.NullNode:
		return "null"
	}
	return n.Type().String()
}

// fields returns the values of a mapping by key, reporting keys outside
// known. It returns nil, false for an absent or null value and after a type
// error. Merge keys (<<: *anchor) are honoured; explicit keys win.
func (d *decoder) fields(n ast.Node, path string, known ...string) (map[string]ast.Node, bool) {
	m, ok := as[*ast.MappingNode](d, n, path, "a mapping")
	if !ok {
		return nil, false
	}
	out := make(map[string]ast.Node)
	d.collect(m, path, known, out, 0)
	return out, true
}

func (d *decoder) collect(m *ast.MappingNode, path string, known []string, out map[string]ast.Node, depth int) {
	var merges []ast.Node
	for _, mv := range m.Values {
		if mv == nil || mv.Key == nil {
			continue
		}
		if mv.Key.IsMergeKey() {
			merges = append(merges, mv.Value)
			continue
		}
		key := keyString(mv.Key)
		field := join(path, key)
		if key == "" {
			field = join(path, `""`) // an empty key still names a place
		}
		if !slices.Contains(known, key) {
			if hint := closest(key, known); hint != "" {
				d.addAt(mv.Key, field, ErrUnknownField, "(did you mean %q?)", hint)
			} else {
				d.addAt(mv.Key, field, ErrUnknownField, "(want %s)", oneOf(known))
			}
			continue
		}
		if _, dup := out[key]; dup {
			continue // an explicit key overrides a merged one
		}
		out[key] = mv.Value
		d.pos[field] = NodePos(mv.Value)
		if mv.Value == nil {
			d.pos[field] = NodePos(mv.Key)
		}
		if !isNull(d.peek(mv.Value)) {
			d.given[field] = true
		}
	}
	for _, mn := range merges {
		if depth > 8 {
			d.addAt(mn, path, ErrRange, ": merge keys nested more than 8 deep")
			return
		}
		src := d.resolve(mn, path)
		var maps []*ast.MappingNode
		switch v := src.(type) {
		case *ast.MappingNode:
			maps = append(maps, v)
		case *ast.SequenceNode:
			for _, it := range v.Values {
				if mm, ok := d.resolve(it, path).(*ast.MappingNode); ok {
					maps = append(maps, mm)
				} else if it != nil {
					d.addAt(it, join(path, "<<"), ErrType, ": got %s in a merge key, want a mapping", describe(it))
				}
			}
		case nil:
		default:
			d.addAt(mn, join(path, "<<"), ErrType, ": got %s in a merge key, want a mapping", describe(src))
		}
		for _, mm := range maps {
			d.collect(mm, path, known, out, depth+1)
		}
	}
}

// peek resolves n without reporting problems or spending steps, to tell a
// null from a value.
func (d *decoder) peek(n ast.Node) ast.Node {
	for range 64 {
		var wrapped bool
		if n, wrapped = unwrap(n); !wrapped {
			return n // an alias too: a value, or an error reported when it is decoded
		}
	}
	return nil
}

// unwrap returns the node an anchor or a tag wraps, or n itself and false.
func unwrap(n ast.Node) (ast.Node, bool) {
	switch v := n.(type) {
	case *ast.AnchorNode:
		return v.Value, true
	case *ast.TagNode:
		return v.Value, true
	}
	return n, false
}

func keyString(k ast.MapKeyNode) string {
	switch v := k.(type) {
	case *ast.StringNode:
		return v.Value
	case ast.ScalarNode:
		if tk := v.GetToken(); tk != nil {
			return tk.Value
		}
	}
	return k.String()
}

// entries returns the key/value pairs of a free-form mapping in order.
func (d *decoder) entries(n ast.Node, path string) []*ast.MappingValueNode {
	m, ok := as[*ast.MappingNode](d, n, path, "a mapping")
	if !ok {
		return nil
	}
	var out []*ast.MappingValueNode
	for _, mv := range m.Values {
		if mv == nil || mv.Key == nil {
			continue
		}
		if mv.Key.IsMergeKey() {
			d.addAt(mv.Key, path, ErrNotAllowed, "here: merge key (<<)")
			continue
		}
		out = append(out, mv)
		d.pos[join(path, keyString(mv.Key))] = NodePos(mv.Key)
	}
	return out
}

// seq returns the items of a list, recording their positions.
func (d *decoder) seq(n ast.Node, path string) []ast.Node {
	s, ok := as[*ast.SequenceNode](d, n, path, "a list")
	if !ok {
		return nil
	}
	for i, it := range s.Values {
		if it != nil {
			d.pos[index(path, i)] = NodePos(it)
		}
	}
	return s.Values
}

// as resolves n and returns it as a T, which want names ("a list"). It
// returns false for an absent or null value, and after reporting another.
func as[T ast.Node](d *decoder, n ast.Node, path, want string) (T, bool) {
	var zero T
	n = d.resolve(n, path)
	if isNull(n) {
		return zero, false
	}
	t, ok := n.(T)
	if !ok {
		d.addAt(n, path, ErrType, ": got %s, want %s", describe(n), want)
	}
	return t, ok
}
