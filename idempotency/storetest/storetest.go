// Package storetest is the conformance suite every [idempotency.Store]
// passes: the memory store and the bbolt store run the same tests, and a
// new implementation calls [Run] from its own tests.
//
// Run checks what callers of Store.Do rely on: a kept outcome is replayed
// and its action runs once, also under concurrent duplicates; a reused key
// with other arguments is a conflict; a refusal is not kept; an error is
// returned as is and keeps nothing; an outcome expires after the store's
// TTL; a waiter's context ends its wait. What only a durable store does
// (surviving a restart, recovering a key left in flight) stays in that
// implementation's own tests.
package storetest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/idempotency"
)

// TTL is how long the store under test must keep an outcome.
const TTL = time.Hour

// Open returns an empty store that keeps outcomes for [TTL] by clk and is
// closed when the test ends.
type Open func(t *testing.T, clk *clock.Manual) idempotency.Store

// Run runs the suite on stores that open returns.
func Run(t *testing.T, open Open) {
	for _, tc := range []struct {
		name string
		test func(*testing.T, idempotency.Store, *clock.Manual)
	}{
		{"ReplaysKeptOutcome", replaysKeptOutcome},
		{"Conflict", conflict},
		{"DoesNotKeepRefusals", doesNotKeepRefusals},
		{"ErrorKeepsNothing", errorKeepsNothing},
		{"Expires", expires},
		{"ConcurrentDuplicatesRunOnce", concurrentDuplicatesRunOnce},
		{"WaiterHonoursContext", waiterHonoursContext},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewManual(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
			tc.test(t, open(t, clk), clk)
		})
	}
}

// Counting returns an action that counts its runs and returns out, kept
// or not.
func Counting(runs *atomic.Int32, out string, keep bool) idempotency.Action {
	return func(context.Context, idempotency.Attempt) ([]byte, bool, error) {
		runs.Add(1)
		return []byte(out), keep, nil
	}
}

func replaysKeptOutcome(t *testing.T, s idempotency.Store, _ *clock.Manual) {
	var runs atomic.Int32
	out, replayed, err := s.Do(t.Context(), "k", "fp", Counting(&runs, `{"n":1}`, true))
	if err != nil || replayed || string(out) != `{"n":1}` {
		t.Fatalf("first Do = %q, %t, %v; want the outcome, not replayed", out, replayed, err)
	}
	out, replayed, err = s.Do(t.Context(), "k", "fp", Counting(&runs, `{"n":2}`, true))
	if err != nil || !replayed || string(out) != `{"n":1}` {
		t.Fatalf("second Do = %q, %t, %v; want the first outcome, replayed", out, replayed, err)
	}
	if got := runs.Load(); got != 1 {
		t.Fatalf("action ran %d times, want 1", got)
	}
}

