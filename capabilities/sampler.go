package capabilities

import (
	"context"
	"sync"
	"time"

	"github.com/promcp/promcp-device/clock"
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
	// time is when the sample was taken: the clock when the transaction
	// completed. On error, when the attempt ended.
	time    time.Time
	err     error
	latency time.Duration // as measured in real time
}

// sampler reads one source and shares the outcome: an attempt younger than
// the caller's maximum age is served again without touching the bus, and
// callers that arrive while a transaction is in flight wait for it instead
// of starting another. Under any fan-in a source sees at most one
// transaction per maximum age. Failed attempts are shared too: a dead
// sensor is not hammered by every caller.
//
// A sampler is safe for concurrent use.
type sampler struct {
	clock clock.Clock
	read  func(ctx context.Context) (any, error)

	mu     sync.Mutex
	seq    uint64
	gen    uint64   // incremented by invalidate
	last   *attempt // nil before the first attempt and after invalidate
	flight *flight  // the transaction in progress, if any
}

type flight struct {
	done chan struct{}
	gen  uint64 // the sampler's gen when the transaction started
	a    *attempt
}

func newSampler(clk clock.Clock, read func(ctx context.Context) (any, error)) *sampler {
	return &sampler{clock: clk, read: read}
}

// get returns the latest attempt if it is younger than maxAge, and
// otherwise the outcome of a new transaction (or of the one in flight).
// maxAge 0 always waits for a transaction that has not completed yet.
//
// The transaction runs detached from ctx's cancellation (it is bounded by
// the bus timeout), so that one caller giving up does not fail the others.
// The caller that starts it runs it in its own goroutine (no hand-off on
// the common, uncontended path) and so returns when it ends, within the
// bus timeout; a caller that joins a transaction in flight returns ctx's
// error as soon as ctx is done.
func (s *sampler) get(ctx context.Context, maxAge time.Duration) (*attempt, error) {
	s.mu.Lock()
	if a := s.last; a != nil && maxAge > 0 && s.clock.Now().Sub(a.time) < maxAge {
		s.mu.Unlock()
		return a, nil
	}
	f := s.flight
	if f == nil {
		f = &flight{done: make(chan struct{}), gen: s.gen}
		s.flight = f
		s.mu.Unlock()
		if err := ctx.Err(); err != nil {
			// Never start a transaction for a caller that has given up;
			// release the flight for the next caller.
			s.abandon(f, err)
			return nil, err
		}
		s.run(context.WithoutCancel(ctx), f)
		return f.a, nil
	}
	s.mu.Unlock()
	select {
	case <-f.done:
		return f.a, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *sampler) run(ctx context.Context, f *flight) {
	start := time.Now()
	v, err := s.read(ctx)
	lat := time.Since(start)
	s.mu.Lock()
	s.seq++
	f.a = &attempt{seq: s.seq, value: v, time: s.clock.Now(), err: err, latency: lat}
	if err != nil {
		f.a.value = nil
	}
	if f.gen == s.gen {
		s.last = f.a // a transaction that started before a write is not cached
	}
	if s.flight == f {
		s.flight = nil
	}
	s.mu.Unlock()
	close(f.done)
}

// abandon ends flight f without a transaction: the waiters that joined it
// get err as the attempt's error, and nothing is cached.
func (s *sampler) abandon(f *flight, err error) {
	s.mu.Lock()
	s.seq++
	f.a = &attempt{seq: s.seq, time: s.clock.Now(), err: err}
	if s.flight == f {
		s.flight = nil
	}
	s.mu.Unlock()
	close(f.done)
}

// invalidate drops the cached attempt and detaches any transaction in
// flight, so that the next get reads the device anew: after a write, a
// readback must not be served from before it.
func (s *sampler) invalidate() {
	s.mu.Lock()
	s.gen++
	s.last = nil
	s.flight = nil
	s.mu.Unlock()
}
