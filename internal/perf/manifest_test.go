package perf_test

import (
	"github.com/promcp/promcp-device/internal/perf"
	"github.com/promcp/promcp-device/manifests"
	"testing"
)

func TestManifest(t *testing.T) {
	for _, n := range []int{1, 7, 10, 100, 1000} {
		m, err := manifests.Parse("gen.yml", []byte(perf.Manifest(n)))
		if err != nil {
			t.Fatal(n, err)
		}
		if len(m.Capabilities) != n {
			t.Fatalf("%d: %d caps", n, len(m.Capabilities))
		}
	}
}
