package modbus

import (
	"context"
	"time"
)

// Clock tells the time and waits; back-offs, circuit-breaker cool-downs and
// inter-frame silences use it. Tests run under testing/synctest with
// [SystemClock] or pass their own.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

// SystemClock is the real clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// After returns time.After(d).
func (SystemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// sleep waits d on clk, returning ctx's error if ctx is done first.
func sleep(ctx context.Context, clk Clock, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	select {
	case <-clk.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
