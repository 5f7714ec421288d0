package main

import (
	be "encoding/binary"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	mb "github.com/goburrow/modbus"
)

// startSim runs `sim --modbus-tcp 127.0.0.1:0` on the greenhouse and returns
// the address it serves.
func startSim(t *testing.T) string {
	t.Helper()
	return startPrinting(t, `on (127\.0\.0\.1:\d+) \(Modbus TCP\)`, "sim", "--manifest", greenhouse, "--modbus-tcp", "127.0.0.1:0")
}

// modbusGateway writes the manifest of a gateway (no --sim) whose Modbus
// TCP device is at addr (testdata/gateway-modbus-tcp.yml) and returns its
// path.
func modbusGateway(t *testing.T, addr string) string {
	t.Helper()
	tmpl := readFile(t, "testdata/gateway-modbus-tcp.yml")
	manifest := filepath.Join(t.TempDir(), "gateway.yml")
	if err := os.WriteFile(manifest, []byte(strings.ReplaceAll(string(tmpl), "SIM_ADDRESS", addr)), 0o644); err != nil {
		t.Fatal(err)
	}
	return manifest
}

// TestGatewayOnSimulatedNetworkDevices: a gateway without --sim, pointed at
// `sim --modbus-tcp`, serves the values a raw Modbus client reads there,
// and its writes land in the simulated device.
func TestGatewayOnSimulatedNetworkDevices(t *testing.T) {
	addr := startSim(t)
	manifest := modbusGateway(t, addr)
	s := commandSession(t, protocols[1], binary, []string{"serve", "--manifest", manifest, "--allow-no-policy", "--log-level", "warn"})

	raw := func(unit byte) mb.Client {
		h := mb.NewTCPClientHandler(addr)
		h.SlaveId = unit
		t.Cleanup(func() { h.Close() })
		return mb.NewClient(h)
	}
	meter, vfd := raw(2), raw(1)

	got, isErr := s.call("read_site_power", map[string]any{})
	b, err := meter.ReadInputRegisters(0, 2)
	if err != nil {
		t.Fatal(err)
	}
	want := float64(math.Float32frombits(uint32(be.BigEndian.Uint16(b[2:]))<<16 | uint32(be.BigEndian.Uint16(b))))
	if isErr || got["quality"] != "good" || got["value"] != want {
		t.Fatalf("gateway read_site_power = %v, raw Modbus client reads %v W (CDAB)", got, want)
	}

	if r, _ := s.call("do_set_fan_speed", map[string]any{"value": 30}); r["status"] != "success" {
		t.Fatalf("do_set_fan_speed(30) = %v", r)
	}
	b, err = vfd.ReadHoldingRegisters(0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if v := be.BigEndian.Uint16(b); v != 300 {
		t.Fatalf("after do_set_fan_speed(30), the VFD's holding register 0 = %d, want 300 (0.1 Hz)", v)
	}
	if _, err := vfd.WriteSingleRegister(0, 125); err != nil {
		t.Fatal(err)
	}
	if r, _ := s.call("read_fan_speed_setpoint", map[string]any{"max_age_ms": 0}); r["value"] != 12.5 {
		t.Fatalf("after a raw write of 125, read_fan_speed_setpoint = %v, want 12.5", r["value"])
	}

	// mbpoll, a master nobody here wrote, agrees (references are 0-based
	// with -0; float words come low word first by default, as CDAB).
	if _, err := exec.LookPath("mbpoll"); err != nil {
		t.Skip("mbpoll is not installed (apt-get install mbpoll; scripts/test installs it)")
	}
	host, port, _ := strings.Cut(addr, ":")
	out, err := command(t, "mbpoll", "-m", "tcp", "-p", port, "-a", "1", "-t", "4", "-0", "-r", "0", "-c", "1", "-1", host).CombinedOutput()
	if err != nil || !regexp.MustCompile(`\[0\]:\s+125\b`).Match(out) {
		t.Fatalf("mbpoll holding 0 of unit 1: %v\n%s\nwant 125", err, out)
	}
}

// TestScanAndPortsCLI: scan finds the simulated units and their readable
// ranges without writing; ports lists what the machine has.
func TestScanAndPortsCLI(t *testing.T) {
	addr := startSim(t)
	out, stderr, code := runCLI(t, "scan", "--tcp", addr, "--units", "1-3", "--count", "4", "--pause", "1ms")
	for _, want := range []string{"unit 1: holding 0; input 0-1\n", "unit 2: input 0-3\n"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("scan: exit %d, stdout %q, stderr %q; want a line %q", code, out, stderr, want)
		}
	}
	if strings.Contains(out, "unit 3") {
		t.Errorf("scan reported unit 3, which does not exist: %q", out)
	}
	if out, stderr, code := runCLI(t, "ports"); code != 0 || out == "" {
		t.Fatalf("ports: exit %d, %q %q", code, out, stderr)
	}
	if _, _, code := runCLI(t, "scan", "--tcp", addr, "--port", "/dev/null"); code != 2 {
		t.Fatalf("scan with two targets: exit %d, want 2", code)
	}
}

// TestSerialLineInstrumentOnSim: the lab bench's scale answers a text
// request on a simulated serial line (a pty), read through drivers/serial.
func TestSerialLineInstrumentOnSim(t *testing.T) {
	s := stdioSession(t, protocols[0], "--manifest", labBench)
	r, isErr := s.call("read_sample_weight", map[string]any{})
	if isErr || r["quality"] != "good" || r["value"] != 1250.4 || r["unit"] != "g" {
		t.Fatalf("read_sample_weight = %v (isError %t), want 1250.4 g, good", r, isErr)
	}
}
