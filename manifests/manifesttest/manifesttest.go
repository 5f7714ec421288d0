// Package manifesttest loads and parses manifests and policies in tests,
// failing the test on an error, for the packages that test against a
// manifest of their own (the simulator and simtest, the capabilities, the
// gateway, the binary's end-to-end tests). Like manifests, it imports no
// hardware module.
package manifesttest

import (
	"testing"

	"github.com/promcp/promcp-device/manifests"
)

// Load loads the manifest file. An error fails tb.
func Load(tb testing.TB, file string) *manifests.Manifest {
	tb.Helper()
	return must(manifests.Load(file))(tb)
}

// Parse parses the manifest src, called name in its errors. An error
// fails tb.
func Parse(tb testing.TB, name, src string) *manifests.Manifest {
	tb.Helper()
	return must(manifests.Parse(name, []byte(src)))(tb)
}

// LoadPolicy loads the policy file for m. An error fails tb.
func LoadPolicy(tb testing.TB, file string, m *manifests.Manifest) *manifests.Policy {
	tb.Helper()
	return must(manifests.LoadPolicy(file, m))(tb)
}

// ParsePolicy parses the policy src for m, called name in its errors. An
// error fails tb.
func ParsePolicy(tb testing.TB, name, src string, m *manifests.Manifest) *manifests.Policy {
	tb.Helper()
	return must(manifests.ParsePolicy(name, []byte(src), m))(tb)
}

// must returns a loader's result, failing the test with its error:
// must(manifests.Load(file))(tb).
func must[T any](v T, err error) func(testing.TB) T {
	return func(tb testing.TB) T {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
		return v
	}
}
