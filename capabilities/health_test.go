package capabilities

import (
	"fmt"
	"testing"
	"time"

	"github.com/promcp/promcp-device/drivers"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/promcp"
)

var t0 = time.Date(2026, 3, 1, 6, 0, 0, 0, time.UTC)

// step is one attempt fed to a tracker: at t0+at, a value or an error.
type step struct {
	at  time.Duration
	v   any
	err error
}

func ok(at time.Duration, v any) step       { return step{at: at, v: v} }
func fail(at time.Duration, err error) step { return step{at: at, err: err} }

var (
	errTimeout = fmt.Errorf("i2c i2c1 addr 0x44: %w after 100ms", drivers.ErrTimeout)
	errNACK    = fmt.Errorf("i2c i2c1 addr 0x44: %w", drivers.ErrNACK)
	errCRC     = fmt.Errorf("sht3x measure: %w", drivers.ErrCRC)
)

// The quality rules, in precedence order, on a tracker fed attempt by
// attempt; the reading is taken at the last attempt's time.
func TestQualityRules(t *testing.T) {
	const ttl = 2 * time.Second
	s := time.Second
	full := manifests.Health{Plausible: &manifests.Range{Min: -10, Max: 60}, MaxRate: 0.5,
		StuckSamples: 3, MaxStale: 10 * time.Second}
	for _, tc := range []struct {
		name     string
		cfg      manifests.Health
		unit     string
		steps    []step
		want     promcp.Quality
		wantV    any
		wantTime time.Duration // the reading's sample time, from t0
		reason   string
	}{
		{"good", full, "°C", []step{ok(0, 20.5)}, promcp.QualityGood, 20.5, 0, ""},
		{"implausible", full, "°C", []step{ok(0, 20.0), ok(2*s, 130.0)}, promcp.QualityDegraded, 130.0, 2 * s,
			"implausible: 130 °C outside -10..60 °C"},
		{"implausible wins over jump", full, "°C", []step{ok(0, 20.0), ok(2*s, -40.0)}, promcp.QualityDegraded, -40.0, 2 * s,
			"implausible: -40 °C outside -10..60 °C"},
		{"jump", full, "°C", []step{ok(0, 20.0), ok(2*s, 25.0)}, promcp.QualityDegraded, 25.0, 2 * s,
			"jump: 2.5 °C/s exceeds 0.5 °C/s"},
		{"a genuine step is accepted on the next sample", full, "°C", []step{ok(0, 20.0), ok(2*s, 25.0), ok(4*s, 25.1)},
			promcp.QualityGood, 25.1, 4 * s, ""},
		{"first clean sample after a burst is good", full, "°C", []step{ok(0, 20.0), ok(2*s, 25.0), ok(4*s, 15.0), ok(6*s, 20.1)},
			promcp.QualityGood, 20.1, 6 * s, ""},
		{"rate judged over at least one TTL", full, "°C", []step{ok(0, 20.0), ok(10*time.Millisecond, 20.9)},
			promcp.QualityGood, 20.9, 10 * time.Millisecond, ""},
		{"stuck after 3 identical samples", full, "°C", []step{ok(0, 20.0), ok(2*s, 20.01), ok(4*s, 20.01), ok(6*s, 20.01)},
			promcp.QualityDegraded, 20.01, 6 * s, "stuck: unchanged for 4 s (3 samples)"},
		{"2 identical samples are not stuck", full, "°C", []step{ok(0, 20.0), ok(2*s, 20.01), ok(4*s, 20.01)},
			promcp.QualityGood, 20.01, 4 * s, ""},
		{"stuck needs stuck_for too", manifests.Health{StuckSamples: 2, StuckFor: 60 * s}, "°C",
			[]step{ok(0, 20.0), ok(30*s, 20.0)}, promcp.QualityGood, 20.0, 30 * s, ""},
		{"stuck for a duration", manifests.Health{StuckFor: 60 * s}, "°C",
			[]step{ok(0, 20.0), ok(30*s, 20.0), ok(60*s, 20.0)}, promcp.QualityDegraded, 20.0, 60 * s, "stuck: unchanged for 60 s (3 samples)"},
		{"no stuck check by default", manifests.Health{}, "°C",
			[]step{ok(0, 20.0), ok(2*s, 20.0), ok(4*s, 20.0), ok(6*s, 20.0)}, promcp.QualityGood, 20.0, 6 * s, ""},
		{"boolean chatter", manifests.Health{MaxRate: 0.2}, "",
			[]step{ok(0, false), ok(2*s, true)}, promcp.QualityDegraded, true, 2 * s, "jump: 0.5/s exceeds 0.2/s"},
		{"timeout: stale last good", full, "°C", []step{ok(0, 20.0), fail(3*s, errTimeout)},
			promcp.QualityStale, 20.0, 0, "read failed (timeout); last good value from 3 s ago"},
		{"crc: stale last good", full, "°C", []step{ok(0, 20.0), fail(3*s, errCRC)},
			promcp.QualityStale, 20.0, 0, "read failed (crc); last good value from 3 s ago"},
		{"stale serves the last good, not the last degraded", full, "°C", []step{ok(0, 20.0), ok(2*s, 130.0), fail(4*s, errTimeout)},
			promcp.QualityStale, 20.0, 0, "read failed (timeout); last good value from 4 s ago"},
		{"beyond max_stale: error", full, "°C", []step{ok(0, 20.0), fail(11*s, errTimeout)},
			promcp.QualityError, nil, 11 * s, "read failed (timeout); last good value is 11 s old (served stale for at most 10 s)"},
		{"failure without a last good: error", full, "°C", []step{fail(0, errTimeout)},
			promcp.QualityError, nil, 0, "read failed (timeout)"},
		{"nack: error by default", full, "°C", []step{ok(0, 20.0), fail(2*s, errNACK)},
			promcp.QualityError, nil, 2 * s, "read failed (nack)"},
		{"nack with on_device_error degraded", manifests.Health{OnDeviceError: manifests.DeviceErrorIsDegraded}, "°C",
			[]step{ok(0, 20.0), fail(2*s, errNACK)}, promcp.QualityDegraded, 20.0, 0, "device error (nack); last good value from 2 s ago"},
		{"good again after failures", full, "°C", []step{ok(0, 20.0), fail(2*s, errTimeout), fail(4*s, errNACK), ok(6*s, 20.2)},
			promcp.QualityGood, 20.2, 6 * s, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := newTracker(tc.cfg, ttl, tc.unit)
			var a *attempt
			for i, st := range tc.steps {
				a = &attempt{seq: uint64(i + 1), value: st.v, time: t0.Add(st.at), err: st.err}
				if !k.observe(a, st.v) {
					t.Fatalf("observe(attempt %d) = false, want true", i+1)
				}
			}
			if k.observe(a, a.value) {
				t.Errorf("observe(attempt %d) again = true, want false", a.seq)
			}
			r := k.reading(a, a.value, a.time)
			if r.Quality != tc.want || r.Value != tc.wantV || !r.Time.Equal(t0.Add(tc.wantTime)) || r.Reason != tc.reason {
				t.Errorf("reading = %v %s at +%v %q\nwant %v %s at +%v %q", r.Value, r.Quality, r.Time.Sub(t0), r.Reason,
					tc.wantV, tc.want, tc.wantTime, tc.reason)
			}
		})
	}
}

func TestHealthCounters(t *testing.T) {
	k := newTracker(manifests.Health{}, time.Second, "°C")
	steps := []step{ok(0, 1.0), fail(time.Second, errTimeout), fail(2*time.Second, errCRC), fail(3*time.Second, errNACK), ok(4*time.Second, 1.5)}
	for i, st := range steps {
		k.observe(&attempt{seq: uint64(i + 1), value: st.v, time: t0.Add(st.at), err: st.err, latency: 10 * time.Millisecond}, st.v)
	}
	h := k.snapshot(t0.Add(4 * time.Second))
	want := Health{Transactions: 5, Failures: 3, Timeouts: 1, NACKs: 1, CRCErrors: 1, FailureRate: 0.6,
		LastGood: 1.5, LastGoodTime: t0.Add(4 * time.Second), LastError: errNACK, LastErrorTime: t0.Add(3 * time.Second),
		Latency: 10 * time.Millisecond}
	if h != want {
		t.Errorf("snapshot() = %+v\nwant %+v", h, want)
	}
	if h := k.snapshot(t0.Add(2 * time.Minute)); h.FailureRate != 0 {
		t.Errorf("snapshot(2 min later).FailureRate = %v, want 0 (outside the window)", h.FailureRate)
	}
}
