// Package clock is the one clock interface of promcp-device: responses,
// readings, idempotency TTLs, bus back-offs, breaker cool-downs and
// inter-frame silences all take a [Clock]. [System] is the real clock (also
// under testing/synctest), [Manual] moves only when a test or a site test
// advances it, and [Scaled] runs a simulation faster than real time.
package clock

import (
	"context"
	"time"
)

// Clock tells the time and waits.
type Clock interface {
	Now() time.Time
	// After returns a channel that receives the time once d has passed on
	// this clock.
	After(d time.Duration) <-chan time.Time
}

// System is the real clock.
type System struct{}

// Now returns time.Now().
func (System) Now() time.Time { return time.Now() }

// After returns time.After(d).
func (System) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Or returns c, or System when c is nil.
func Or(c Clock) Clock {
	if c == nil {
		return System{}
	}
	return c
}

// Sleep waits d on c, returning ctx's error if ctx is done first. A d <= 0
// returns ctx.Err() at once.
func Sleep(ctx context.Context, c Clock, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	select {
	case <-c.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
