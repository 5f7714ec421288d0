package flight_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/promcp/promcp-device/internal/flight"
)

func TestConcurrentCallersShareOneCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g flight.Group[string, int]
		var calls, joined atomic.Int32
		release := make(chan struct{})
		fn := func(context.Context) (int, error) { calls.Add(1); <-release; return 42, nil }
		var wg sync.WaitGroup
		for range 10 {
			wg.Go(func() {
				v, err, j := g.Do(t.Context(), "k", fn)
				if v != 42 || err != nil {
					t.Errorf("Do = %d, %v, want 42, nil", v, err)
				}
				if j {
					joined.Add(1)
				}
			})
		}
		synctest.Wait()
		close(release)
		wg.Wait()
		if calls.Load() != 1 || joined.Load() != 9 {
			t.Fatalf("fn ran %d times with %d joined, want 1 and 9", calls.Load(), joined.Load())
		}
		if _, _, j := g.Do(t.Context(), "k", func(context.Context) (int, error) { return 1, nil }); j {
			t.Fatal("a call after the first ended joined it")
		}
	})
}

func TestOneCallerLeavingDoesNotCancelTheOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g flight.Group[string, int]
		first, cancel := context.WithCancel(t.Context())
		fn := func(ctx context.Context) (int, error) {
			select {
			case <-time.After(time.Second):
				return 7, nil
			case <-ctx.Done():
				return 0, ctx.Err()
			}
		}
		firstErr := make(chan error, 1)
		go func() { _, err, _ := g.Do(first, "k", fn); firstErr <- err }()
		synctest.Wait()
		second := make(chan int, 1)
		go func() { v, _, _ := g.Do(t.Context(), "k", fn); second <- v }()
		synctest.Wait()
		cancel()
		if v := <-second; v != 7 {
			t.Fatalf("the caller that stayed got %d, want 7", v)
		}
		if err := <-firstErr; !errors.Is(err, context.Canceled) {
			t.Fatalf("the caller that left got %v, want its context's error", err)
		}
	})
}

// The call's context ends at the latest of the callers' deadlines.
func TestCallEndsWhenEveryCallerHasGivenUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g flight.Group[string, int]
		start := time.Now()
		ended := make(chan time.Duration, 1)
		fn := func(ctx context.Context) (int, error) {
			<-ctx.Done()
			ended <- time.Since(start)
			return 0, ctx.Err()
		}
		ctx1, c1 := context.WithTimeout(t.Context(), time.Second)
		defer c1()
		ctx2, c2 := context.WithTimeout(t.Context(), 2*time.Second)
		defer c2()
		errs := make(chan error, 2)
		go func() { _, err, _ := g.Do(ctx1, "k", fn); errs <- err }()
		synctest.Wait()
		go func() { _, err, _ := g.Do(ctx2, "k", fn); errs <- err }()
		if got := <-ended; got != 2*time.Second {
			t.Fatalf("the call was cancelled after %s, want 2s (the latest deadline)", got)
		}
		for range 2 {
			if err := <-errs; !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("a caller got %v, want DeadlineExceeded", err)
			}
		}
	})
}

func TestForgetStartsANewCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g flight.Group[string, int]
		release := make(chan struct{})
		go g.Do(t.Context(), "k", func(context.Context) (int, error) { <-release; return 1, nil })
		synctest.Wait()
		g.Forget("k")
		v, _, joined := g.Do(t.Context(), "k", func(context.Context) (int, error) { return 2, nil })
		if v != 2 || joined {
			t.Fatalf("Do after Forget = %d (joined %v), want a new call returning 2", v, joined)
		}
		close(release)
	})
}

func TestDoneContextStartsNothing(t *testing.T) {
	var g flight.Group[string, int]
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err, _ := g.Do(ctx, "k", func(context.Context) (int, error) { t.Fatal("fn ran for a caller that had given up"); return 0, nil })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Do = %v, want Canceled", err)
	}
}

