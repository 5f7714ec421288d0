package sim

import (
	"time"

	"github.com/promcp/promcp-device/clock"
)

// Clock tells the simulated time and waits on it.
type Clock = clock.Clock

// ManualClock is the clock that moves only when told to: [clock.Manual].
type ManualClock = clock.Manual

// NewManualClock returns a ManualClock reading start.
func NewManualClock(start time.Time) *ManualClock { return clock.NewManual(start) }

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
