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
		if IsCompanion(file) {
			continue
		}
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(base))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse("fuzz.yml", data)
		if (m == nil) == (err == nil) {
			t.Fatalf("Parse = %v, %v; want exactly one nil", m, err)
		}
		checkErrors(t, err)
		_, err2 := Parse("fuzz.yml", data)
		if errorText(err) != errorText(err2) {
			t.Fatalf("Parse is not deterministic:\n%v\nthen\n%v", err, err2)
		}
	})
}

// FuzzParseScenario checks the same properties for scenario files, parsed
// against the scenario bench manifest. Seeds are the scenario golden cases
// and the example scenario.
func FuzzParseScenario(f *testing.F) {
	m := mustLoad(f, "scenarios", "bench.yml")
	seeds, _ := filepath.Glob(filepath.Join("testdata", "scenarios", "*", "scenario.yml"))
	seeds = append(seeds, filepath.Join("examples", "greenhouse-faults.yml"))
	for _, file := range seeds {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := ParseScenario("fuzz.yml", data, m)
		if (sc == nil) == (err == nil) {
			t.Fatalf("ParseScenario = %v, %v; want exactly one nil", sc, err)
		}
		checkErrors(t, err)
		if _, err2 := ParseScenario("fuzz.yml", data, m); errorText(err) != errorText(err2) {
			t.Fatalf("ParseScenario is not deterministic:\n%v\nthen\n%v", err, err2)
		}
		IsScenario(data)
	})
}
