package gateway_test

import (
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/promcp"
	"github.com/promcp/promcp-device/simtest"
)

// faultBench is simtest's fault-bench.yml: one capability on each bus
// kind the simulator has (an SHT3x and a register-map device on I²C, an
// input pin on GPIO) and a pump whose safety depends on the temperature.
const faultBench = "fault-bench.yml"

// Every fault on every bus kind, through the server: the quality and reason
// a read gives within one TTL of the fault starting (stuck: once it has
// the samples it needs), and good again within one TTL after it clears.
func TestFaultsThroughServer(t *testing.T) {
	cases := []faultCase{
		// I²C, SHT3x.
		{"read_temperature", "climate", manifests.Fault{Kind: manifests.FaultDropout}, 1, promcp.QualityError, "read failed (nack)"},
		{"read_temperature", "climate", manifests.Fault{Kind: manifests.FaultNACK}, 1, promcp.QualityError, "read failed (nack)"},
		{"read_temperature", "climate", manifests.Fault{Kind: manifests.FaultStuck}, 3, promcp.QualityDegraded, "stuck: unchanged for 4 s (3 samples)"},
		{"read_temperature", "climate", manifests.Fault{Kind: manifests.FaultNoise, Amplitude: 5}, 1, promcp.QualityDegraded, "jump: "},
		{"read_temperature", "climate", manifests.Fault{Kind: manifests.FaultImplausible}, 1, promcp.QualityDegraded, "implausible: 130 °C outside -10..60 °C"},
		{"read_temperature", "climate", manifests.Fault{Kind: manifests.FaultSlow, Delay: 50 * time.Millisecond}, 1, promcp.QualityGood, ""},
		{"read_temperature", "climate", manifests.Fault{Kind: manifests.FaultTimeout}, 1, promcp.QualityStale, "read failed (timeout); last good value from 2 s ago"},
		{"read_temperature", "climate", manifests.Fault{Kind: manifests.FaultCRC}, 1, promcp.QualityStale, "read failed (crc); last good value from 2 s ago"},
		// I²C, register map. A register holds a constant in the simulator:
		// a stuck one cannot be told from a steady one.
		{"read_lux", "light", manifests.Fault{Kind: manifests.FaultDropout}, 1, promcp.QualityError, "read failed (nack)"},
		{"read_lux", "light", manifests.Fault{Kind: manifests.FaultNACK}, 1, promcp.QualityError, "read failed (nack)"},
		{"read_lux", "light", manifests.Fault{Kind: manifests.FaultStuck}, 3, promcp.QualityGood, ""},
		{"read_lux", "light", manifests.Fault{Kind: manifests.FaultNoise, Amplitude: 5000}, 1, promcp.QualityDegraded, "jump: "},
		{"read_lux", "light", manifests.Fault{Kind: manifests.FaultImplausible}, 1, promcp.QualityDegraded, "implausible: 65535 lx outside 0..50000 lx"},
		{"read_lux", "light", manifests.Fault{Kind: manifests.FaultSlow}, 1, promcp.QualityGood, ""},
		{"read_lux", "light", manifests.Fault{Kind: manifests.FaultTimeout}, 1, promcp.QualityStale, "read failed (timeout); last good value from 2 s ago"},
		// GPIO. A line cannot fail a transaction; a stuck input cannot be
		// told from a quiet one.
		{"read_door", "door_switch", manifests.Fault{Kind: manifests.FaultStuck}, 3, promcp.QualityGood, ""},
		{"read_door", "door_switch", manifests.Fault{Kind: manifests.FaultNoise}, 1, promcp.QualityDegraded, "jump: 0.5/s exceeds 0.2/s"},
		{"read_door", "door_switch", manifests.Fault{Kind: manifests.FaultSlow}, 1, promcp.QualityGood, ""},
	}
	runFaultCases(t, cases, ttl, true, func(t *testing.T) *bench { return newBench(t, simtest.Manifest(t, faultBench)) })
}

// Faults that cannot happen on a bus kind are refused, not silently
// ignored.
func TestInjectRefusesWhatABusCannotDo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBench(t, simtest.Manifest(t, faultBench))
		for _, tc := range []struct {
			device string
			kind   manifests.FaultKind
		}{
			{"light", manifests.FaultCRC},
			{"door_switch", manifests.FaultDropout},
			{"door_switch", manifests.FaultTimeout},
			{"door_switch", manifests.FaultImplausible},
			{"nowhere", manifests.FaultStuck},
		} {
			if err := b.w.Inject(tc.device, manifests.Fault{Kind: tc.kind}); err == nil {
				t.Errorf("Inject(%s, %s) = nil, want an error", tc.device, tc.kind)
			}
		}
	})
}

