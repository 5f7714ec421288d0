package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestZonesLoadWithoutSystemZoneData runs the binary where no zone data
// can be found outside it: ZONEINFO and GOROOT point at an empty directory
// and, in a private mount namespace, so does /usr/share/zoneinfo. A policy
// in Australia/Sydney must still load, as on a Pi image without tzdata.
func TestZonesLoadWithoutSystemZoneData(t *testing.T) {
	dir := t.TempDir()
	empty := t.TempDir()
	for _, f := range []string{"greenhouse.yml", "greenhouse.policy.yml"} {
		data := readFile(t, filepath.Join("../../manifests/examples", f))
		if f == "greenhouse.policy.yml" {
			if !strings.Contains(string(data), "timezone: Europe/Amsterdam") {
				t.Fatal("the greenhouse policy no longer names Europe/Amsterdam; update this test")
			}
			data = []byte(strings.Replace(string(data), "timezone: Europe/Amsterdam", "timezone: Australia/Sydney", 1))
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	manifest := filepath.Join(dir, "greenhouse.yml")
	env := append(os.Environ(), "ZONEINFO="+empty, "GOROOT="+empty)

	var cmd *exec.Cmd
	const system = "/usr/share/zoneinfo"
	for _, other := range []string{"/usr/share/lib/zoneinfo", "/usr/lib/locale/TZ", "/etc/zoneinfo"} {
		if _, err := os.Stat(other); err == nil {
			t.Skipf("%s exists too; this test hides only %s", other, system)
		}
	}
	if _, err := os.Stat(system); err != nil {
		cmd = command(t, binary, "lint", manifest) // nothing to hide
	} else {
		// Hide the system's zone data in a private mount namespace, and
		// check that it is hidden before trusting the result.
		hide := `mount --bind "$1" ` + system + ` && test ! -e ` + system + `/Australia/Sydney`
		probe := command(t, "unshare", "--mount", "sh", "-c", hide, "sh", empty)
		if out, err := probe.CombinedOutput(); err != nil {
			t.Skipf("cannot hide %s in a private mount namespace (needs root or user namespaces and util-linux unshare): %v: %s",
				system, err, out)
		}
		cmd = command(t, "unshare", "--mount", "sh", "-c", hide+` && exec "$2" lint "$3"`, "sh", empty, binary, manifest)
	}
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "greenhouse.policy.yml: ok") {
		t.Fatalf("lint with no zone data outside the binary: %v\n%s", err, out)
	}
}

// TestBinaryEmbedsZoneData checks, wherever the test runs, that the binary
// links time/tzdata.
func TestBinaryEmbedsZoneData(t *testing.T) {
	out, err := command(t, "go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains("\n"+string(out), "\ntime/tzdata\n") {
		t.Fatal("the binary does not import time/tzdata: zones fail to load on systems without zoneinfo")
	}
}
