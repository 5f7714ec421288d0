package driverconf

import (
	"go/build"
	"strings"
	"testing"
)

const module = "github.com/promcp/promcp-device/"

// importsWithin returns every import of pkg and of the module's packages it
// reaches (tests excluded), as go list -deps would, stopping at the module's
// edge: outside packages cannot import the module back.
func importsWithin(t *testing.T, pkg string) map[string]bool {
	t.Helper()
	seen := map[string]bool{}
	var walk func(string)
	walk = func(path string) {
		p, err := build.Import(path, ".", 0)
		if err != nil {
			t.Fatalf("import %s: %v", path, err)
		}
		for _, imp := range p.Imports {
			if seen[imp] {
				continue
			}
			seen[imp] = true
			if strings.HasPrefix(imp, module) {
				walk(imp)
			}
		}
	}
	walk(pkg)
	return seen
}

// Drivers own their configuration: none depends on the manifest schema, and
// the package of error classes that every package imports does not pull in
// periph's host drivers (their init-time registration stays in drivers/host).
func TestDriversStayApartFromManifestsAndHost(t *testing.T) {
	for _, d := range []string{"drivers", "drivers/i2c", "drivers/i2c/i2cconf", "drivers/gpio", "drivers/modbus", "drivers/modbus/modbusconf", "drivers/serial"} {
		deps := importsWithin(t, module+d)
		if deps[module+"manifests"] {
			t.Errorf("%s imports manifests", d)
		}
		for dep := range deps {
			if strings.HasPrefix(dep, "periph.io/x/host") {
				t.Errorf("%s imports %s", d, dep)
			}
		}
	}
}

// The manifest schema compiles into the drivers' configuration packages
// (drivers/i2c/i2cconf, drivers/modbus/modbusconf), which stay free of
// hardware modules, and imports no driver itself, so that loading or
// checking a manifest (promcp-device check, the fleet hub) pulls in no
// periph, Modbus or serial port library.
func TestManifestsStayHardwareFree(t *testing.T) {
	for dep := range importsWithin(t, module+"manifests") {
		for _, hw := range []string{"periph.io/", "github.com/goburrow/", "go.bug.st/serial"} {
			if strings.HasPrefix(dep, hw) {
				t.Errorf("manifests imports %s", dep)
			}
		}
		if strings.HasPrefix(dep, module+"drivers") && !strings.HasSuffix(dep, "conf") {
			t.Errorf("manifests imports %s (only the drivers' configuration packages may be)", dep)
		}
	}
}
