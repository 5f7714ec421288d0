package clock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/promcp/promcp-device/clock"
)

func TestSleepWaitsOnTheClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if err := clock.Sleep(t.Context(), clock.System{}, 3*time.Second); err != nil {
			t.Fatalf("Sleep = %v, want nil", err)
		}
		if got := time.Since(start); got != 3*time.Second {
			t.Fatalf("Sleep took %s, want 3s", got)
		}
	})
}

func TestSleepEndsWithTheContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		start := time.Now()
		if err := clock.Sleep(ctx, clock.System{}, time.Hour); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Sleep = %v, want DeadlineExceeded", err)
		}
		if got := time.Since(start); got != time.Second {
			t.Fatalf("Sleep returned after %s, want 1s (the deadline)", got)
		}
		cancel()
		if err := clock.Sleep(ctx, clock.System{}, 0); err == nil {
			t.Fatal("Sleep(0) on a done context = nil, want its error")
		}
	})
}

func TestOrDefaultsToSystem(t *testing.T) {
	if _, ok := clock.Or(nil).(clock.System); !ok {
		t.Fatal("Or(nil) is not System")
	}
	var c clock.Clock = clock.System{}
	if clock.Or(c) != c {
		t.Fatal("Or(c) is not c")
	}
}

func TestScaled(t *testing.T) {
	for _, tc := range []struct {
		scale float64
		want  time.Duration
	}{
		{60, time.Minute},
		{1, time.Second},
		{0, time.Second},
		{-5, time.Second},
		{0.5, 500 * time.Millisecond},
	} {
		synctest.Test(t, func(t *testing.T) {
			c := clock.NewScaled(tc.scale)
			start := c.Now()
			<-time.After(time.Second)
			if got := c.Now().Sub(start); got != tc.want {
				t.Errorf("NewScaled(%v): %v after 1s, want %v", tc.scale, got, tc.want)
			}
		})
	}
}

var t0 = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

func TestManual(t *testing.T) {
	c := clock.NewManual(t0)
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			c.Advance(time.Second)
			_ = c.Now()
		})
	}
	wg.Wait()
	c.Advance(-time.Hour) // ignored
	if got := c.Now().Sub(t0); got != 10*time.Second {
		t.Errorf("after 10 × Advance(1s): %v elapsed, want 10s", got)
	}
}

func TestManualAfterFiresOnAdvance(t *testing.T) {
	c := clock.NewManual(t0)
	ch := c.After(time.Minute)
	if c.Waiting() != 1 {
		t.Fatalf("Waiting() = %d after one After, want 1", c.Waiting())
	}
	if at, ok := c.NextWake(); !ok || !at.Equal(t0.Add(time.Minute)) {
		t.Fatalf("NextWake() = %v, %v, want %v, true", at, ok, t0.Add(time.Minute))
	}
	c.Advance(59 * time.Second)
	select {
	case <-ch:
		t.Fatal("After(1m) fired after 59s")
	default:
	}
	c.Advance(time.Second)
	select {
	case got := <-ch:
		if !got.Equal(t0.Add(time.Minute)) {
			t.Fatalf("After(1m) sent %v, want %v", got, t0.Add(time.Minute))
		}
	default:
		t.Fatal("After(1m) did not fire once the clock reached it")
	}
	if c.Waiting() != 0 {
		t.Fatalf("Waiting() = %d after the wait fired, want 0", c.Waiting())
	}
	if _, ok := c.NextWake(); ok {
		t.Fatal("NextWake() reports a wait after the only one fired")
	}
	select {
	case <-c.After(0):
	default:
		t.Fatal("After(0) did not fire at once")
	}
}

// WaitFor returns once n waits started, and ends with its context when
// they do not.
func TestManualWaitFor(t *testing.T) {
	c := clock.NewManual(t0)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	go func() {
		<-c.After(time.Second)
		<-c.After(time.Second)
	}()
	if err := c.WaitFor(ctx, 1); err != nil {
		t.Fatalf("WaitFor(1) = %v, want nil once a goroutine waits", err)
	}
	c.Advance(time.Second)
	if err := c.WaitFor(ctx, 1); err != nil {
		t.Fatalf("WaitFor(1) = %v, want nil once the second wait starts", err)
	}

	short, stop := context.WithTimeout(t.Context(), time.Millisecond)
	defer stop()
	if err := c.WaitFor(short, 2); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitFor(2) with one waiter = %v, want the context's deadline", err)
	}
}
