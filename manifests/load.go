package manifests

import (
	"errors"
	"fmt"
	"os"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// Load reads and validates the manifest at path. See Parse for the errors.
func Load(path string) (*Manifest, error) {
	return loadFile(path, "manifest", Parse)
}

// loadFile reads the file at path, a what, and parses it with parse.
func loadFile[T any](path, what string, parse func(file string, data []byte) (*T, error)) (*T, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", what, err)
	}
	return parse(path, data)
}

// Parse decodes and validates a manifest held in data; file names it in
// positions and in Manifest.File.
//
// On success the Manifest has passed every check described in the package
// documentation, and Parse has filled Register.ByteOrder (big) and
// Register.Scale (1) where the manifest leaves them out. Every other
// "zero means default" field is left zero for consumers to resolve.
//
// On failure Parse returns a nil Manifest and the errors.Join of one *Error
// per problem, sorted by position: syntax errors alone when the YAML does not
// parse, otherwise every problem at once. Parse never panics.
//
// A PhysMCP manifest (see IsPhysMCP) is translated first; see physmcp.go.
func Parse(file string, data []byte) (*Manifest, error) {
	// The YAML is parsed once: the keys that tell a PhysMCP manifest are
	// read off the same tree the decoder then walks.
	f, err := parseBytes(data)
	if err == nil && isPhysMCPKeys(fileKeys(f)) {
		return parsePhysMCP(file, data)
	}
	return parseParsed(file, f, err, decodeManifest(file))
}

// decodeManifest decodes and checks a manifest's parsed document.
func decodeManifest(file string) func(d *decoder, root ast.Node) *Manifest {
	return func(d *decoder, root ast.Node) *Manifest {
		m := d.manifest(root)
		m.File = file
		if !d.aborted {
			check(m, d)
		}
		return m
	}
}

// parse decodes the single document in data with dec, and returns what
// dec made of it, or every problem reported (those of dec included).
func parse[T any](file string, data []byte, dec func(d *decoder, root ast.Node) *T) (*T, error) {
	f, err := parseBytes(data)
	return parseParsed(file, f, err, dec)
}

// parseParsed is parse on what parseBytes returned (f, or err).
func parseParsed[T any](file string, f *ast.File, err error, dec func(d *decoder, root ast.Node) *T) (*T, error) {
	p := &problems{file: file}
	root, ok := rootOf(p, f, err)
	if !ok {
		return nil, p.err()
	}
	v := dec(newDecoder(p, root), root)
	if err := p.err(); err != nil {
		return nil, err
	}
	return v, nil
}

// parseYAML returns the body of the single document in data (nil for an
// empty document), or reports why there is none.
func parseYAML(p *problems, data []byte) (root ast.Node, ok bool) {
	f, err := parseBytes(data)
	return rootOf(p, f, err)
}

// rootOf is parseYAML on what parseBytes returned (f, or err).
func rootOf(p *problems, f *ast.File, err error) (root ast.Node, ok bool) {
	if err != nil {
		pos := Position{Line: 1, Column: 1}
		msg := err.Error()
		var yerr yaml.Error
		if errors.As(err, &yerr) {
			msg = yerr.GetMessage()
			if tk := yerr.GetToken(); tk != nil && tk.Position != nil && tk.Position.Line > 0 {
				pos = Position{Line: tk.Position.Line, Column: max(tk.Position.Column, 1)}
			}
		}
		p.add(pos, "", ErrSyntax, ": %s", msg)
		return nil, false
	}
	var docs []*ast.DocumentNode
	for _, doc := range f.Docs {
		if doc != nil && doc.Body != nil {
			docs = append(docs, doc)
		}
	}
	switch len(docs) {
	case 0:
		return nil, true
	case 1:
		return docs[0].Body, true
	}
	p.add(NodePos(docs[1].Body), "", ErrSyntax, ": %d YAML documents (want one manifest per file)", len(docs))
	return nil, false
}

// parseBytes runs the YAML parser. The parser is a library: should it panic
// on some input, the panic becomes a syntax error rather than a crash of the
// caller, because Parse promises never to panic.
func parseBytes(data []byte) (f *ast.File, err error) {
	defer func() {
		if r := recover(); r != nil {
			f, err = nil, fmt.Errorf("yaml parser: %v", r)
		}
	}()
	return parser.ParseBytes(data, 0)
}

// NodePos is where a YAML node starts, the place a problem with it is
// reported at: for a block mapping its first key (the parser's own token
// for it is the first ':'); line 1, column 1 when the node has none. The
// File is left empty. Other decoders of the project's YAML files (site
// tests) use it to report as a manifest does.
func NodePos(n ast.Node) Position {
	if n == nil {
		return Position{Line: 1, Column: 1}
	}
	if m, ok := n.(*ast.MappingNode); ok && !m.IsFlowStyle && len(m.Values) > 0 && m.Values[0].Key != nil {
		n = m.Values[0].Key
	}
	if mv, ok := n.(*ast.MappingValueNode); ok && mv.Key != nil {
		n = mv.Key
	}
	tk := n.GetToken()
	if tk == nil || tk.Position == nil || tk.Position.Line < 1 {
		return Position{Line: 1, Column: 1}
	}
	return Position{Line: tk.Position.Line, Column: max(tk.Position.Column, 1)}
}
