package capabilities

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/promcp/promcp-device/drivers"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/promcp"
)

// HealthWindow is the span over which Health.FailureRate is measured.
const HealthWindow = time.Minute

// windowSize bounds the outcomes kept for the failure rate.
const windowSize = 64

// Health is a snapshot of what a capability's tracker has measured since
// the capability was opened. Counters count bus transactions (attempts), not
// reads: a read served from the cache counts nothing.
type Health struct {
	// Transactions counts attempts to read the source.
	Transactions uint64
	// Failures counts failed attempts; Timeouts, NACKs and CRCErrors count
	// those of each driver error class (drivers.ErrTimeout, ErrNACK,
	// ErrCRC). The drivers do not retry, so a failure is one transaction.
	Failures, Timeouts, NACKs, CRCErrors uint64
	// ConsecutiveFailures counts the failed attempts since the last
	// successful one.
	ConsecutiveFailures int
	// FailureRate is the share of attempts that failed in the last
	// HealthWindow (0 when there was none).
	FailureRate float64
	// LastGood is the latest value whose quality was good, and LastGoodTime
	// its sample time; LastGoodTime is zero when there has been none.
	LastGood     any
	LastGoodTime time.Time
	// LastError is the error of the latest failed attempt, at LastErrorTime.
	LastError     error
	LastErrorTime time.Time
	// Latency is the smoothed duration of the source's transactions.
	Latency time.Duration
}

// sample is a successful observation as the tracker remembers it.
type sample struct {
	v any
	f float64 // v as a number (booleans are 0 and 1); NaN for strings
	t time.Time
}

type outcome struct {
	t  time.Time
	ok bool
}

// verdict is the quality of one successful sample, before freshness.
type verdict struct {
	q      promcp.Quality
	reason string
}

// tracker derives a capability's quality from every attempt on its
// source. It is safe for concurrent use.
type tracker struct {
	cfg  manifests.Health // defaults applied
	ttl  time.Duration
	unit string

	mu     sync.Mutex
	seen   uint64 // seq of the last attempt observed
	h      Health
	window []outcome // ring, newest at (next-1)
	next   int
	// prev is the previous successful sample, whatever its verdict, and
	// lastGood the last good one; kept by value (hasPrev, hasGood say
	// whether there is one), so that a sample costs no allocation.
	prev, lastGood   sample
	hasPrev, hasGood bool
	same             int       // length of the run of bit-identical samples ending at prev
	sameSince        time.Time // sample time of the run's first sample
	lastVerdict      verdict   // of prev
	// verdicts remembers the verdicts of the latest successful attempts by
	// seq, for callers that got an attempt just before a newer one landed.
	verdicts [8]struct {
		seq uint64
		v   verdict
	}
}

func newTracker(cfg manifests.Health, ttl time.Duration, unit string) *tracker {
	if cfg.MaxStale <= 0 {
		cfg.MaxStale = manifests.DefaultMaxStale
	}
	if cfg.StuckFor > 0 && cfg.StuckSamples == 0 {
		cfg.StuckSamples = manifests.DefaultStuckSamples
	}
	if cfg.OnDeviceError == "" {
		cfg.OnDeviceError = manifests.DeviceErrorIsError
	}
	return &tracker{cfg: cfg, ttl: ttl, unit: unit}
}

