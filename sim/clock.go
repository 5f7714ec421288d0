package sim

import (
	"sync"
	"time"
)

// Clock tells the simulated time.
type Clock interface {
	Now() time.Time
}

// ManualClock is a Clock that moves only when told to. It is safe for
// concurrent use.
type ManualClock struct {
	mu  sync.Mutex
	now time.Time
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

// Advance moves the clock forward by d; a negative d is ignored.
func (c *ManualClock) Advance(d time.Duration) {
	if d <= 0 {
		return
	}
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
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

// Now returns origin + scale × (real time elapsed since creation).
func (c *ScaledClock) Now() time.Time {
	elapsed := time.Since(c.start)
	return c.origin.Add(time.Duration(float64(elapsed) * c.scale))
}
