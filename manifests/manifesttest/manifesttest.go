// Package manifesttest loads and parses manifests in tests, failing the
// test on an error, for the packages that test against a manifest of
// their own (the simulator, the capabilities, the binary's end-to-end
// tests). Like manifests, it imports no hardware module.
package manifesttest

import (
	"testing"

	"github.com/promcp/promcp-device/manifests"
)

// Load loads the manifest file. An error fails tb.
func Load(tb testing.TB, file string) *manifests.Manifest {
	tb.Helper()
	m, err := manifests.Load(file)
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

// Parse parses the manifest src, called name in its errors. An error
// fails tb.
func Parse(tb testing.TB, name, src string) *manifests.Manifest {
	tb.Helper()
	m, err := manifests.Parse(name, []byte(src))
	if err != nil {
		tb.Fatal(err)
	}
	return m
}
