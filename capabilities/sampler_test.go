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

// A failure is shared with the callers of the next second, not of the
// whole maximum age: a source that answers again (a sensor back on the
// bus, the first MQTT message arriving) reads good a second later, while
// a good sample is still served for its whole maximum age.
func TestSamplerServesAFailureForASecondAtMost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var reads atomic.Int32
		s := newSampler(clock.System{}, func(context.Context) (any, []byte, error) {
			if reads.Add(1) == 1 {
				return nil, nil, errors.New("no message yet")
			}
			return 21.5, nil, nil
		})
		get := func() *attempt {
			t.Helper()
			a, _, err := s.get(t.Context(), 30*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			return a
		}
		if a := get(); a.err == nil {
			t.Fatalf("first read: %+v, want the failure", a)
		}
		time.Sleep(900 * time.Millisecond)
		if a := get(); a.err == nil || reads.Load() != 1 {
			t.Fatalf("0.9 s later: %+v after %d reads, want the shared failure", a, reads.Load())
		}
		time.Sleep(200 * time.Millisecond)
		if a := get(); a.err != nil || a.value != 21.5 || reads.Load() != 2 {
			t.Fatalf("1.1 s later: %+v after %d reads, want a new read, good", a, reads.Load())
		}
		time.Sleep(20 * time.Second)
		if a := get(); a.value != 21.5 || reads.Load() != 2 {
			t.Fatalf("a good sample 20 s old: %+v after %d reads, want it served from the cache", a, reads.Load())
		}
	})
}