type key struct{}

// A first caller that cannot cancel (context.Background) runs fn under its
// own context, values and all; a joined caller that leaves gets its own
// error and does not end the call, which the first caller still gets.
func TestFirstCallerThatCannotCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g flight.Group[string, int]
		release := make(chan struct{})
		var sawValue, sawDone atomic.Bool
		fn := func(ctx context.Context) (int, error) {
			sawValue.Store(ctx.Value(key{}) == "v")
			select {
			case <-release:
				return 7, nil
			case <-ctx.Done():
				sawDone.Store(true)
				return 0, ctx.Err()
			}
		}
		first := make(chan int, 1)
		go func() {
			v, _, _ := g.Do(context.WithValue(context.Background(), key{}, "v"), "k", fn)
			first <- v
		}()
		synctest.Wait()
		joiner, cancel := context.WithCancel(t.Context())
		joinerErr := make(chan error, 1)
		go func() { _, err, _ := g.Do(joiner, "k", fn); joinerErr <- err }()
		synctest.Wait()
		cancel()
		if err := <-joinerErr; !errors.Is(err, context.Canceled) {
			t.Fatalf("the joined caller that left got %v, want Canceled", err)
		}
		synctest.Wait()
		close(release)
		if v := <-first; v != 7 || sawDone.Load() {
			t.Fatalf("the first caller got %d (call cancelled: %v), want 7 from a call that ran on", v, sawDone.Load())
		}
		if !sawValue.Load() {
			t.Fatal("fn did not see the first caller's values")
		}
		// The next caller that can cancel starts a new call, which ends when
		// it leaves.
		release = make(chan struct{})
		ctx, cancel2 := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { _, err, _ := g.Do(ctx, "k", fn); done <- err }()
		synctest.Wait()
		cancel2()
		if err := <-done; !errors.Is(err, context.Canceled) || !sawDone.Load() {
			t.Fatalf("a lone caller that left got %v (call cancelled: %v), want Canceled and the call cancelled", err, sawDone.Load())
		}
	})
}

// A first caller that cannot cancel costs the call no derived context and
// no registration, and a call nobody joined is reused by the next: the
// uncontended path allocates nothing (it allocated the call each time
// before calls were reused, and a map entry before the first call in
// flight was kept out of the map).
func TestUncancellableCallAllocatesNothing(t *testing.T) {
	var g flight.Group[string, int]
	fn := func(context.Context) (int, error) { return 1, nil }
	ctx := context.Background()
	n := testing.AllocsPerRun(100, func() { g.Do(ctx, "k", fn) })
	if n > 0 { // its done channel is made only for a joiner
		t.Fatalf("Do allocated %v times, want 0", n)
	}
}

// Several keys in flight at once (the first kept apart from the map, the
// others in it), joined, forgotten and finished in any order: every caller
// gets its own key's outcome, and a reused call carries nothing over.
func TestKeysInFlightTogether(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g flight.Group[string, int]
		release := map[string]chan struct{}{"a": make(chan struct{}), "b": make(chan struct{}), "c": make(chan struct{})}
		want := map[string]int{"a": 1, "b": 2, "c": 3}
		var mu sync.Mutex
		calls := map[string]int{}
		fn := func(k string) func(context.Context) (int, error) {
			return func(context.Context) (int, error) {
				mu.Lock()
				calls[k]++
				mu.Unlock()
				<-release[k]
				return want[k], nil
			}
		}
		var wg sync.WaitGroup
		do := func(k string, ctx context.Context) {
			wg.Go(func() {
				if v, err, _ := g.Do(ctx, k, fn(k)); v != want[k] || err != nil {
					t.Errorf("Do(%s) = %d, %v, want %d", k, v, err, want[k])
				}
			})
		}
		for _, k := range []string{"a", "b", "c", "a", "b", "c"} { // each started, then joined
			do(k, context.Background())
			synctest.Wait()
		}
		g.Forget("a") // the first key's call, detached: "a" starts anew
		do("a", context.Background())
		synctest.Wait()
		close(release["b"])
		synctest.Wait()
		do("b", context.Background()) // after "b" ended: a new call of "b"
		close(release["a"])
		close(release["c"])
		wg.Wait()
		if calls["a"] != 2 || calls["b"] != 2 || calls["c"] != 1 {
			t.Fatalf("calls per key %v, want a:2 b:2 c:1", calls)
		}
		// Calls finished with nobody joining them are reused; each still
		// returns its own outcome.
		for i := range 5 {
			k := []string{"a", "b", "c"}[i%3]
			v, err, joined := g.Do(context.Background(), k, func(context.Context) (int, error) { return 10 * i, nil })
			if v != 10*i || err != nil || joined {
				t.Fatalf("Do %d = %d, %v (joined %t), want %d", i, v, err, joined, 10*i)
			}
		}
	})
}

