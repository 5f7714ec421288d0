package sim_test

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/promcp/promcp-device/sim"
)

func TestManualClock(t *testing.T) {
	c := sim.NewManualClock(epoch)
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			c.Advance(time.Second)
			_ = c.Now()
		})
	}
	wg.Wait()
	c.Advance(-time.Hour) // ignored
	if got := c.Now().Sub(epoch); got != 10*time.Second {
		t.Errorf("after 10 × Advance(1s): %v elapsed, want 10s", got)
	}
}

func TestScaledClock(t *testing.T) {
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
			c := sim.NewScaledClock(tc.scale)
			start := c.Now()
			<-time.After(time.Second)
			if got := c.Now().Sub(start); got != tc.want {
				t.Errorf("NewScaledClock(%v): %v after 1s, want %v", tc.scale, got, tc.want)
			}
		})
	}
}

func TestManualClockAfterFiresOnAdvance(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	c := sim.NewManualClock(t0)
	ch := c.After(time.Minute)
	if c.Waiting() != 1 {
		t.Fatalf("Waiting() = %d after one After, want 1", c.Waiting())
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
	select {
	case <-c.After(0):
	default:
		t.Fatal("After(0) did not fire at once")
	}
}
