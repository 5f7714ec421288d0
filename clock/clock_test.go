package clock_test

import (
	"context"
	"errors"
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