// A stale read keeps its own sample time through the server, and max_age_ms
// 0 asks for a new measurement.
func TestStaleTimestampThroughServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBench(t, simtest.Manifest(t, faultBench))
		first := b.read("read_temperature", nil)
		b.clk.Advance(time.Second)
		if r := b.read("read_temperature", nil); !r.Timestamp.Equal(first.Timestamp) {
			t.Errorf("within the TTL: timestamp %v, want the cached sample's %v", r.Timestamp, first.Timestamp)
		}
		n := b.w.Transactions("i2c1")
		if r := b.read("read_temperature", map[string]any{"max_age_ms": 0}); !r.Timestamp.Equal(b.clk.Now()) || b.w.Transactions("i2c1") != n+2 {
			t.Errorf("max_age_ms 0: timestamp %v, %d transactions; want now (%v) and one new measurement", r.Timestamp, b.w.Transactions("i2c1")-n, b.clk.Now())
		}
		sample := b.clk.Now()
		if err := b.w.Inject("climate", manifests.Fault{Kind: manifests.FaultTimeout}); err != nil {
			t.Fatal(err)
		}
		b.clk.Advance(5 * time.Second)
		r := b.read("read_temperature", map[string]any{"max_age_ms": 0})
		if r.Quality != promcp.QualityStale || !r.Timestamp.Equal(sample) || r.Value == nil {
			t.Errorf("after a failed read: %+v, want the last good value, stale, at its sample time %v", r, sample)
		}
		var bad promcp.ReadResult
		b.call("read_temperature", map[string]any{"max_age_ms": -1}, &bad)
		if bad.Error == nil || bad.Error.Code != promcp.CodeInvalidArgument {
			t.Errorf("max_age_ms -1: %+v, want invalid_argument", bad)
		}
		// The abandoned transaction still holds the bus: a last read waits
		// for it, so that the bubble ends with no goroutine left.
		b.w.Clear("climate")
		b.read("read_temperature", map[string]any{"max_age_ms": 0})
	})
}

// can_do sees the health of what an action depends on.
func TestCanDoSeesHealth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBench(t, simtest.Manifest(t, faultBench))
		ask := func() promcp.CapabilityReport {
			var rep promcp.CapabilityReport
			b.call("can_do", map[string]any{"intent": map[string]any{"action": "do_set_pump", "value": true}}, &rep)
			return rep
		}
		// under asks, a TTL on, with the sensor under fault kind alone.
		under := func(kind manifests.FaultKind) promcp.CapabilityReport {
			b.w.Clear("climate")
			b.clk.Advance(ttl)
			if err := b.w.Inject("climate", manifests.Fault{Kind: kind}); err != nil {
				t.Fatal(err)
			}
			return ask()
		}
		rep := ask()
		if len(rep.Candidates) != 1 || rep.Candidates[0].Permission != promcp.Allowed {
			t.Fatalf("healthy: can_do = %+v, want the pump allowed", rep)
		}
		if o, ok := rep.Context.CurrentObservations["read_temperature"]; !ok || o.Quality != promcp.QualityGood {
			t.Errorf("current_observations[read_temperature] = %+v, want the dependency's reading, good", o)
		}

		rep = under(manifests.FaultDropout)
		if len(rep.Blocked) != 1 || rep.Blocked[0].Permission != promcp.SourceUnreachable ||
			!strings.Contains(rep.Blocked[0].Reason, "read_temperature") {
			t.Errorf("dead sensor: can_do = %+v, want do_set_pump blocked, source_unreachable, naming read_temperature", rep)
		}
		var do promcp.DoResult
		b.call("do_set_pump", map[string]any{"value": true}, &do)
		if do.Status != promcp.StatusFailed || do.Permission != promcp.SourceUnreachable {
			t.Errorf("dead sensor: do_set_pump = %+v, want failed, source_unreachable", do)
		}

		rep = under(manifests.FaultImplausible)
		if len(rep.Candidates) != 1 || rep.Candidates[0].Permission != promcp.RequiresHumanApproval ||
			!strings.Contains(rep.Candidates[0].Reason, "read_temperature is degraded (implausible") {
			t.Errorf("implausible sensor: can_do = %+v, want do_set_pump requires_human_approval, naming the degraded reading", rep)
		}
		if o := rep.Context.CurrentObservations["read_temperature"]; o.Quality != promcp.QualityDegraded {
			t.Errorf("current_observations[read_temperature].quality = %s, want degraded", o.Quality)
		}

		b.w.Clear("climate")
		b.clk.Advance(ttl)
		if rep := ask(); len(rep.Candidates) != 1 || rep.Candidates[0].Permission != promcp.Allowed {
			t.Errorf("recovered: can_do = %+v, want the pump allowed", rep)
		}
	})
}

// Fan-in through MCP: concurrent read_* and can_do calls within one TTL
// cost one SHT3x measurement (two I²C transactions).
func TestConcurrentCallsShareOneMeasurement(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBench(t, simtest.Manifest(t, faultBench))
		var wg sync.WaitGroup
		results := make([]promcp.ReadResult, 30)
		for i := range results {
			wg.Go(func() {
				if i%3 == 2 {
					var rep promcp.CapabilityReport
					b.call("can_do", map[string]any{"intent": map[string]any{"action": "do_set_pump"}}, &rep)
					results[i].Quality = promcp.QualityGood
					return
				}
				results[i] = b.read("read_temperature", nil)
			})
		}
		wg.Wait()
		for i, r := range results {
			if r.Quality != promcp.QualityGood {
				t.Errorf("call %d: %+v, want good", i, r)
			}
		}
		if got := b.w.Transactions("i2c1"); got != 2 {
			t.Errorf("30 concurrent calls: Transactions(i2c1) = %d, want 2 (one measurement)", got)
		}
	})
}
