package gateway_test

import (
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/promcp/promcp-device/capabilities"
	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/gateway/gatewaytest"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/manifests/manifesttest"
	"github.com/promcp/promcp-device/promcp"
	"github.com/promcp/promcp-device/sim"
	"github.com/promcp/promcp-device/simtest"
)

// step advances the simulated clock by d in steps of one second, letting
// the counting goroutine take the edges each step makes (its waits are on
// synctest's fake time).
func step(clk *clock.Manual, d time.Duration) {
	for range int(d / time.Second) {
		clk.Advance(time.Second)
		time.Sleep(200 * time.Millisecond) // fake time: the counter's poll runs
		synctest.Wait()
	}
}

func near(v any, want float64) bool {
	f, ok := v.(float64)
	return ok && math.Abs(f-want) < 1e-9
}

// The rain gauge of pi-outdoor.yml tips every 20 s: through the server,
// rainfall and the rate follow; bounces (a noise fault) are debounced; a
// stuck line stops the count.
func TestPulseCounterThroughServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newOutdoorBench(t)
		step(b.clk, time.Minute)
		tip := 0.2794
		if r := b.read("read_rainfall"); r.Quality != promcp.QualityGood || !near(r.Value, 3*tip) {
			t.Fatalf("rainfall after a minute = %+v, want 3 tips (%g mm)", r, 3*tip)
		}
		if r := b.read("read_rain_rate"); !near(r.Value, 3*tip) {
			t.Fatalf("rain rate = %+v, want %g mm/min", r, 3*tip)
		}
		if err := b.w.Inject("rain_gauge", manifests.Fault{Kind: manifests.FaultNoise}); err != nil {
			t.Fatal(err)
		}
		step(b.clk, time.Minute)
		if r := b.read("read_rainfall"); !near(r.Value, 6*tip) {
			t.Fatalf("rainfall with bouncing contacts = %+v, want 6 tips (bounces dropped)", r)
		}
		if err := b.w.Inject("rain_gauge", manifests.Fault{Kind: manifests.FaultStuck}); err != nil {
			t.Fatal(err)
		}
		step(b.clk, time.Minute)
		if r := b.read("read_rainfall"); !near(r.Value, 6*tip) {
			t.Fatalf("rainfall with the line stuck = %+v, want still 6 tips", r)
		}
		if r := b.read("read_rain_rate"); !near(r.Value, 0) {
			t.Fatalf("rain rate with the line stuck = %+v, want 0", r)
		}
	})
}

// Under a state directory the total goes on from where it was after a
// restart.
func TestPulseTotalKeptAcrossRestarts(t *testing.T) {
	m := manifesttest.Load(t, "../manifests/examples/pi-outdoor.yml")
	state := t.TempDir()
	open := func(t *testing.T, clk *clock.Manual) (*capabilities.Set, *sim.World) {
		w := simtest.World(t, m, clk)
		set, err := capabilities.Open(t.Context(), m, kernelFiles(t.TempDir())(w), capabilities.Options{Clock: clk, StateDir: state})
		if err != nil {
			t.Fatal(err)
		}
		return set, w
	}
	read := func(t *testing.T, set *capabilities.Set) any {
		c, _ := set.Get("rainfall")
		return c.ReadWithin(t.Context(), 0).Value
	}
	synctest.Test(t, func(t *testing.T) {
		clk := clock.NewManual(epoch)
		set, _ := open(t, clk)
		step(clk, time.Minute+10*time.Second) // 3 tips
		if v := read(t, set); !near(v, 3*0.2794) {
			t.Fatalf("before the restart: %v", v)
		}
		if err := set.Close(); err != nil {
			t.Fatal(err)
		}
		clk2 := clock.NewManual(epoch.Add(time.Hour))
		set2, w2 := open(t, clk2)
		defer set2.Close()
		if v := read(t, set2); !near(v, 3*0.2794) {
			t.Fatalf("after the restart: %v, want the 3 tips kept", v)
		}
		if err := w2.SetPulseRate("rain_gauge", 0.1); err != nil {
			t.Fatal(err)
		}
		step(clk2, 30*time.Second) // 3 more at 0.1/s
		if v := read(t, set2); !near(v, 6*0.2794) {
			t.Fatalf("counting on after the restart: %v, want 6 tips", v)
		}
	})
}

// A fast meter on the simulator: 12 pulses a second (83 ms apart, the
// debounce is 20 ms) for 10 s are 120 pulses counted, not fewer. The
// simulated pin hands each pulse out at its own instant; handed out in
// bursts, the debounce would drop all but the first of each burst.
func TestFastPulsesCountedApart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The real clock: synctest's fake time.
		w, set := gatewaytest.Open(t, manifesttest.Load(t, "../manifests/examples/pi-outdoor.yml"), gatewaytest.Options{Hardware: kernelFiles(t.TempDir())})
		if err := w.SetPulseRate("rain_gauge", 12); err != nil {
			t.Fatal(err)
		}
		rain, _ := set.Get("rainfall")
		before := rain.ReadWithin(t.Context(), 0).Value.(float64)
		time.Sleep(10 * time.Second)
		got := (rain.ReadWithin(t.Context(), 0).Value.(float64) - before) / 0.2794
		if math.Abs(got-120) > 1.5 {
			t.Fatalf("pulses counted in 10 s at 12 Hz: %.1f, want 120", got)
		}
	})
}