// Nested groups (a capability's sampler over a unit's coalescing of
// identical reads): the inner call goes on while one of its callers still
// waits, even when the outer call that started it has lost all its
// callers, and ends once the last of them leaves.
func TestNestedCallEndsWithItsLastCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var outer flight.Group[string, int]
		var inner flight.Group[string, int]
		var innerCancelled atomic.Bool
		release := make(chan struct{})
		innerFn := func(ctx context.Context) (int, error) {
			select {
			case <-release:
				return 5, nil
			case <-ctx.Done():
				innerCancelled.Store(true)
				return 0, ctx.Err()
			}
		}
		ctxA, cancelA := context.WithCancel(t.Context())
		outerErr := make(chan error, 1)
		go func() {
			_, err, _ := outer.Do(ctxA, "a", func(ctx context.Context) (int, error) {
				v, err, _ := inner.Do(ctx, "span", innerFn)
				return v, err
			})
			outerErr <- err
		}()
		synctest.Wait()
		ctxB, cancelB := context.WithCancel(t.Context())
		joined := make(chan int, 1)
		go func() { v, _, _ := inner.Do(ctxB, "span", innerFn); joined <- v }()
		synctest.Wait()
		cancelA() // the outer call loses its only caller
		synctest.Wait()
		if innerCancelled.Load() {
			t.Fatal("the inner call was cancelled while a caller still waited for it")
		}
		cancelB() // and now the inner call's last caller leaves
		synctest.Wait()
		if !innerCancelled.Load() {
			t.Fatal("the inner call went on after every caller had left")
		}
		// The outer caller's goroutine ran the inner call: it returns now.
		if err := <-outerErr; !errors.Is(err, context.Canceled) {
			t.Fatalf("the outer caller that left got %v, want Canceled", err)
		}
		<-joined
	})
}

// Watch on a call's context runs f when the last caller leaves, not when
// fn returns after Stop; a second watcher is served too; a watcher added
// after the cancel runs at once.
func TestWatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g flight.Group[string, int]
		var first, second, late atomic.Int32
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			defer close(done)
			g.Do(ctx, "k", func(ctx context.Context) (int, error) {
				w1 := flight.Watch(ctx, func() { first.Add(1) })
				w2 := flight.Watch(ctx, func() { second.Add(1) })
				<-ctx.Done()
				synctest.Wait() // the second watcher runs on its own goroutine
				if w1.Stop() || w2.Stop() {
					t.Error("Stop after the cancel reported it stopped the watcher")
				}
				flight.Watch(ctx, func() { late.Add(1) })
				return 0, ctx.Err()
			})
		}()
		synctest.Wait()
		cancel()
		<-done
		if first.Load() != 1 || second.Load() != 1 || late.Load() != 1 {
			t.Fatalf("watchers ran %d, %d, %d times, want once each", first.Load(), second.Load(), late.Load())
		}

		var stopped atomic.Int32
		g.Do(t.Context(), "k", func(ctx context.Context) (int, error) {
			w := flight.Watch(ctx, func() { stopped.Add(1) })
			if !w.Stop() {
				t.Error("Stop before the cancel did not stop the watcher")
			}
			return 0, nil
		})
		if flight.Watch(context.Background(), func() { t.Error("a watcher of Background ran") }).Stop() != true {
			t.Error("Stop of a watcher of Background reported it had run")
		}
		if stopped.Load() != 0 {
			t.Fatal("a stopped watcher ran when its call ended")
		}
	})
}

