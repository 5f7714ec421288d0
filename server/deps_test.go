package server_test

import (
	"os/exec"
	"strings"
	"testing"
)

// forbiddenDeps are the import path prefixes the proMCP library must not
// pull in: the hardware and storage modules (a developer writing their own
// server gets none of their init-time registration or cgo-free
// cross-compilation constraints), and the project's own manifest-driven
// layers, which build on server and not the other way round.
var forbiddenDeps = []string{
	"periph.io/",
	"github.com/goburrow/",
	"go.bug.st/serial",
	"go.etcd.io/bbolt",
	"github.com/promcp/promcp-device/capabilities",
	"github.com/promcp/promcp-device/drivers",
	"github.com/promcp/promcp-device/gateway",
	"github.com/promcp/promcp-device/manifests",
	"github.com/promcp/promcp-device/policy",
	"github.com/promcp/promcp-device/sim",
}

// TestLibraryHasNoHardwareDeps: `go list -deps` of the server package (the
// proMCP library) names no hardware, serial, Modbus or bbolt module and
// none of the gateway's packages.
func TestLibraryHasNoHardwareDeps(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go tool is not on PATH, so the dependency list cannot be read: " + err.Error())
	}
	out, err := exec.Command(gobin, "list", "-deps", ".").Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list -deps .: %v\n%s", err, stderr)
	}
	deps := strings.Fields(string(out))
	if len(deps) == 0 {
		t.Fatal("go list -deps . listed nothing")
	}
	for _, d := range deps {
		for _, f := range forbiddenDeps {
			if d == f || strings.HasPrefix(d, f) && (strings.HasSuffix(f, "/") || strings.HasPrefix(d[len(f):], "/")) {
				t.Errorf("server depends on %s (forbidden: %s)", d, f)
			}
		}
	}
}
