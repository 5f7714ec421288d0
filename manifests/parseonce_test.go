package manifests

import (
	"os"
	"testing"

	"github.com/goccy/go-yaml/ast"
)

// TestParseParsesOnce: Parse runs the YAML parser once per file. It did
// twice (once to tell a PhysMCP manifest by its top-level keys, once to
// decode), which showed in every start-up's profile. Allocations are
// deterministic: Parse allocates what one parse and one decode of the
// parsed tree do, not a second parse's worth more.
func TestParseParsesOnce(t *testing.T) {
	must := func(_ any, err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, file := range []string{"examples/greenhouse.yml", "examples/greenhouse.policy.yml"} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		m, err := Load("examples/greenhouse.yml")
		if err != nil {
			t.Fatal(err)
		}
		parseOnly := testing.AllocsPerRun(20, func() {
			if _, err := parseBytes(data); err != nil {
				t.Fatal(err)
			}
		})
		f, err := parseBytes(data)
		if err != nil {
			t.Fatal(err)
		}
		var whole, decodeOnly float64
		if file == "examples/greenhouse.yml" {
			whole = testing.AllocsPerRun(20, func() { must(Parse(file, data)) })
			decodeOnly = testing.AllocsPerRun(20, func() { must(parseParsed(file, f, nil, decodeManifest(file))) })
		} else {
			whole = testing.AllocsPerRun(20, func() { must(ParsePolicy(file, data, m)) })
			decodeOnly = testing.AllocsPerRun(20, func() {
				if _, err := parseParsed(file, f, nil, func(d *decoder, root ast.Node) *Policy { return d.policy(root, m) }); err != nil {
					t.Fatal(err)
				}
			})
		}
		t.Logf("%s: Parse %.0f allocations; the YAML parser alone %.0f, decoding the parsed tree %.0f", file, whole, parseOnly, decodeOnly)
		// A second parse would add parseOnly again; allow a tenth of it
		// for what Parse does besides (the PhysMCP key check's map).
		if whole > parseOnly+decodeOnly+parseOnly/10 {
			t.Errorf("%s: Parse allocates %.0f times, more than one parse (%.0f) and one decode (%.0f): is the YAML parsed twice?", file, whole, parseOnly, decodeOnly)
		}
	}
}