// A call's context, under a first caller that can cancel: it carries the
// caller's values, has no deadline, and is not done while a caller waits;
// once the last caller leaves it is done with context.Canceled, and so
// are the contexts derived from it and the functions registered on it
// (the watch slot, a second watch, context.AfterFunc).
func TestCallContextEndsWithItsCallers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g flight.Group[string, int]
		caller, cancel := context.WithCancel(context.WithValue(t.Context(), key{}, "v"))
		var ran atomic.Int32
		var derived context.Context
		var stopDerived context.CancelFunc
		var before error
		var hasDeadline bool
		fn := func(ctx context.Context) (int, error) {
			if ctx.Value(key{}) != "v" {
				t.Error("the call's context lost the caller's value")
			}
			_, hasDeadline = ctx.Deadline()
			before = ctx.Err()
			derived, stopDerived = context.WithTimeout(ctx, time.Hour)
			flight.Watch(ctx, func() { ran.Add(1) }) // the slot
			flight.Watch(ctx, func() { ran.Add(1) }) // a second: context.AfterFunc
			context.AfterFunc(ctx, func() { ran.Add(1) })
			stopped := context.AfterFunc(ctx, func() { t.Error("a stopped AfterFunc ran") })
			if !stopped() {
				t.Error("stopping a pending AfterFunc reported false")
			}
			<-ctx.Done()
			return 0, ctx.Err()
		}
		errc := make(chan error, 1)
		go func() { _, err, _ := g.Do(caller, "k", fn); errc <- err }()
		synctest.Wait()
		if before != nil || hasDeadline || derived.Err() != nil {
			t.Fatalf("while a caller waits: Err %v, deadline %t, derived %v; want none", before, hasDeadline, derived.Err())
		}
		cancel()
		synctest.Wait()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Fatalf("the caller that left got %v, want Canceled", err)
		}
		if !errors.Is(derived.Err(), context.Canceled) || !errors.Is(context.Cause(derived), context.Canceled) {
			t.Fatalf("derived context: %v (cause %v), want Canceled", derived.Err(), context.Cause(derived))
		}
		if n := ran.Load(); n != 3 {
			t.Fatalf("%d of 3 functions registered on the call's context ran", n)
		}
		stopDerived()
	})
}

// Nested calls under a caller that can cancel: the inner call and a
// watcher of its context cost no registration on the outer context.
func TestNestedCancellableCallAllocations(t *testing.T) {
	var outer, inner flight.Group[string, int]
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	nop := func() {}
	innerFn := func(ctx context.Context) (int, error) {
		w := flight.Watch(ctx, nop)
		w.Stop()
		return 1, nil
	}
	outerFn := func(ctx context.Context) (int, error) {
		v, err, _ := inner.Do(ctx, "k", innerFn)
		return v, err
	}
	n := testing.AllocsPerRun(100, func() { outer.Do(ctx, "k", outerFn) })
	t.Logf("%v allocations per nested call", n)
	// Per call: the call, WithoutCancel and the leave closure (3 each),
	// and the outer's context.AfterFunc on ctx (2); 12 when each call ran
	// under context.WithCancel, 20 when the calls made their done channels
	// up front and the inner call and the watcher registered on the
	// outer's context with context.AfterFunc.
	if n > 8 {
		t.Fatalf("a nested cancellable call allocated %v times, want at most 8", n)
	}
}
