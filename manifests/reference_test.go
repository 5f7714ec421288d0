package manifests

import (
	"strings"
	"testing"
)

// TestDocTablesCoverTheDecoders: doc.go (go doc ./manifests, and the
// generated docs/manifest-reference.md) has a row for every key the
// manifest decoder accepts in each mapping it documents with a table, no
// row for a key it refuses, and a row of the model table for every model.
func TestDocTablesCoverTheDecoders(t *testing.T) {
	ref := Reference()
	tables := 0
	for _, n := range ref.Formats[0].Nodes {
		if n.Rows == nil {
			continue
		}
		tables++
		for _, k := range n.Keys {
			if _, ok := n.Rows[k]; !ok {
				t.Errorf("manifests/doc.go: the table of %q has no row for key %s, which the decoder accepts", n.Path, k)
			}
		}
		for k := range n.Rows {
			if !contains(n.Keys, k) {
				t.Errorf("manifests/doc.go: the table of %q has a row for key %s, which the decoder refuses", n.Path, k)
			}
		}
	}
	if tables < 20 {
		t.Errorf("doc.go's tables were found for %d mappings; want 20 or more (has its layout changed?)", tables)
	}
	for _, m := range ref.Models {
		if len(m.Channels) != 3 || m.Channels[1] == "" {
			t.Errorf("manifests/doc.go: the model table has no row (channels, value, writable) for model %s: %q", m.Name, m.Channels)
		}
		if len(m.Buses) == 0 {
			t.Errorf("model %s: no bus kind carries it", m.Name)
		}
	}
	kind := ref.Formats[0].Nodes[1].Rows["kind"]
	for _, k := range ref.BusKinds {
		if !strings.Contains(strings.Join(kind, " "), k) {
			t.Errorf("manifests/doc.go: the row of buses[].kind does not name bus kind %s", k)
		}
	}
}

func contains(ws []string, w string) bool {
	for _, x := range ws {
		if x == w {
			return true
		}
	}
	return false
}

// TestDocTablesParse: the table reader cuts aligned rows at the header's
// columns, overflowing ones at runs of spaces, joins continuation lines,
// and gives both keys of a shared row.
func TestDocTablesParse(t *testing.T) {
	src := "// A thing (things[]):\n//\n" +
		"//\tkey        type      default   constraint\n" +
		"//\tname       name      required  unique\n" +
		"//\tcert, key  string    none      both or neither\n" +
		"//\tlong       duration  3.5 chars long default  more\n" +
		"//\t                               continued\n" +
		"//\n// Prose.\n"
	got := docTables(src)["things[]"]
	want := map[string]string{
		"name": "name|required|unique", "cert": "string|none|both or neither", "key": "string|none|both or neither",
		"long": "duration|3.5 chars long default|more continued",
	}
	for k, w := range want {
		if g := strings.Join(got[k], "|"); g != w {
			t.Errorf("row %s = %q; want %q", k, g, w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("rows %v; want %d", got, len(want))
	}
}
