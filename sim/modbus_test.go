package sim_test

import (
	"bytes"
	"io"
	"net"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/drivers/modbus"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/manifests/manifesttest"
	"github.com/promcp/promcp-device/sim"
)

const plant = `
version: 1
gateway: plant
buses:
  - {name: gpio, kind: gpio}
  - {name: lan, kind: modbus_tcp, address: "10.0.0.1:502"}
devices:
  - {name: heater, bus: gpio, model: gpio_out, pin: GPIO17}
  - name: vfd
    bus: lan
    model: modbus
    unit_id: 1
    registers:
      - {name: speed_setpoint, table: holding, address: 0, type: uint16, scale: 0.1, writable: true}
      - {name: speed, table: input, address: 0, type: uint16, scale: 0.1}
      - {name: running, table: input, address: 1, type: bool, bit: 0}
      - {name: enable, table: coil, address: 0, type: bool, writable: true}
    sim: {profile: vfd}
  - name: meter
    bus: lan
    model: modbus
    unit_id: 2
    registers:
      - {name: power, table: input, address: 0, type: float32, byte_order: CDAB}
      - {name: energy, table: input, address: 2, type: float32, byte_order: CDAB}
    sim: {profile: energy_meter}
sim:
  zones:
    - {name: hall, temperature: 30, outside: 10, fans: [vfd], heaters: [heater], leak_time_constant: 100h}
`

func plantWorld(t *testing.T) (*sim.World, *clock.Manual) {
	t.Helper()
	return newWorld(t, manifesttest.Parse(t, "plant.yml", plant))
}

// TestVFDRampsCoolsAndMeters: the VFD's speed follows its setpoint at
// VFDRamp, the fan cools its zone, and the meter sees the fan's power and
// integrates energy, all on the manual clock.
func TestVFDRampsCoolsAndMeters(t *testing.T) {
	w, clk := plantWorld(t)
	vfd, _ := w.ModbusSlave("vfd")
	meter, _ := w.ModbusSlave("meter")
	if p, _ := meter.Get("power"); p != sim.MeterBaseLoad {
		t.Fatalf("idle power = %v, want the base load %v", p, sim.MeterBaseLoad)
	}
	vfd.Set("speed_setpoint", 50.0)
	clk.Advance(4 * time.Second)
	if s, _ := vfd.Get("speed"); s != 20.0 {
		t.Fatalf("speed 4 s after a 0→50 Hz setpoint = %v, want 20 (ramp %v Hz/s)", s, sim.VFDRamp)
	}
	if r, _ := vfd.Get("running"); r != true {
		t.Fatalf("running = %v while turning", r)
	}
	clk.Advance(time.Hour)
	if p, _ := meter.Get("power"); p != sim.MeterBaseLoad+sim.VFDRatedPower {
		t.Fatalf("power at full fan speed = %v, want %v", p, sim.MeterBaseLoad+sim.VFDRatedPower)
	}
	if e, _ := meter.Get("energy"); e.(float64) < 0.8 || e.(float64) > 1 {
		t.Fatalf("energy after about an hour at ~900 W = %v kWh", e)
	}
	if z, _ := w.Zone("hall"); z.Temperature > 11 {
		t.Fatalf("hall after an hour of full fan (5m time constant) = %.2f °C, want near the outside 10 °C", z.Temperature)
	}
}

// TestMbpollAgrees: mbpoll, an independent Modbus master built on
// libmodbus, reads and writes the simulated slaves over TCP and sees the
// same values the simulator holds.
func TestMbpollAgrees(t *testing.T) {
	if _, err := exec.LookPath("mbpoll"); err != nil {
		t.Skip("mbpoll is not installed (apt-get install mbpoll; scripts/test installs it)")
	}
	w, _ := plantWorld(t)
	srv, err := w.AllModbus()
	if err != nil {
		t.Fatal(err)
	}
	addr, err := srv.ServeLoopback(manifests.BusModbusTCP)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	_, port, _ := net.SplitHostPort(addr)
	// mbpoll OPTIONS host [VALUES to write]
	mbpoll := func(args ...string) string {
		t.Helper()
		opts, vals, _ := strings.Cut(strings.Join(args, " "), " -- ")
		all := append([]string{"-m", "tcp", "-p", port, "-0", "-1"}, strings.Fields(opts)...)
		all = append(append(all, "127.0.0.1"), strings.Fields(vals)...)
		out, err := exec.CommandContext(t.Context(), "mbpoll", all...).CombinedOutput()
		if err != nil {
			t.Fatalf("mbpoll %s: %v\n%s", strings.Join(all, " "), err, out)
		}
		return string(out)
	}
	value := func(out string, ref int) string {
		t.Helper()
		m := regexp.MustCompile(`\[` + itoa(ref) + `\]:\s+(\S+)`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no [%d] in mbpoll output:\n%s", ref, out)
		}
		return m[1]
	}
	// Read: float32 CDAB is mbpoll's default float word order.
	if got := value(mbpoll("-a", "2", "-t", "3:float", "-r", "0", "-c", "1"), 0); got != "150" {
		t.Errorf("mbpoll meter power = %s, want 150", got)
	}
	// Write a holding register and a coil with mbpoll; the slave has them.
	mbpoll("-a", "1", "-t", "4", "-r", "0", "--", "123")
	vfd, _ := w.ModbusSlave("vfd")
	if v, _ := vfd.Get("speed_setpoint"); v != 12.3 {
		t.Errorf("after mbpoll wrote 123 to holding 0, speed_setpoint = %v, want 12.3", v)
	}
	mbpoll("-a", "1", "-t", "0", "-r", "0", "--", "1")
	if v, _ := vfd.Get("enable"); v != true {
		t.Errorf("after mbpoll set coil 0, enable = %v", v)
	}
	if got := value(mbpoll("-a", "1", "-t", "0", "-r", "0", "-c", "1"), 0); got != "1" {
		t.Errorf("mbpoll coil 0 = %s, want 1", got)
	}
	vfd.Set("speed_setpoint", 45.6)
	if got := value(mbpoll("-a", "1", "-t", "4", "-r", "0", "-c", "1"), 0); got != "456" {
		t.Errorf("mbpoll holding 0 = %s, want 456", got)
	}
	// An undeclared address is an exception, as on a real device.
	out, _ := exec.CommandContext(t.Context(), "mbpoll", "-m", "tcp", "-p", port, "-0", "-1", "-a", "1", "-t", "4", "-r", "9", "127.0.0.1").CombinedOutput()
	if !bytes.Contains(bytes.ToLower(out), []byte("illegal data address")) {
		t.Errorf("mbpoll holding 9 (undeclared): %s, want an illegal data address exception", out)
	}
}

