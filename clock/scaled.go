package clock

import "time"

// Scaled is a Clock that runs scale times faster than real time,
// starting at the real instant it was created. It is safe for concurrent use.
type Scaled struct {
	start  time.Time // real instant of creation
	origin time.Time // simulated instant at start
	scale  float64
}

// NewScaled returns a clock anchored at the current real time that
// advances scale simulated seconds per real second; scale <= 0 means 1
// (a manifest's sim time_scale uses 0 for 1 too).
func NewScaled(scale float64) *Scaled {
	if scale <= 0 {
		scale = 1
	}
	now := time.Now()
	return &Scaled{start: now, origin: now, scale: scale}
}

// NewScaledAt is NewScaled starting at the simulated instant
// origin instead of now, to simulate another time of day.
func NewScaledAt(origin time.Time, scale float64) *Scaled {
	c := NewScaled(scale)
	c.origin = origin
	return c
}

// After returns a channel that receives the clock's time once d of
// simulated time has passed (d/scale of real time).
func (c *Scaled) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	time.AfterFunc(time.Duration(float64(d)/c.scale), func() { ch <- c.Now() })
	return ch
}

// Now returns origin + scale × (real time elapsed since creation).
func (c *Scaled) Now() time.Time {
	elapsed := time.Since(c.start)
	return c.origin.Add(time.Duration(float64(elapsed) * c.scale))
}