func conflict(t *testing.T, s idempotency.Store, _ *clock.Manual) {
	var runs atomic.Int32
	if _, _, err := s.Do(t.Context(), "k", "a", Counting(&runs, "x", true)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Do(t.Context(), "k", "b", Counting(&runs, "y", true)); !errors.Is(err, idempotency.ErrConflict) || runs.Load() != 1 {
		t.Fatalf("Do with another fingerprint = %v, runs %d; want ErrConflict and no run", err, runs.Load())
	}
}

func doesNotKeepRefusals(t *testing.T, s idempotency.Store, _ *clock.Manual) {
	var runs atomic.Int32
	for range 2 {
		if out, replayed, err := s.Do(t.Context(), "k", "a", Counting(&runs, "refused", false)); err != nil || replayed || string(out) != "refused" {
			t.Fatalf("Do = %q, %t, %v; want the refusal, not replayed", out, replayed, err)
		}
	}
	if runs.Load() != 2 {
		t.Fatalf("refusing action ran %d times, want 2 (refusals are evaluated afresh)", runs.Load())
	}
	// A refused key may later be used with other arguments.
	if out, replayed, err := s.Do(t.Context(), "k", "b", Counting(&runs, "ok", true)); err != nil || replayed || string(out) != "ok" {
		t.Fatalf("after a refusal, another fingerprint = %q, %t, %v; want it run, no conflict", out, replayed, err)
	}
}

func errorKeepsNothing(t *testing.T, s idempotency.Store, _ *clock.Manual) {
	boom := errors.New("bus fault")
	if _, _, err := s.Do(t.Context(), "k", "a", func(context.Context, idempotency.Attempt) ([]byte, bool, error) {
		return nil, true, boom
	}); !errors.Is(err, boom) {
		t.Fatalf("Do with a failing action = %v, want its error", err)
	}
	var runs atomic.Int32
	if out, replayed, err := s.Do(t.Context(), "k", "b", Counting(&runs, "ok", true)); err != nil || replayed || string(out) != "ok" || runs.Load() != 1 {
		t.Fatalf("after an error, another fingerprint = %q, %t, %v (runs %d); want it run afresh", out, replayed, err, runs.Load())
	}
}

func expires(t *testing.T, s idempotency.Store, clk *clock.Manual) {
	var runs atomic.Int32
	s.Do(t.Context(), "k", "a", Counting(&runs, "x", true))
	clk.Advance(TTL - time.Minute)
	if _, replayed, err := s.Do(t.Context(), "k", "a", Counting(&runs, "x", true)); err != nil || !replayed {
		t.Fatalf("Do within the TTL = %t, %v; want replayed", replayed, err)
	}
	clk.Advance(2 * time.Minute)
	if _, replayed, err := s.Do(t.Context(), "k", "b", Counting(&runs, "x", true)); err != nil || replayed {
		t.Fatalf("Do with another fingerprint past the TTL = %t, %v; want it run, no conflict", replayed, err)
	}
	if runs.Load() != 2 {
		t.Fatalf("runs = %d, want 2 (once, replay within TTL, once after expiry)", runs.Load())
	}
}

// concurrentDuplicatesRunOnce: 20 keys, each called 10 times at once while
// its first action is held, run once each, and every caller of a key gets
// its one outcome.
func concurrentDuplicatesRunOnce(t *testing.T, s idempotency.Store, _ *clock.Manual) {
	const keys, dup = 20, 10
	var runs atomic.Int32
	release := make(chan struct{})
	var started, wg sync.WaitGroup
	started.Add(keys * dup)
	outs := make([][]string, keys)
	for k := range keys {
		outs[k] = make([]string, dup)
		for d := range dup {
			wg.Go(func() {
				key := string(rune('A' + k))
				started.Done()
				out, _, err := s.Do(context.Background(), key, "fp", func(context.Context, idempotency.Attempt) ([]byte, bool, error) {
					runs.Add(1)
					<-release
					return []byte("outcome-" + key), true, nil
				})
				if err != nil {
					t.Error(err)
				}
				outs[k][d] = string(out)
			})
		}
	}
	started.Wait()
	close(release)
	wg.Wait()
	if got := runs.Load(); got != keys {
		t.Fatalf("actions ran %d times for %d keys × %d duplicates, want %d", got, keys, dup, keys)
	}
	for k := range keys {
		for d := range dup {
			if want := "outcome-" + string(rune('A'+k)); outs[k][d] != want {
				t.Fatalf("key %d: caller %d got %q, want %q", k, d, outs[k][d], want)
			}
		}
	}
}

// waiterHonoursContext: a call that waits for another caller's action on
// the same key returns when its own context ends.
func waiterHonoursContext(t *testing.T, s idempotency.Store, _ *clock.Manual) {
	held, block := make(chan struct{}), make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Do(context.Background(), "k", "fp", func(context.Context, idempotency.Attempt) ([]byte, bool, error) {
			close(held)
			<-block
			return []byte("first"), true, nil
		})
	}()
	defer func() { close(block); <-done }()
	<-held
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var runs atomic.Int32
	if _, _, err := s.Do(ctx, "k", "fp", Counting(&runs, "second", true)); !errors.Is(err, context.Canceled) || runs.Load() != 0 {
		t.Fatalf("Do waiting on a held key with a cancelled context = %v (runs %d), want context.Canceled and no run", err, runs.Load())
	}
}