// observe feeds an attempt to the tracker once; v is the capability's
// value picked from the attempt's sample. It reports whether the attempt
// was new.
func (k *tracker) observe(a *attempt, v any) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if a.seq <= k.seen {
		return false
	}
	k.seen = a.seq
	k.h.Transactions++
	if k.h.Latency == 0 {
		k.h.Latency = a.latency
	} else {
		k.h.Latency = (k.h.Latency*7 + a.latency) / 8
	}
	k.push(outcome{a.time, a.err == nil})
	if a.err != nil {
		k.h.Failures++
		k.h.ConsecutiveFailures++
		k.h.LastError, k.h.LastErrorTime = a.err, a.time
		switch {
		case errors.Is(a.err, drivers.ErrTimeout):
			k.h.Timeouts++
		case errors.Is(a.err, drivers.ErrNACK):
			k.h.NACKs++
		case errors.Is(a.err, drivers.ErrCRC):
			k.h.CRCErrors++
		}
		return true
	}
	k.h.ConsecutiveFailures = 0
	s := sample{v: v, f: asNumber(v), t: a.time}
	vd := k.judge(&s)
	if k.hasPrev && identical(k.prev.v, s.v) {
		// The same sample seen again (an MQTT message looked up twice)
		// is not another sample of a stuck value.
		if !s.t.Equal(k.prev.t) {
			k.same++
		}
	} else {
		k.same, k.sameSince = 1, s.t
	}
	if vd.q == promcp.QualityGood {
		if r := k.stuck(s.t); r != "" {
			vd = verdict{promcp.QualityDegraded, r}
		}
	}
	k.prev, k.hasPrev, k.lastVerdict = s, true, vd
	k.verdicts[a.seq%uint64(len(k.verdicts))] = struct {
		seq uint64
		v   verdict
	}{a.seq, vd}
	if vd.q == promcp.QualityGood {
		k.lastGood, k.hasGood = s, true
		k.h.LastGood, k.h.LastGoodTime = s.v, s.t
	}
	return true
}

// judge applies the value checks in precedence order: plausible range,
// then rate of change. Stuck is checked by the caller once the run of
// identical samples is counted.
func (k *tracker) judge(s *sample) verdict {
	if r := k.cfg.Plausible; r != nil && !math.IsNaN(s.f) && (s.f < r.Min || s.f > r.Max) {
		return verdict{promcp.QualityDegraded, fmt.Sprintf("implausible: %s outside %s..%s",
			k.qty(s.f), num(r.Min), k.qty(r.Max))}
	}
	if k.cfg.MaxRate > 0 && k.hasPrev && !math.IsNaN(s.f) {
		// A change is judged over at least one TTL, so that noise between
		// back-to-back forced reads is not mistaken for a jump; and it must
		// be too fast both from the previous sample and from the last good
		// one, so that a genuine step is accepted on the next sample and
		// the first clean sample after a burst is not blamed for it.
		rate := func(o *sample) float64 {
			dt := max(s.t.Sub(o.t), k.ttl, time.Millisecond)
			return math.Abs(s.f-o.f) / dt.Seconds()
		}
		r := rate(&k.prev)
		if k.hasGood {
			r = min(r, rate(&k.lastGood))
		}
		if r > k.cfg.MaxRate {
			return verdict{promcp.QualityDegraded, fmt.Sprintf("jump: %s/s exceeds %s/s", k.qty(round(r, 3)), k.qty(k.cfg.MaxRate))}
		}
	}
	return verdict{q: promcp.QualityGood}
}

// stuck returns the reason a run of identical samples ending at t is
// stuck, or "".
func (k *tracker) stuck(t time.Time) string {
	n := k.cfg.StuckSamples
	if n == 0 || k.same < n {
		return ""
	}
	d := t.Sub(k.sameSince)
	if k.cfg.StuckFor > 0 && d < k.cfg.StuckFor {
		return ""
	}
	return fmt.Sprintf("stuck: unchanged for %s (%d samples)", seconds(d), k.same)
}

