package sim

import (
	"sync"
	"time"

	"github.com/promcp/promcp-device/clock"
)

// Clock tells the simulated time and waits on it.
type Clock = clock.Clock

// ManualClock is a Clock that moves only when told to: channels from After
// fire when Advance reaches their instant. It is safe for concurrent use.
type ManualClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []waiter
}

type waiter struct {
	at time.Time
	ch chan time.Time
}

// NewManualClock returns a ManualClock reading start.
func NewManualClock(start time.Time) *ManualClock {
	return &ManualClock{now: start}
}

// Now returns the clock's current time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// After returns a channel that receives the clock's time once Advance has
// moved it d past now; d <= 0 fires at once.
func (c *ManualClock) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, waiter{at: c.now.Add(d), ch: ch})
	return ch
}

// Waiting returns how many After channels have not fired yet, so that a
// test can advance the clock once the code under test waits on it.
func (c *ManualClock) Waiting() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.waiters)
}

// Advance moves the clock forward by d, firing the After channels it
// reaches; a negative d is ignored.
func (c *ManualClock) Advance(d time.Duration) {
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

// ScaledClock is a Clock that runs scale times faster than real time,
// starting at the real instant it was created. It is safe for concurrent use.
type ScaledClock struct {
	start  time.Time // real instant of creation
	origin time.Time // simulated instant at start
	scale  float64
}

// NewScaledClock returns a clock anchored at the current real time that
// advances scale simulated seconds per real second; scale <= 0 means 1
// (manifests.Sim.TimeScale uses 0 for 1 too).
func NewScaledClock(scale float64) *ScaledClock {
	if scale <= 0 {
		scale = 1
	}
	now := time.Now()
	return &ScaledClock{start: now, origin: now, scale: scale}
}

// NewScaledClockAt is NewScaledClock starting at the simulated instant
// origin instead of now, to simulate another time of day.
func NewScaledClockAt(origin time.Time, scale float64) *ScaledClock {
	c := NewScaledClock(scale)
	c.origin = origin
	return c
}

// After returns a channel that receives the clock's time once d of
// simulated time has passed (d/scale of real time).
func (c *ScaledClock) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	time.AfterFunc(time.Duration(float64(d)/c.scale), func() { ch <- c.Now() })
	return ch
}

// Now returns origin + scale × (real time elapsed since creation).
func (c *ScaledClock) Now() time.Time {
	elapsed := time.Since(c.start)
	return c.origin.Add(time.Duration(float64(elapsed) * c.scale))
}
