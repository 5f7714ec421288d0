package capabilities

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/internal/flight"
)

// attempt is the outcome of one bus transaction (or one device operation,
// such as an SHT3x measurement, that serves several capabilities).
type attempt struct {
	// seq numbers the attempts of one sampler from 1, so that every
	// capability observes each attempt exactly once.
	seq uint64
	// value is the device's sample (an i2c.Sample for an SHT3x, the
	// engineering value otherwise); nil when err is set.
	value any
	// raw is what the device sent for value, before conversion (see
	// Grounds.Raw); nil when err is set or the model has nothing raw.
	raw []byte
	// time is when the sample was taken: the clock when the transaction
	// completed. On error, when the attempt ended.
	time    time.Time
	err     error
	latency time.Duration // as measured in real time
}

// sampler reads one source and shares the outcome: an attempt younger than
// the caller's maximum age is served again without touching the bus, and
// callers that arrive while a transaction is in flight wait for it instead
// of starting another (flight.Group). Under any fan-in a source sees at
// most one transaction per maximum age. Failed attempts are shared too: a
// dead sensor is not hammered by every caller; but a failure is served
// again for at most failedMaxAge, so that a source that answers again (a
// sensor back on the bus, the first MQTT message arriving) reads good
// within a second rather than after its whole TTL.
//
// A sampler is safe for concurrent use.
type sampler struct {
	clock   clock.Clock
	read    readFunc
	flights flight.Group[struct{}, *attempt]

	mu   sync.Mutex
	seq  uint64
	gen  uint64   // incremented by invalidate
	last *attempt // nil before the first attempt and after invalidate
	// changes, when set, counts every change of last (Set.Changes).
	changes *atomic.Uint64
}

// changed counts a change of last; s.mu is held.
func (s *sampler) changed() {
	if s.changes != nil {
		s.changes.Add(1)
	}
}

// readFunc is one transaction of a source: the value and the bytes the
// device sent for it (raw may be nil; it must not be changed afterwards).
type readFunc func(ctx context.Context) (value any, raw []byte, err error)

// stamped is a value a readFunc returns with its own sample time: a
// message that arrived earlier (MQTT) was sampled when it arrived, not
// when it is looked up.
type stamped struct {
	value any
	at    time.Time
}

func newSampler(clk clock.Clock, read readFunc) *sampler {
	return &sampler{clock: clk, read: read}
}

// get returns the latest attempt if it is younger than maxAge, and
// otherwise the outcome of a new transaction (or of the one in flight).
// maxAge 0 always waits for a transaction that has not completed yet.
// cached is true when the attempt was served from the cache.
//
// The transaction is shared: one caller giving up does not fail the
// others, and it is cancelled once every caller waiting for it has given
// up, so it is bounded by the latest of the callers' deadlines and by the
// bus timeout. A caller whose ctx ends gets ctx's error; the caller that
// started the transaction gets it when the transaction ends.
func (s *sampler) get(ctx context.Context, maxAge time.Duration) (a *attempt, cached bool, err error) {
	if a := s.fresh(maxAge); a != nil {
		return a, true, nil
	}
	a, err, _ = s.flights.Do(ctx, struct{}{}, func(ctx context.Context) (*attempt, error) {
		// A transaction that ended since the check above serves this one:
		// at most one transaction per maximum age.
		if a := s.fresh(maxAge); a != nil {
			return a, nil
		}
		return s.run(ctx), nil
	})
	return a, false, err
}

// failedMaxAge bounds how long a failed attempt is served again.
const failedMaxAge = time.Second

// fresh returns the latest attempt if it is younger than maxAge (a failed
// one: than failedMaxAge too).
func (s *sampler) fresh(maxAge time.Duration) *attempt {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.last
	if a != nil && a.err != nil {
		maxAge = min(maxAge, failedMaxAge)
	}
	if a != nil && maxAge > 0 && s.clock.Now().Sub(a.time) < maxAge {
		return a
	}
	return nil
}

// run performs one transaction. Its attempt is cached unless a write
// invalidated the sampler meanwhile, or every caller gave up on it.
func (s *sampler) run(ctx context.Context) *attempt {
	s.mu.Lock()
	gen := s.gen
	s.mu.Unlock()
	start := time.Now()
	v, raw, err := s.read(ctx)
	lat := time.Since(start)
	at := s.clock.Now()
	if st, ok := v.(stamped); ok {
		v, at = st.value, st.at
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	a := &attempt{seq: s.seq, value: v, raw: raw, time: at, err: err, latency: lat}
	if err != nil {
		a.value, a.raw = nil, nil
	}
	if gen == s.gen && ctx.Err() == nil {
		s.last = a // a transaction that started before a write is not cached
		s.changed()
	}
	return a
}

// invalidate drops the cached attempt and detaches any transaction in
// flight, so that the next get reads the device anew: after a write, a
// readback must not be served from before it.
//
// Forget comes first: a get between the two steps starts a transaction
// after the write, and one that ends before gen moves is dropped with last.
func (s *sampler) invalidate() {
	s.flights.Forget(struct{}{})
	s.mu.Lock()
	s.gen++
	s.last = nil
	s.changed()
	s.mu.Unlock()
}