// TestMbpollAgreesRTU: mbpoll (libmodbus) as the master of the simulated
// RS-485 line, on a pseudo-terminal, reads and writes the slaves and sees
// what the simulator holds: the RTU framing (frames delimited by function
// code, CRC) agrees with an implementation nobody here wrote.
func TestMbpollAgreesRTU(t *testing.T) {
	if _, err := exec.LookPath("mbpoll"); err != nil {
		t.Skip("mbpoll is not installed (apt-get install mbpoll; scripts/test installs it)")
	}
	w, _ := plantWorld(t)
	srv, err := w.AllModbus()
	if err != nil {
		t.Fatal(err)
	}
	p, err := sim.OpenPTY()
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	t.Cleanup(func() { p.Close(); srv.Close() })
	go srv.ServeRTU(p.Master())
	mbpoll := func(args ...string) string {
		t.Helper()
		opts, vals, _ := strings.Cut(strings.Join(args, " "), " -- ")
		all := append([]string{"-m", "rtu", "-b", "19200", "-P", "none", "-0", "-1"}, strings.Fields(opts)...)
		all = append(append(all, p.SlavePath), strings.Fields(vals)...)
		out, err := exec.CommandContext(t.Context(), "mbpoll", all...).CombinedOutput()
		if err != nil {
			t.Fatalf("mbpoll %s: %v\n%s", strings.Join(all, " "), err, out)
		}
		return string(out)
	}
	value := func(out string) string {
		t.Helper()
		m := regexp.MustCompile(`\[0\]:\s+(\S+)`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no [0] in mbpoll output:\n%s", out)
		}
		return m[1]
	}
	if got := value(mbpoll("-a", "2", "-t", "3:float", "-r", "0", "-c", "1")); got != "150" {
		t.Errorf("mbpoll RTU meter power = %s, want 150", got)
	}
	mbpoll("-a", "1", "-t", "4", "-r", "0", "--", "123")
	vfd, _ := w.ModbusSlave("vfd")
	if v, _ := vfd.Get("speed_setpoint"); v != 12.3 {
		t.Errorf("after mbpoll RTU wrote 123 to holding 0, speed_setpoint = %v, want 12.3", v)
	}
	if got := value(mbpoll("-a", "1", "-t", "4", "-r", "0", "-c", "1")); got != "123" {
		t.Errorf("mbpoll RTU holding 0 = %s, want 123", got)
	}
}

func itoa(i int) string { return fmtInt(i) }

func fmtInt(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}

// FuzzRTURequest: the simulator's frame reader and slave never panic on any
// bytes a master (or line noise) sends, and answer only intact frames.
func FuzzRTURequest(f *testing.F) {
	f.Add(modbus.AppendCRC([]byte{1, 3, 0, 0, 0, 2}))
	f.Add(modbus.AppendCRC([]byte{1, 16, 0, 0, 0, 1, 2, 0, 7}))
	f.Add(modbus.AppendCRC([]byte{1, 15, 0, 0, 0, 1, 1, 1}))
	f.Add([]byte{1, 99, 0, 0})
	f.Fuzz(func(t *testing.T, in []byte) {
		m, _ := manifests.Parse("plant.yml", []byte(plant))
		w, _ := sim.New(m, clock.NewManual(time.Unix(0, 0)))
		srv, _ := w.AllModbus()
		var out bytes.Buffer
		srv.ServeRTU(struct {
			io.Reader
			io.Writer
		}{bytes.NewReader(in), &out})
		for b := out.Bytes(); len(b) > 0; {
			if len(b) < 5 {
				t.Fatalf("short response % x", b)
			}
			// Responses are whole frames with a valid CRC.
			n := len(b)
			for k := 5; k <= len(b); k++ {
				if modbus.CheckCRC(b[:k]) {
					n = k
					break
				}
			}
			if !modbus.CheckCRC(b[:n]) {
				t.Fatalf("response % x has no valid frame", b)
			}
			b = b[n:]
		}
	})
}
