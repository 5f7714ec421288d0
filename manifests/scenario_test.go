package manifests

import (
	"os"
	"path/filepath"
	"testing"
)

// TestScenarioGolden parses every testdata/scenarios/<case>/scenario.yml
// against testdata/scenarios/bench.yml and compares the errors with
// want.err (empty for a valid scenario).
func TestScenarioGolden(t *testing.T) {
	m, err := Load(filepath.Join("testdata", "scenarios", "bench.yml"))
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join("testdata", "scenarios", "*", "scenario.yml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenario cases: %v", err)
	}
	for _, f := range files {
		dir := filepath.Dir(f)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if !IsScenario(data) {
				t.Errorf("IsScenario(%s) = false, want true", f)
			}
			sc, err := ParseScenario("scenario.yml", data, m)
			got := errorText(err)
			wantFile := filepath.Join(dir, "want.err")
			if *update {
				if err := os.WriteFile(wantFile, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, rerr := os.ReadFile(wantFile)
			if rerr != nil {
				t.Fatal(rerr)
			}
			if got != string(want) {
				t.Errorf("ParseScenario(%s) errors:\n%s\nwant:\n%s", f, got, want)
			}
			if (err == nil) != (sc != nil) {
				t.Errorf("ParseScenario(%s) = %v, %v; want exactly one of them nil", f, sc, err)
			}
			checkErrors(t, err)
		})
	}
}

func TestIsScenario(t *testing.T) {
	for _, tc := range []struct {
		data string
		want bool
	}{
		{"scenario: x\nfaults: []\n", true},
		{"version: 1\ngateway: g\n", false},
		{"- scenario\n", false},
		{"", false},
		{"{{{", false},
	} {
		if got := IsScenario([]byte(tc.data)); got != tc.want {
			t.Errorf("IsScenario(%q) = %t, want %t", tc.data, got, tc.want)
		}
	}
}
