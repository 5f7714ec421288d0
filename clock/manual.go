package clock

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Manual is a Clock that moves only when told to: channels from After fire
// when Advance reaches their instant. Tests and the simulator's site tests
// drive it; it is safe for concurrent use.
type Manual struct {
	mu      sync.Mutex
	now     time.Time
	waiters []waiter
	changed chan struct{} // closed and replaced when a wait starts; nil: none yet
}

type waiter struct {
	at time.Time
	ch chan time.Time
}

// NewManual returns a Manual clock reading start.
func NewManual(start time.Time) *Manual {
	return &Manual{now: start}
}

// Now returns the clock's current time.
func (c *Manual) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// After returns a channel that receives the clock's time once Advance has
// moved it d past now; d <= 0 fires at once.
func (c *Manual) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, waiter{at: c.now.Add(d), ch: ch})
	if c.changed != nil {
		close(c.changed)
	}
	c.changed = make(chan struct{})
	return ch
}

// Waiting returns how many After channels have not fired yet, so that a
// test can advance the clock once the code under test waits on it.
func (c *Manual) Waiting() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.waiters)
}

// WaitFor blocks until at least n After channels wait unfired, or ctx ends:
// a test calls it (with a deadline) before Advance, so that it moves the
// clock only once the code under test waits on it.
func (c *Manual) WaitFor(ctx context.Context, n int) error {
	for {
		c.mu.Lock()
		if c.changed == nil {
			c.changed = make(chan struct{})
		}
		got, changed := len(c.waiters), c.changed
		c.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("%d waiting on the clock, want %d: %w", got, n, ctx.Err())
		}
	}
}

// NextWake returns the earliest instant an After channel of the clock
// waits for, and whether one waits: a driver of the clock (a site test)
// advances to it while the code under test waits on the clock, as a
// do_* call's settle time does.
func (c *Manual) NextWake() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var at time.Time
	for _, w := range c.waiters {
		if at.IsZero() || w.at.Before(at) {
			at = w.at
		}
	}
	return at, !at.IsZero()
}

// Advance moves the clock forward by d, firing the After channels it
// reaches; a negative d is ignored.
func (c *Manual) Advance(d time.Duration) {
	if d <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if w.at.After(c.now) {
			kept = append(kept, w)
			continue
		}
		w.ch <- c.now
	}
	clear(c.waiters[len(kept):])
	c.waiters = kept
}
