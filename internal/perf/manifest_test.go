package perf_test

import (
	"testing"

	"github.com/promcp/promcp-device/internal/perf"
	"github.com/promcp/promcp-device/manifests"
)

// TestManifest: a generated manifest of any size, a multiple of five or
// not, passes the manifest checks and holds exactly that many
// capabilities.
func TestManifest(t *testing.T) {
	for _, n := range []int{1, 7, 10, 100, 1000} {
		m, err := manifests.Parse("gen.yml", []byte(perf.Manifest(n)))
		if err != nil {
			t.Fatalf("Manifest(%d): %v", n, err)
		}
		if len(m.Capabilities) != n {
			t.Fatalf("Manifest(%d) holds %d capabilities", n, len(m.Capabilities))
		}
	}
}
