package manifests

import "time"

// Observe tunes the updates a subscription to a capability's resource
// (promcp://<gateway>/capabilities/<name>) receives. The zero value applies
// the defaults: any change is sent, at most DefaultObserveRate, the
// capability sampled every TTL while someone is subscribed.
type Observe struct {
	// Deadband is the change, in the capability's unit, a value must
	// exceed (against the last value sent) to be sent again; zero sends
	// every change. Number and integer capabilities only. A change of
	// quality is always sent, whatever the deadband and the rate.
	Deadband float64
	// MaxRate bounds the updates of one subscription: at most Max per Per
	// (written "1/s", "10/min"); nil means DefaultObserveRate.
	MaxRate *RateLimit
	// Every is how often a subscribed capability is sampled (through the
	// cache: a sample younger than the TTL is not read again); zero means
	// the TTL.
	Every time.Duration
}

// History tunes the recent samples a capability keeps, served as the
// resource template promcp://<gateway>/history/<name>{?since,step,agg}.
type History struct {
	// Ring is how many samples are kept in memory; zero means
	// DefaultHistoryRing.
	Ring int
	// Retention is how long samples are kept on disk under --state; zero
	// means DefaultHistoryRetention.
	Retention time.Duration
	// Every samples the capability in the background at this interval,
	// subscribed or not (through the cache); zero means no background
	// sampling: the history holds the samples reads and subscriptions took.
	Every time.Duration
}

// Observation and history defaults.
var (
	// DefaultObserveRate is the most updates one subscription receives.
	DefaultObserveRate = RateLimit{Max: 1, Per: time.Second}
)

const (
	// DefaultHistoryRing is how many samples a capability keeps in memory.
	DefaultHistoryRing = 720
	// DefaultHistoryRetention is how long samples stay on disk.
	DefaultHistoryRetention = 24 * time.Hour
	// MaxHistoryRing bounds Ring (memory: about 64 bytes a sample).
	MaxHistoryRing = 100000
	// MaxHistoryRetention bounds Retention.
	MaxHistoryRetention = 366 * 24 * time.Hour
)

// Rate returns MaxRate with the default applied.
func (o Observe) Rate() RateLimit {
	if o.MaxRate != nil {
		return *o.MaxRate
	}
	return DefaultObserveRate
}

// RingSize returns Ring with the default applied.
func (h History) RingSize() int {
	if h.Ring > 0 {
		return h.Ring
	}
	return DefaultHistoryRing
}

// Keep returns Retention with the default applied.
func (h History) Keep() time.Duration {
	if h.Retention > 0 {
		return h.Retention
	}
	return DefaultHistoryRetention
}

var (
	observeKeys = []string{"deadband", "max_rate", "every"}
	historyKeys = []string{"ring", "retention", "every"}
)

func (o obj) observe(ob *Observe) {
	numIf(o, "deadband", &ob.Deadband, notNegative, ": %g (want 0 or more, in the capability's unit)")
	if s, ok := o.strOK("max_rate"); ok {
		ob.MaxRate = parseRate(o, "max_rate", s)
	}
	ob.Every = o.dur("every")
}

func (o obj) history(h *History) {
	intIn(o, "ring", &h.Ring, 1, MaxHistoryRing, ": %d (want 1..%d samples)", MaxHistoryRing)
	h.Retention = o.dur("retention")
	if h.Retention > MaxHistoryRetention {
		o.add("retention", ErrRange, ": %s (want at most 366 days, 8784h)", h.Retention)
	}
	h.Every = o.dur("every")
}

// observe checks the observation options against the capability's type:
// a deadband needs a number.
func (c *checker) observe(cp *Capability, path string) {
	numeric := cp.Type == TypeNumber || cp.Type == TypeInteger
	if numeric || cp.Type == "" {
		return
	}
	c.notAllowed(join(path, "observe"), []string{"deadband"}, "for type %s (only number and integer have a deadband; every change is sent)", cp.Type)
}
