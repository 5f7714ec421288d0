package sim

import "time"

// NextWake returns the earliest instant an After channel of the clock
// waits for, and whether one waits: a driver of the clock (a site test)
// advances to it while the code under test waits on the clock, as a
// do_* call's settle time does.
func (c *ManualClock) NextWake() (time.Time, bool) {
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
