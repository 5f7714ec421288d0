package manifests

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse checks that Parse never panics, that every problem it reports is
// a positioned *Error with a field (or a syntax error), sorted, and that
// Parse is deterministic. Seeds are the golden cases and the examples.
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "*", "manifest.yml"))
	examples, _ := filepath.Glob(filepath.Join("examples", "*.yml"))
	for _, file := range append(seeds, examples...) {
		if !IsCompanion(file) {
			seedFiles(f, file)
		}
	}
	f.Add([]byte(base))
	fuzzParse(f, "Parse", func(data []byte) (bool, error) {
		m, err := Parse("fuzz.yml", data)
		return m != nil, err
	})
}

// FuzzParseScenario checks the same properties for scenario files, parsed
// against the scenario bench manifest. Seeds are the scenario golden cases
// and the example scenario.
func FuzzParseScenario(f *testing.F) {
	m := mustLoad(f, "scenarios", "bench.yml")
	seeds, _ := filepath.Glob(filepath.Join("testdata", "scenarios", "*", "scenario.yml"))
	seedFiles(f, append(seeds, filepath.Join("examples", "greenhouse-faults.yml"))...)
	fuzzParse(f, "ParseScenario", func(data []byte) (bool, error) {
		IsScenario(data)
		sc, err := ParseScenario("fuzz.yml", data, m)
		return sc != nil, err
	})
}

// seedFiles adds the files to f's seed corpus.
func seedFiles(f *testing.F, files ...string) {
	f.Helper()
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
}

// fuzzParse fuzzes parse, the parser of one of the formats (name; ok when
// it made a value): it never panics, it returns a value or an error, every
// problem has the shape checkErrors checks, and parsing the same input again
// gives the same errors.
func fuzzParse(f *testing.F, name string, parse func(data []byte) (bool, error)) {
	f.Fuzz(func(t *testing.T, data []byte) {
		ok, err := parse(data)
		if ok == (err != nil) {
			t.Fatalf("%s = a value %t, error %v; want exactly one of them", name, ok, err)
		}
		checkErrors(t, err)
		if _, err2 := parse(data); errorText(err) != errorText(err2) {
			t.Fatalf("%s is not deterministic:\n%v\nthen\n%v", name, err, err2)
		}
	})
}
