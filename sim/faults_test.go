package sim_test

import (
	"bytes"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/promcp/promcp-device/drivers"
	"github.com/promcp/promcp-device/drivers/i2c"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/manifests/manifesttest"
	"github.com/promcp/promcp-device/sim"
)

// The example scenario plays on the world's clock: zone 1's sensor times
// out from 10 s, stops answering from 1 min 10 s, and zone 2's freezes from
// 10 s; both recover at 2 min 10 s. In a synctest bubble, the bus timeouts
// (and zone 2's wait for the bus that zone 1's abandoned transaction holds)
// take no time.
func TestExampleScenario(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := manifesttest.Load(t, "../manifests/examples/greenhouse.yml")
		sc, err := manifests.LoadScenario("../manifests/examples/greenhouse-faults.yml", m)
		if err != nil {
			t.Fatal(err)
		}
		w, clk := newWorld(t, m)
		if err := w.Play(sc); err != nil {
			t.Fatal(err)
		}
		bus := i2c.NewBus("i2c1", openBus(t, w, "i2c1"), 0, nil)
		zone1 := i2c.NewSHT3x(bus, 0x44, i2c.WithSleep(sleepOn(clk)))
		zone2 := i2c.NewSHT3x(bus, 0x45, i2c.WithSleep(sleepOn(clk)))
		steps := []struct {
			at         time.Duration
			zone1      error // class of zone 1's error; nil: a sample
			zone2Stuck bool
		}{
			{0, nil, false},
			{8 * time.Second, nil, false},
			{10 * time.Second, drivers.ErrTimeout, true},
			{time.Minute, drivers.ErrTimeout, true},
			{time.Minute + 10*time.Second, drivers.ErrNACK, true},
			{2 * time.Minute, drivers.ErrNACK, true},
			{2*time.Minute + 10*time.Second, nil, false},
		}
		start := clk.Now()
		for _, st := range steps {
			clk.Advance(start.Add(st.at).Sub(clk.Now()))
			_, err := zone1.Sense(t.Context())
			if st.zone1 == nil && err != nil || st.zone1 != nil && !errors.Is(err, st.zone1) {
				t.Errorf("at %v: zone1 Sense() = %v, want %v", st.at, err, st.zone1)
			}
			a, err1 := zone2.Sense(t.Context())
			clk.Advance(time.Second)
			b, err2 := zone2.Sense(t.Context())
			if err1 != nil || err2 != nil {
				t.Fatalf("at %v: zone2 Sense() = %v, %v", st.at, err1, err2)
			}
			if stuck := a == b; stuck != st.zone2Stuck {
				t.Errorf("at %v: zone2 %v then %v, want stuck %t", st.at, a, b, st.zone2Stuck)
			}
		}
	})
}

// Each fault, at the bus, as the drivers see it.
func TestFaultsAtTheBus(t *testing.T) {
	m := greenhouse(0.05)
	for _, tc := range []struct {
		kind manifests.FaultKind
		want error // class of Sense's error; nil: a sample
	}{
		{manifests.FaultDropout, drivers.ErrNACK},
		{manifests.FaultNACK, drivers.ErrNACK},
		{manifests.FaultCRC, drivers.ErrCRC},
		{manifests.FaultStuck, nil},
		{manifests.FaultNoise, nil},
		{manifests.FaultImplausible, nil},
	} {
		t.Run(string(tc.kind), func(t *testing.T) {
			w, clk := newWorld(t, m)
			bus := i2c.NewBus("i2c1", openBus(t, w, "i2c1"), 0, nil)
			d := i2c.NewSHT3x(bus, 0x44, i2c.WithSleep(sleepOn(clk)))
			clean, err := d.Sense(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Inject("zone1_climate", manifests.Fault{Kind: tc.kind}); err != nil {
				t.Fatal(err)
			}
			s, err := d.Sense(t.Context())
			if tc.want != nil {
				if !errors.Is(err, tc.want) {
					t.Errorf("Sense() = %v, want an error wrapping %v", err, tc.want)
				}
			} else if err != nil {
				t.Fatalf("Sense() = %v", err)
			}
			switch tc.kind {
			case manifests.FaultImplausible:
				if got := s.Temperature.Celsius(); got < 129.99 {
					t.Errorf("implausible: temperature %v °C, want railed at 130 °C", got)
				}
			case manifests.FaultNoise:
				if d := s.Temperature.Celsius() - clean.Temperature.Celsius(); d < 2 {
					t.Errorf("noise: first spike %+.2f °C, want at least +2.5 (half the default amplitude, less drift)", d)
				}
			case manifests.FaultStuck:
				clk.Advance(time.Minute)
				again, _ := d.Sense(t.Context())
				if again != s {
					t.Errorf("stuck: %v then %v, want identical", s, again)
				}
			}
			w.Clear("zone1_climate")
			if _, err := d.Sense(t.Context()); err != nil {
				t.Errorf("after Clear: Sense() = %v", err)
			}
		})
	}
}

// A stuck register device freezes its whole file: writes land, reads do not
// see them; a railed register reads all ones.
func TestRegisterFaults(t *testing.T) {
	w, _ := newWorld(t, labBench())
	bus := openBus(t, w, "i2c1")
	read := func(reg byte, n int) []byte {
		r := make([]byte, n)
		if err := bus.Tx(0x20, []byte{reg}, r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	before := read(0x01, 1)
	if err := w.Inject("grow_light", manifests.Fault{Kind: manifests.FaultStuck}); err != nil {
		t.Fatal(err)
	}
	read(0x01, 1) // freezes
	if err := bus.Tx(0x20, []byte{0x01, 0x10}, nil); err != nil {
		t.Fatal(err)
	}
	if got := read(0x01, 1); !bytes.Equal(got, before) {
		t.Errorf("stuck: dimmer reads % x after a write, want the frozen % x", got, before)
	}
	w.Clear("grow_light")
	if got := read(0x01, 1); !bytes.Equal(got, []byte{0x10}) {
		t.Errorf("after Clear: dimmer reads % x, want the written 10", got)
	}
	w.Inject("grow_light", manifests.Fault{Kind: manifests.FaultImplausible, Channel: "lux"})
	if got := read(0x02, 2); !bytes.Equal(got, []byte{0xFF, 0xFF}) {
		t.Errorf("implausible: lux reads % x, want ff ff", got)
	}
	if err := w.Inject("grow_light", manifests.Fault{Kind: manifests.FaultCRC}); !errors.Is(err, sim.ErrFault) {
		t.Errorf("Inject(crc on registers) = %v, want ErrFault", err)
	}
}

// A stuck pin keeps its level whatever is driven; a chattering one inverts
// every other read.
func TestPinFaults(t *testing.T) {
	w, _ := newWorld(t, labBench())
	p, err := w.Pin(t.Context(), "GPIO22")
	if err != nil {
		t.Fatal(err)
	}
	w.Drive("GPIO22", false)
	w.Inject("door_switch", manifests.Fault{Kind: manifests.FaultStuck})
	p.Read()
	w.Drive("GPIO22", true)
	if p.Read() {
		t.Error("stuck: the pin followed the drive")
	}
	w.Inject("door_switch", manifests.Fault{Kind: manifests.FaultNoise})
	if a, b := p.Read(), p.Read(); a == b || bool(b) != true {
		t.Errorf("noise: reads %v then %v, want inverted then true", a, b)
	}
	w.Clear("door_switch")
	if !p.Read() {
		t.Error("after Clear: pin reads low, want the driven high")
	}
}
