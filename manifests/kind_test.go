package manifests

import (
	"os"
	"path/filepath"
	"testing"
)

// A site test names its fault scenario under "scenario:"; lint read such a
// site test as a fault scenario and refused its test:, steps: and start:
// keys. Every example is told by its content as what it is.
func TestKindOfExamples(t *testing.T) {
	cases := map[string]FileKind{
		"examples/site-tests/greenhouse-faults.yml": KindSiteTest, // names a scenario
		"examples/site-tests/irrigation.yml":        KindSiteTest, // names a scenario
		"examples/site-tests/greenhouse.yml":        KindSiteTest,
		"examples/greenhouse-faults.yml":            KindScenario,
		"examples/irrigation-faults.yml":            KindScenario,
		"examples/greenhouse.yml":                   KindManifest,
	}
	for path, want := range cases {
		data, err := os.ReadFile(filepath.FromSlash(path))
		if err != nil {
			t.Fatal(err)
		}
		if got := KindOf(data); got != want {
			t.Errorf("KindOf(%s) = %q, want %q", path, got, want)
		}
	}
}