// reading derives the reading a caller gets from attempt a at now. a has
// been observed.
func (k *tracker) reading(a *attempt, v any, now time.Time) Reading {
	k.mu.Lock()
	defer k.mu.Unlock()
	if a.err == nil {
		vd := k.lastVerdict
		if e := k.verdicts[a.seq%uint64(len(k.verdicts))]; e.seq == a.seq {
			vd = e.v
		}
		r := Reading{Value: v, Time: a.time, Quality: vd.q, Reason: vd.reason}
		// A sample read earlier than its TTL (a message that arrived long
		// ago) is stale, and error once older than MaxStale.
		if age := now.Sub(a.time); age > k.ttl && vd.q == promcp.QualityGood {
			if age > k.cfg.MaxStale {
				return Reading{Time: a.time, Quality: promcp.QualityError,
					Reason: fmt.Sprintf("no new sample for %s (served stale for at most %s)", seconds(age), seconds(k.cfg.MaxStale))}
			}
			r.Quality, r.Reason = promcp.QualityStale, fmt.Sprintf("no new sample for %s (fresh for %s)", seconds(age), seconds(k.ttl))
		}
		return r
	}
	class := errorClass(a.err)
	failed := Reading{Time: a.time, Quality: promcp.QualityError, Reason: "read failed (" + class + ")", Err: a.err}
	good := k.lastGood
	fresh := k.hasGood && now.Sub(good.t) <= k.cfg.MaxStale
	device := errors.Is(a.err, drivers.ErrNACK) || errors.Is(a.err, drivers.ErrDeviceError)
	switch {
	case device && k.cfg.OnDeviceError == manifests.DeviceErrorIsError:
		return failed
	case fresh && device:
		return Reading{Value: good.v, Time: good.t, Quality: promcp.QualityDegraded, Err: a.err,
			Reason: fmt.Sprintf("device error (%s); last good value from %s ago", class, seconds(now.Sub(good.t)))}
	case fresh:
		return Reading{Value: good.v, Time: good.t, Quality: promcp.QualityStale, Err: a.err,
			Reason: fmt.Sprintf("read failed (%s); last good value from %s ago", class, seconds(now.Sub(good.t)))}
	case k.hasGood:
		failed.Reason += fmt.Sprintf("; last good value is %s old (served stale for at most %s)", seconds(now.Sub(good.t)), seconds(k.cfg.MaxStale))
	}
	return failed
}

// snapshot returns the tracker's measurements at now.
func (k *tracker) snapshot(now time.Time) Health {
	k.mu.Lock()
	defer k.mu.Unlock()
	h := k.h
	var n, bad int
	for _, o := range k.window {
		if !o.t.IsZero() && now.Sub(o.t) <= HealthWindow {
			n++
			if !o.ok {
				bad++
			}
		}
	}
	if n > 0 {
		h.FailureRate = float64(bad) / float64(n)
	}
	return h
}

func (k *tracker) push(o outcome) {
	if len(k.window) < windowSize {
		k.window = append(k.window, o)
		return
	}
	k.window[k.next] = o
	k.next = (k.next + 1) % windowSize
}

// qty formats a quantity with the capability's unit: "850 °C".
func (k *tracker) qty(f float64) string {
	if k.unit == "" {
		return num(f)
	}
	return num(f) + " " + k.unit
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// seconds formats a duration for a reason: "12 s", "2.5 s".
func seconds(d time.Duration) string {
	return num(round(d.Seconds(), 1)) + " s"
}

// errorClass names a failure's driver class for reasons.
func errorClass(err error) string {
	switch {
	case errors.Is(err, drivers.ErrTimeout):
		return "timeout"
	case errors.Is(err, drivers.ErrNACK):
		return "nack"
	case errors.Is(err, drivers.ErrDeviceError):
		return "device error"
	case errors.Is(err, drivers.ErrCRC):
		return "crc"
	case errors.Is(err, drivers.ErrUnavailable):
		return "unavailable"
	}
	return "error"
}

// asNumber converts a value to a float for range and rate checks: numbers
// as they are, booleans as 0 and 1, anything else NaN.
func asNumber(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case int64:
		return float64(x)
	case bool:
		if x {
			return 1
		}
		return 0
	}
	return math.NaN()
}

// identical reports whether two values are bit-identical.
func identical(a, b any) bool {
	fa, okA := a.(float64)
	fb, okB := b.(float64)
	if okA && okB {
		return math.Float64bits(fa) == math.Float64bits(fb)
	}
	return a == b
}
