package sim_test

import (
	"bytes"
	"errors"
	"math"
	"testing"
	"time"

	pgpio "periph.io/x/conn/v3/gpio"

	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/drivers"
	"github.com/promcp/promcp-device/drivers/gpio"
	"github.com/promcp/promcp-device/drivers/i2c"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/sim"
)

// The real SHT3x driver reads the zone's state through the simulated bus.
func TestSHT3xDriverOnSim(t *testing.T) {
	w, clk := newWorld(t, greenhouse(0))
	bus := i2c.NewBus("i2c1", openBus(t, w, "i2c1"), 0, nil)
	for _, tc := range []struct {
		zone string
		addr uint16
	}{{"zone1", 0x44}, {"zone2", 0x45}} {
		t.Run(tc.zone, func(t *testing.T) {
			s, err := i2c.NewSHT3x(bus, tc.addr, i2c.WithSleep(sleepOn(clk))).Sense(t.Context())
			if err != nil {
				t.Fatalf("Sense() = %v", err)
			}
			z, _ := w.Zone(tc.zone)
			const lsbT, lsbRH = 175.0 / 65535, 100.0 / 65535
			if got := s.Temperature.Celsius(); math.Abs(got-z.Temperature) > lsbT {
				t.Errorf("Sense() temperature = %v °C, want %v", got, z.Temperature)
			}
			if got := float64(s.Humidity) / float64(1e5); math.Abs(got-z.Humidity) > lsbRH {
				t.Errorf("Sense() humidity = %v %%, want %v", got, z.Humidity)
			}
		})
	}
	if got := w.Transactions("i2c1"); got != 4 {
		t.Errorf("Transactions(i2c1) = %d, want 4", got)
	}
}

// Without a sim section every SHT3x reads 20 °C and 50 %.
func TestSHT3xWithoutZone(t *testing.T) {
	m := greenhouse(0)
	m.Sim = nil
	w, clk := newWorld(t, m)
	bus := i2c.NewBus("i2c1", openBus(t, w, "i2c1"), 0, nil)
	s, err := i2c.NewSHT3x(bus, 0x44, i2c.WithSleep(sleepOn(clk))).Sense(t.Context())
	if err != nil {
		t.Fatalf("Sense() = %v", err)
	}
	if got := s.Temperature.Celsius(); math.Abs(got-20) > 0.003 {
		t.Errorf("Sense() temperature = %v, want 20 °C", got)
	}
	if got := float64(s.Humidity) / 1e5; math.Abs(got-50) > 0.002 {
		t.Errorf("Sense() humidity = %v, want 50 %%", got)
	}
	if _, ok := w.Zone("zone1"); ok {
		t.Error("Zone(zone1) exists without a sim section")
	}
}

