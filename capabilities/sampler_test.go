package capabilities

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/promcp/promcp-device/clock"
)

// A shared read ends with the last caller's deadline, not before (one
// caller leaving does not fail the others) and not after (nobody is left to
// want it): the bus is freed as soon as every caller has given up.
func TestSamplerKeepsTheCallersDeadlines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var reads atomic.Int32
		ended := make(chan time.Duration, 1)
		s := newSampler(clock.System{}, func(ctx context.Context) (any, []byte, error) {
			reads.Add(1)
			<-ctx.Done() // a bus that never answers within the callers' patience
			ended <- time.Since(start)
			return nil, nil, ctx.Err()
		})
		short, c1 := context.WithTimeout(t.Context(), time.Second)
		defer c1()
		long, c2 := context.WithTimeout(t.Context(), 3*time.Second)
		defer c2()
		errs := make(chan error, 2)
		go func() { _, _, err := s.get(short, 0); errs <- err }()
		synctest.Wait()
		go func() { _, _, err := s.get(long, 0); errs <- err }()
		if got := <-ended; got != 3*time.Second {
			t.Fatalf("the shared read was cancelled after %s, want 3s (the latest caller's deadline)", got)
		}
		for range 2 {
			if err := <-errs; !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("get = %v, want DeadlineExceeded", err)
			}
		}
		if reads.Load() != 1 {
			t.Fatalf("the source was read %d times, want once", reads.Load())
		}
		// An attempt nobody waited for is not cached: the next caller reads anew.
		s.read = func(context.Context) (any, []byte, error) { return 1.5, nil, nil }
		if a, _, err := s.get(t.Context(), time.Hour); err != nil || a.value != 1.5 {
			t.Fatalf("get after the abandoned read = %+v, %v; want a fresh 1.5", a, err)
		}
	})
}
