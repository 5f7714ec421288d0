package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// scan --sim on irrigation.yml (an MCP23017, an INA219 and an ADS1115 on
// I2C, two DS18B20s on 1-Wire) finds and identifies each chip at its
// address, writes a manifest skeleton that lint passes without a warning,
// and serve --sim serves it: an MCP client over stdio reads the INA219's
// bus voltage (the skeleton has no sim values: the simulator's default
// 12 V) and a DS18B20's temperature, and finds no do_* tool.
func TestScanSimIrrigation(t *testing.T) {
	out := filepath.Join(t.TempDir(), "found.yml")
	stdout, stderr, code := runCLI(t, "scan", "--sim", "--manifest", irrigation, "--identify", "-o", out)
	if code != 0 {
		t.Fatalf("scan: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, want := range []string{
		"i2c i2c1: 3 answered at 0x08..0x77",
		"0x20: mcp23017: a 22-byte read returns different registers",
		"0x40: ina219: configuration register 0x399F",
		"0x48: ads1115: configuration register 0x8583",
		"1-Wire w1: 2 devices",
		"28-3c01d607d2e1: ds18b20",
		"28-0316a2795aff: ds18b20",
		"sim GPIO17: in use by flow_meter",
		"wrote " + out + ": 5 devices, 26 capabilities",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("scan output lacks %q:\n%s", want, stdout)
		}
	}
	lint, _, code := runCLI(t, "lint", "--strict", out)
	if code != 0 || !strings.Contains(lint, "ok: gateway irrigation-scan, 2 buses, 5 devices, 27 tools (26 read_*, 0 do_*, can_do)") || strings.Contains(lint, "warning") {
		t.Fatalf("lint --strict of the skeleton: exit %d\n%s", code, lint)
	}
	s := stdioSession(t, protocols[0], "--manifest", out)
	if r, isErr := s.call("read_ina219_40_bus_voltage", map[string]any{}); isErr || r["quality"] != "good" || r["value"] != 12.0 || r["unit"] != "V" {
		t.Errorf("read_ina219_40_bus_voltage = %v, want a good 12 V (a simulated INA219 the manifest gives no values)", r)
	}
	if r, isErr := s.call("read_ds18b20_0316a2795aff_temperature", map[string]any{}); isErr || r["quality"] != "good" || r["unit"] != "°C" {
		t.Errorf("read_ds18b20_0316a2795aff_temperature = %v, want a good °C reading", r)
	}
	for _, tool := range s.tools {
		if strings.HasPrefix(tool.Name, "do_") {
			t.Errorf("the skeleton serves %s: a scan enables no action", tool.Name)
		}
	}
}

// An SHT3x does not acknowledge a bare read: the read-only scan of
// greenhouse.yml's bus finds nothing (and writes no skeleton), and
// --identify finds both by their serial numbers, into a skeleton that
// lints and serves.
func TestScanSimSHT3xNeedsIdentify(t *testing.T) {
	out := filepath.Join(t.TempDir(), "found.yml")
	stdout, stderr, code := runCLI(t, "scan", "--sim", "--manifest", greenhouse, "--i2c", "i2c1", "-o", out)
	if code != 1 || !strings.Contains(stdout, "i2c i2c1: 0 answered") || !strings.Contains(stdout, "--identify finds one at 0x44..0x46 or 0x62") ||
		!strings.Contains(stderr, "not written: no supported device was identified") {
		t.Fatalf("read-only scan: exit %d\n%s%s", code, stdout, stderr)
	}
	stdout, stderr, code = runCLI(t, "scan", "--sim", "--manifest", greenhouse, "--i2c", "i2c1", "--identify", "-o", out)
	if code != 0 || !strings.Contains(stdout, "0x44: sht3x: serial number 0x") || !strings.Contains(stdout, "0x45: sht3x: serial number 0x") {
		t.Fatalf("scan --identify: exit %d\n%s%s", code, stdout, stderr)
	}
	if lint, _, code := runCLI(t, "lint", "--strict", out); code != 0 {
		t.Fatalf("lint --strict of the skeleton: exit %d\n%s", code, lint)
	}
	s := stdioSession(t, protocols[0], "--manifest", out)
	if r, isErr := s.call("read_sht3x_44_humidity", map[string]any{}); isErr || r["quality"] != "good" || r["unit"] != "%" {
		t.Errorf("read_sht3x_44_humidity = %v, want a good %% reading", r)
	}
}