// The simulated SHT3x answers byte for byte, NACKing what the chip NACKs.
func TestSimSHT3xTranscript(t *testing.T) {
	m := greenhouse(0)
	m.Sim = nil // 20 °C, 50 %
	w, _ := newWorld(t, m)
	bus := openBus(t, w, "i2c1")
	measurement := []byte{0x5F, 0x16, 0x1A, 0x80, 0x00, 0xA2} // 20 °C (raw 24342), 50 % (raw 32768)
	steps := []struct {
		name string
		addr uint16
		w    []byte
		r    int
		want []byte // nil: no read expected
		nack bool
	}{
		{"read before any command", 0x44, nil, 6, nil, true},
		{"wrong address", 0x46, []byte{0x24, 0x00}, 0, nil, true},
		{"unknown command", 0x44, []byte{0x12, 0x34}, 0, nil, true},
		{"three-byte write", 0x44, []byte{0x24, 0x00, 0x00}, 0, nil, true},
		{"status after power-up, command failed", 0x44, []byte{0xF3, 0x2D}, 3, []byte{0x80, 0x12, 0x83}, false},
		{"clear status", 0x44, []byte{0x30, 0x41}, 0, nil, false},
		{"status cleared", 0x44, []byte{0xF3, 0x2D}, 3, []byte{0x00, 0x00, 0x81}, false},
		{"measure high repeatability", 0x44, []byte{0x24, 0x00}, 0, nil, false},
		{"read measurement", 0x44, nil, 6, measurement, false},
		{"second read NACKs", 0x44, nil, 6, nil, true},
		{"read in the same transaction without stretching", 0x44, []byte{0x24, 0x0B}, 6, nil, true},
		{"result still comes", 0x44, nil, 6, measurement, false},
		{"clock stretching: same transaction", 0x44, []byte{0x2C, 0x06}, 6, measurement, false},
		{"measure, then soft reset", 0x44, []byte{0x24, 0x16}, 0, nil, false},
		{"soft reset", 0x44, []byte{0x30, 0xA2}, 0, nil, false},
		{"reset dropped the result", 0x44, nil, 6, nil, true},
		{"status after reset", 0x44, []byte{0xF3, 0x2D}, 3, []byte{0x00, 0x10, word0010CRC}, false},
		{"address probe", 0x45, nil, 0, nil, false},
	}
	for _, s := range steps {
		r := make([]byte, s.r)
		err := bus.Tx(s.addr, s.w, r)
		if s.nack {
			if !errors.Is(err, drivers.ErrnoRemoteIO) || !errors.Is(drivers.Classify(err), drivers.ErrNACK) {
				t.Errorf("%s: Tx(%#02x, % x) = %v, want EREMOTEIO", s.name, s.addr, s.w, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: Tx(%#02x, % x) = %v", s.name, s.addr, s.w, err)
			continue
		}
		if s.want != nil && !bytes.Equal(r, s.want) {
			t.Errorf("%s: Tx(%#02x, % x) read % x, want % x", s.name, s.addr, s.w, r, s.want)
		}
	}
	if got, want := w.Transactions("i2c1"), uint64(len(steps)); got != want {
		t.Errorf("Transactions(i2c1) = %d, want %d", got, want)
	}
}

const word0010CRC = 0xC2 // CRC8(0x00, 0x10), checked in TestCRCConstants

func TestCRCConstants(t *testing.T) {
	for _, tc := range []struct {
		b    []byte
		want byte
	}{
		{[]byte{0x00, 0x10}, word0010CRC},
		{[]byte{0x80, 0x12}, 0x83},
		{[]byte{0x5F, 0x16}, 0x1A},
		{[]byte{0x80, 0x00}, 0xA2},
	} {
		if got := i2c.CRC8(tc.b); got != tc.want {
			t.Errorf("CRC8(% x) = %#02x, want %#02x", tc.b, got, tc.want)
		}
	}
}

// The real register-map driver reads the initial values and writes through
// the simulated register file.
func TestRegistersDriverOnSim(t *testing.T) {
	m := labBench()
	w, _ := newWorld(t, m)
	raw := openBus(t, w, "i2c1")
	d := i2c.NewRegisters(i2c.NewBus("i2c1", raw, 0, nil), 0x20, m.Devices[0].Registers)
	for name, want := range map[string]float64{"dimmer": 40, "lux": 12000, "driver_temperature": 31.5} {
		if got, err := d.Read(t.Context(), name); err != nil || got != want {
			t.Errorf("Read(%q) = %v, %v, want %v", name, got, err, want)
		}
	}
	if err := d.Write(t.Context(), "dimmer", 55.5); err != nil {
		t.Fatalf("Write(dimmer, 55.5) = %v", err)
	}
	if got, err := d.Read(t.Context(), "dimmer"); err != nil || got != 55.5 {
		t.Errorf("Read(dimmer) after Write(55.5) = %v, %v", got, err)
	}
	// A raw write into a read-only register is ignored, as by the chip.
	if err := raw.Tx(0x20, []byte{0x02, 0x00, 0x01}, nil); err != nil {
		t.Fatalf("raw write = %v", err)
	}
	if got, err := d.Read(t.Context(), "lux"); err != nil || got != 12000 {
		t.Errorf("Read(lux) after a raw write = %v, %v, want 12000", got, err)
	}
	// The pointer auto-increments: one read of 3 bytes from 0x01.
	r := make([]byte, 3)
	if err := raw.Tx(0x20, []byte{0x01}, r); err != nil || !bytes.Equal(r, []byte{111, 0x2E, 0xE0}) {
		t.Errorf("burst read = % x, %v, want 6f 2e e0", r, err)
	}
	if _, err := d.Read(t.Context(), "lux"); err != nil {
		t.Error(err)
	}
	if err := raw.Tx(0x21, []byte{0x01}, r); !errors.Is(err, drivers.ErrnoRemoteIO) {
		t.Errorf("Tx(wrong address) = %v, want EREMOTEIO", err)
	}
}

// The real GPIO output driver opens a relay without switching it, and drives
// the level the physics reads.
func TestOutputDriverOnSim(t *testing.T) {
	w, _ := newWorld(t, greenhouse(0))
	p, err := w.Pin(t.Context(), "GPIO17")
	if err != nil {
		t.Fatal(err)
	}
	if p.Read() != pgpio.High {
		t.Fatalf("active-low relay initially off: line = %s, want High", p.Read())
	}
	o := openOutput(t, w, "GPIO17", true)
	if on, err := o.Get(t.Context()); err != nil || on {
		t.Errorf("Get() after Open = %t, %v, want off", on, err)
	}
	if p.Read() != pgpio.High || p.Function() != string(pgpio.OUT) {
		t.Errorf("after Open: line %s, function %s, want High, Out", p.Read(), p.Function())
	}
	if err := o.Set(t.Context(), true); err != nil {
		t.Fatal(err)
	}
	if p.Read() != pgpio.Low {
		t.Errorf("Set(true) on an active-low relay: line %s, want Low", p.Read())
	}
	if got := p.Number(); got != 17 {
		t.Errorf("Number() = %d, want 17", got)
	}
}

// An initial level from the manifest is logical: active_low applies.
func TestPinInitialLevel(t *testing.T) {
	m := greenhouse(0)
	m.Devices[2].Sim = &manifests.DeviceSim{Level: true} // heater on, active low
	w, _ := newWorld(t, m)
	o := openOutput(t, w, "GPIO17", true)
	if on, _ := o.Get(t.Context()); !on {
		t.Error("heater with sim level true is off after Open")
	}
}

// A gpio_in reads what the outside drives, whatever its pull.
func TestInputDriverOnSim(t *testing.T) {
	w, _ := newWorld(t, labBench())
	p, err := w.Pin(t.Context(), "GPIO22")
	if err != nil {
		t.Fatal(err)
	}
	in := gpio.NewInput("door_switch", p, gpio.PullUp, false, nil)
	if err := in.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	if p.Pull() != pgpio.PullUp {
		t.Errorf("Pull() = %s, want PullUp", p.Pull())
	}
	for _, closed := range []bool{true, false} {
		if err := w.Drive("GPIO22", closed); err != nil {
			t.Fatal(err)
		}
		if got, err := in.Get(t.Context()); err != nil || got != closed {
			t.Errorf("Get() after Drive(%t) = %t, %v", closed, got, err)
		}
	}
	if err := w.Drive("GPIO99", true); !errors.Is(err, drivers.ErrUnavailable) {
		t.Errorf("Drive(GPIO99) = %v, want ErrUnavailable", err)
	}
	if err := p.In(pgpio.PullUp, pgpio.RisingEdge); err == nil {
		t.Error("In(RisingEdge) = nil, want an error: edges are not simulated")
	}
}

func TestUnknownBusAndPin(t *testing.T) {
	w, _ := newWorld(t, greenhouse(0))
	for _, name := range []string{"i2c9", "1", "gpio"} { // "1" is the Device, "gpio" not I2C
		if _, err := w.I2C(t.Context(), name); !errors.Is(err, drivers.ErrUnavailable) {
			t.Errorf("I2C(%q) = %v, want ErrUnavailable", name, err)
		}
	}
	if _, err := w.Pin(t.Context(), "GPIO4"); !errors.Is(err, drivers.ErrUnavailable) {
		t.Errorf("Pin(GPIO4) = %v, want ErrUnavailable", err)
	}
}

func TestClosedHandle(t *testing.T) {
	w, _ := newWorld(t, greenhouse(0))
	a := openBus(t, w, "i2c1")
	b := openBus(t, w, "i2c1")
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Tx(0x45, nil, nil); err == nil {
		t.Error("Tx on a closed handle = nil, want an error")
	}
	if err := b.Tx(0x45, nil, nil); err != nil {
		t.Errorf("Tx on another handle = %v", err)
	}
}

// Same seed, same readings; another seed, other readings.
func TestNoiseDeterministic(t *testing.T) {
	read := func(seed int64) []float64 {
		m := greenhouse(0.2)
		m.Sim.Seed = seed
		w, clk := newWorld(t, m)
		bus := i2c.NewBus("i2c1", openBus(t, w, "i2c1"), 0, nil)
		d := i2c.NewSHT3x(bus, 0x44, i2c.WithSleep(sleepOn(clk)))
		var out []float64
		for range 5 {
			s, err := d.Sense(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, s.Temperature.Celsius(), float64(s.Humidity))
			clk.Advance(time.Second)
		}
		return out
	}
	a, b, c := read(7), read(7), read(8)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("seed 7 twice: reading %d = %v then %v", i, a[i], b[i])
		}
	}
	same := true
	for i := range a {
		same = same && a[i] == c[i]
	}
	if same {
		t.Error("seeds 7 and 8 gave the same readings")
	}
}

func TestNewRejectsBadReferences(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*manifests.Manifest)
	}{
		{"unknown sensor", func(m *manifests.Manifest) { m.Sim.Zones[0].Sensors = []string{"nope"} }},
		{"heater is a sensor", func(m *manifests.Manifest) { m.Sim.Zones[0].Heaters = []string{"zone2_climate"} }},
		{"unknown vent", func(m *manifests.Manifest) { m.Sim.Zones[0].Vents = []string{"nope"} }},
		{"device on unknown bus", func(m *manifests.Manifest) { m.Devices[0].Bus = "i2c7" }},
		{"two devices at one address", func(m *manifests.Manifest) { m.Devices[1].Address = 0x44 }},
		{"two devices on one pin", func(m *manifests.Manifest) { m.Devices[3].Pin = "GPIO17" }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := greenhouse(0)
			tc.modify(m)
			if _, err := sim.New(m, clock.NewManual(epoch)); err == nil {
				t.Error("New() = nil error")
			}
		})
	}
	m := labBench()
	m.Devices[0].Sim.Values["dimmer"] = 500
	if _, err := sim.New(m, nil); err == nil {
		t.Error("New(dimmer initial value 500) = nil error, want out of range")
	}
	m = labBench()
	m.Devices[0].Sim.Values["nope"] = 1
	if _, err := sim.New(m, nil); err == nil {
		t.Error("New(initial value of an unknown register) = nil error")
	}
}
