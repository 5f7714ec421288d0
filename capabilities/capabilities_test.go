package capabilities_test

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/promcp/promcp-device/capabilities"
	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/promcp"
	"github.com/promcp/promcp-device/sim"
	"github.com/promcp/promcp-device/simtest"
)

var epoch = time.Date(2026, 3, 1, 6, 0, 0, 0, time.UTC)

// open builds the bench on a simulated world with a manual clock. Call it
// inside a synctest bubble: the drivers' real-time waits (the SHT3x
// measurement time, bus timeouts, slow faults) then take no time.
func open(tb testing.TB) (*capabilities.Set, *sim.World, *clock.Manual) {
	tb.Helper()
	m := simtest.Manifest(tb, "i2c-bench.yml")
	clk := clock.NewManual(epoch)
	w := simtest.World(tb, m, clk)
	return simtest.Open(tb, m, simtest.Hardware(w), capabilities.Options{Clock: clk}), w, clk
}

// mustWriter takes set's actuator writer (once per set).
func mustWriter(t *testing.T, set *capabilities.Set) *capabilities.Writer {
	t.Helper()
	w, err := set.TakeWriter()
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func get(t *testing.T, set *capabilities.Set, name string) *capabilities.Capability {
	t.Helper()
	c, ok := set.Get(name)
	if !ok {
		t.Fatalf("no capability %s", name)
	}
	return c
}

// Fan-in: many concurrent reads of both channels of one SHT3x cost one
// measurement (two I²C transactions: command, then result) per TTL.
func TestConcurrentReadsShareOneMeasurement(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		set, w, clk := open(t)
		temp, hum := get(t, set, "temperature"), get(t, set, "humidity")
		read := func(n int) []capabilities.Reading {
			out := make([]capabilities.Reading, n)
			var wg sync.WaitGroup
			for i := range n {
				c := temp
				if i%2 == 1 {
					c = hum
				}
				wg.Go(func() { out[i] = c.Read(t.Context()) })
			}
			wg.Wait()
			return out
		}
		for _, r := range read(50) {
			if r.Quality != promcp.QualityGood || !r.Time.Equal(epoch) {
				t.Fatalf("Read() = %+v, want good at %v", r, epoch)
			}
		}
		if got := w.Transactions("i2c1"); got != 2 {
			t.Errorf("after 50 concurrent reads: Transactions(i2c1) = %d, want 2 (one measurement)", got)
		}
		clk.Advance(1999 * time.Millisecond)
		read(20)
		if got := w.Transactions("i2c1"); got != 2 {
			t.Errorf("within the TTL: Transactions(i2c1) = %d, want 2", got)
		}
		clk.Advance(time.Millisecond)
		rs := read(20)
		if got := w.Transactions("i2c1"); got != 4 {
			t.Errorf("after the TTL: Transactions(i2c1) = %d, want 4", got)
		}
		if want := epoch.Add(2 * time.Second); !rs[0].Time.Equal(want) {
			t.Errorf("after the TTL: Time = %v, want the new sample time %v", rs[0].Time, want)
		}
		if h := temp.Health(); h.Transactions != 2 {
			t.Errorf("Health().Transactions = %d, want 2 (one per measurement)", h.Transactions)
		}
	})
}

func TestReadWithinMaxAge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		set, w, clk := open(t)
		lux := get(t, set, "lux")
		lux.Read(t.Context())
		clk.Advance(500 * time.Millisecond)
		for _, tc := range []struct {
			name   string
			maxAge time.Duration
			want   uint64 // transactions after the read
		}{
			{"older than the sample: cache", time.Second, 1},
			{"max age larger than the TTL is capped: cache", time.Hour, 1},
			{"younger than the sample: new transaction", 100 * time.Millisecond, 2},
			{"zero: new transaction", 0, 3},
		} {
			r := lux.ReadWithin(t.Context(), tc.maxAge)
			if got := w.Transactions("i2c1"); got != tc.want || r.Quality != promcp.QualityGood {
				t.Errorf("%s: ReadWithin(%v) = %s, Transactions = %d; want good, %d", tc.name, tc.maxAge, r.Quality, got, tc.want)
			}
		}
	})
}

// A failed read serves the last good value as stale with its own sample
// time, until max_stale; then error.
func TestStaleKeepsSampleTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		set, w, clk := open(t)
		temp := get(t, set, "temperature")
		first := temp.Read(t.Context())
		if first.Quality != promcp.QualityGood {
			t.Fatalf("Read() = %+v, want good", first)
		}
		if err := w.Inject("climate", manifests.Fault{Kind: manifests.FaultTimeout}); err != nil {
			t.Fatal(err)
		}
		clk.Advance(3 * time.Second)
		r := temp.Read(t.Context())
		if r.Quality != promcp.QualityStale || r.Value != first.Value || !r.Time.Equal(first.Time) {
			t.Errorf("after a timeout: Read() = %v %s at %v, want %v stale at its sample time %v", r.Value, r.Quality, r.Time, first.Value, first.Time)
		}
		if want := "read failed (timeout); last good value from 3 s ago"; r.Reason != want {
			t.Errorf("Reason = %q, want %q", r.Reason, want)
		}
		clk.Advance(8 * time.Second)
		r = temp.Read(t.Context())
		if r.Quality != promcp.QualityError || r.Value != nil {
			t.Errorf("past max_stale: Read() = %v %s, want error without a value", r.Value, r.Quality)
		}
		if want := "read failed (timeout); last good value is 11 s old (served stale for at most 10 s)"; r.Reason != want {
			t.Errorf("Reason = %q, want %q", r.Reason, want)
		}
		h := temp.Health()
		if h.Timeouts != 2 || h.ConsecutiveFailures != 2 || !h.LastGoodTime.Equal(first.Time) {
			t.Errorf("Health() = %+v, want 2 timeouts, 2 consecutive failures, last good at %v", h, first.Time)
		}
		w.Clear("climate")
		clk.Advance(2 * time.Second)
		if r := temp.Read(t.Context()); r.Quality != promcp.QualityGood || !r.Time.Equal(clk.Now()) {
			t.Errorf("after recovery: Read() = %+v, want good at %v", r, clk.Now())
		}
	})
}

// A write invalidates the cache: the readback is a new transaction.
func TestWriteInvalidatesCache(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		set, _, _ := open(t)
		pump := get(t, set, "pump")
		if r := pump.Read(t.Context()); r.Value != false {
			t.Fatalf("Read() = %+v, want false", r)
		}
		if err := mustWriter(t, set).Write(t.Context(), pump, true); err != nil {
			t.Fatal(err)
		}
		if r := pump.Read(t.Context()); r.Value != true {
			t.Errorf("readback after Write(true) = %v, want true (not the cached false)", r.Value)
		}
	})
}

// BenchmarkRead compares a read served from the cache with one that
// measures (an SHT3x on the simulated bus; the measurement wait is real).
func BenchmarkRead(b *testing.B) {
	set, _, _ := open(b)
	temp, _ := set.Get("temperature")
	b.Run("cached", func(b *testing.B) {
		temp.Read(b.Context())
		for b.Loop() {
			temp.Read(b.Context())
		}
	})
	b.Run("measured", func(b *testing.B) {
		for b.Loop() {
			temp.ReadWithin(b.Context(), 0)
		}
	})
}