// Errors name what failed: a bus that does not open, a bus the manifest
// does not have, and flags that do not go together.
func TestScanHWErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--i2c", "nosuch"}, 1, `promcp-device scan: i2c i2cnosuch: i2c bus "nosuch": cannot open`},
		{[]string{"--sim", "--manifest", greenhouse, "--i2c", "i2c9"}, 1, `greenhouse.yml: no i2c bus named "i2c9"`},
		{[]string{"--sim"}, 2, "--sim and --manifest go together"},
		{[]string{"--identify"}, 2, "say what to scan"},
		{[]string{"--i2c", "1", "--tcp", "127.0.0.1:1"}, 2, "not both"},
	} {
		_, stderr, code := runCLI(t, append([]string{"scan"}, tc.args...)...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("scan %v: exit %d, %q; want exit %d and %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
}

// scan --onewire on the host reads the kernel's files as they are (here a
// directory laid out as /sys/bus/w1/devices): a DS18B20 becomes a device
// of the skeleton, another family a comment, and the skeleton lints.
func TestScanOneWireFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "w1_bus_master1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "w1_bus_master1", "w1_master_slaves"), []byte("28-000005e2fdc3\n10-000802b4c4a5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "found.yml")
	stdout, stderr, code := runCLI(t, "scan", "--onewire", "--w1-dir", dir, "-o", out)
	if code != 0 || !strings.Contains(stdout, "1-Wire w1: 2 devices\n  28-000005e2fdc3: ds18b20\n  10-000802b4c4a5: unsupported family 10\n") ||
		!strings.Contains(stdout, "wrote "+out+": 1 device, 1 capability") {
		t.Fatalf("scan --onewire: exit %d\n%s%s", code, stdout, stderr)
	}
	sk := string(readFile(t, out))
	if !strings.Contains(sk, "#   not added: 1-Wire w1 10-000802b4c4a5: unsupported family") || !strings.Contains(sk, "rom: 28-000005e2fdc3") {
		t.Errorf("skeleton:\n%s", sk)
	}
	if lint, _, code := runCLI(t, "lint", "--strict", out); code != 0 {
		t.Fatalf("lint --strict of the skeleton: exit %d\n%s", code, lint)
	}
	_, stderr, code = runCLI(t, "scan", "--onewire", "--w1-dir", filepath.Join(dir, "none"))
	if code != 1 || !strings.Contains(stderr, "1-Wire "+filepath.Join(dir, "none")) || !strings.Contains(stderr, "w1-gpio overlay") {
		t.Errorf("scan of a missing w1 dir: exit %d, %q", code, stderr)
	}
}

// scan --sim on pi-climate.yml finds its three I2C chips as the real ones
// are found: the BH1750 answers a read (and is told from an expander at
// 0x23 by its 2-byte register), the SHT4x and SCD4x only their queries
// with --identify. The skeleton lints and serves their readings.
func TestScanSimPiClimate(t *testing.T) {
	out := filepath.Join(t.TempDir(), "found.yml")
	stdout, stderr, code := runCLI(t, "scan", "--sim", "--manifest", "../../manifests/examples/pi-climate.yml", "--i2c", "i2c1", "--identify", "-o", out)
	if code != 0 {
		t.Fatalf("scan: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, want := range []string{
		"i2c i2c1: 3 answered at 0x08..0x77",
		"0x23: bh1750: a 22-byte read returns 2 bytes",
		"0x44: sht4x: serial number 0x",
		"0x62: scd4x: data-ready status 0x",
		"wrote " + out + ": 3 devices, 6 capabilities",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("scan output lacks %q:\n%s", want, stdout)
		}
	}
	if lint, _, code := runCLI(t, "lint", "--strict", out); code != 0 || strings.Contains(lint, "warning") {
		t.Fatalf("lint --strict of the skeleton: exit %d\n%s", code, lint)
	}
	s := stdioSession(t, protocols[0], "--manifest", out)
	for _, c := range []struct{ tool, unit string }{{"read_sht4x_44_humidity", "%"}, {"read_scd4x_62_co2", "ppm"}, {"read_bh1750_23_illuminance", "lx"}} {
		if r, isErr := s.call(c.tool, map[string]any{}); isErr || r["quality"] != "good" || r["unit"] != c.unit {
			t.Errorf("%s = %v, want a good reading in %s", c.tool, r, c.unit)
		}
	}
}
