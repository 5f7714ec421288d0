package manifests_test

import (
	"fmt"
	"testing"

	"github.com/promcp/promcp-device/internal/perf"
	"github.com/promcp/promcp-device/manifests"
)

// BenchmarkLoad: parsing and checking a manifest, the greenhouse example
// and generated ones of 100 and 1,000 capabilities (startup and lint).
//
//	go test ./manifests -run '^$' -bench Load -benchmem
func BenchmarkLoad(b *testing.B) {
	b.Run("greenhouse", func(b *testing.B) {
		for b.Loop() {
			if _, err := manifests.Load("examples/greenhouse.yml"); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, n := range []int{100, 1000} {
		src := []byte(perf.Manifest(n))
		b.Run(fmt.Sprintf("caps=%d", n), func(b *testing.B) {
			if testing.Short() && n > 200 {
				b.Skip("-short: sizes above 200 capabilities run without -short")
			}
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				if _, err := manifests.Parse("perf.yml", src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
