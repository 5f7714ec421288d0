package boltstore_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/idempotency"
	"github.com/promcp/promcp-device/idempotency/boltstore"
)

var _ idempotency.Store = (*boltstore.Bolt)(nil)

func openBolt(t *testing.T, path string, clk clock.Clock) *boltstore.Bolt {
	t.Helper()
	b, err := boltstore.OpenBolt(path, time.Second, boltstore.BoltOptions{TTL: time.Hour, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func counting(runs *atomic.Int32, out string, keep bool) idempotency.Action {
	return func(context.Context, idempotency.Attempt) ([]byte, bool, error) {
		runs.Add(1)
		return []byte(out), keep, nil
	}
}

func TestBoltReplaysAcrossReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	var runs atomic.Int32
	b := openBolt(t, path, nil)
	if out, replayed, err := b.Do(t.Context(), "k", "fp", counting(&runs, "first", true)); err != nil || replayed || string(out) != "first" {
		t.Fatalf("first Do = %q, %t, %v", out, replayed, err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = openBolt(t, path, nil)
	defer b.Close()
	out, replayed, err := b.Do(t.Context(), "k", "fp", counting(&runs, "second", true))
	if err != nil || !replayed || string(out) != "first" {
		t.Fatalf("Do after reopen = %q, %t, %v; want the first outcome replayed", out, replayed, err)
	}
	if _, _, err := b.Do(t.Context(), "k", "other", counting(&runs, "x", true)); !errors.Is(err, idempotency.ErrConflict) {
		t.Fatalf("Do with another fingerprint after reopen = %v, want ErrConflict", err)
	}
	if got := runs.Load(); got != 1 {
		t.Fatalf("action ran %d times, want 1", got)
	}
}

func TestBoltDoesNotKeepRefusals(t *testing.T) {
	b := openBolt(t, filepath.Join(t.TempDir(), "state.db"), nil)
	defer b.Close()
	var runs atomic.Int32
	for range 2 {
		if _, replayed, err := b.Do(t.Context(), "k", "a", counting(&runs, "refused", false)); err != nil || replayed {
			t.Fatalf("Do = %t, %v", replayed, err)
		}
	}
	if _, _, err := b.Do(t.Context(), "k", "b", counting(&runs, "ok", true)); err != nil {
		t.Fatalf("after refusals, another fingerprint = %v, want no conflict", err)
	}
	if n, _ := b.Len(); n != 1 || runs.Load() != 3 {
		t.Fatalf("records %d, runs %d; want 1 record and 3 runs", n, runs.Load())
	}
}

func TestBoltRecoversAnAttemptLeftInFlight(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	b := openBolt(t, path, nil)
	if err := boltstore.LeaveInFlight(b, "k", "fp"); err != nil {
		t.Fatal(err)
	}
	b.Close()
	b = openBolt(t, path, nil)
	defer b.Close()
	if _, _, err := b.Do(t.Context(), "k", "other", counting(new(atomic.Int32), "x", true)); !errors.Is(err, idempotency.ErrConflict) {
		t.Fatalf("recovering with another fingerprint = %v, want ErrConflict", err)
	}
	var got []idempotency.Attempt
	act := func(_ context.Context, a idempotency.Attempt) ([]byte, bool, error) {
		got = append(got, a)
		return []byte("observed"), true, nil
	}
	out, replayed, err := b.Do(t.Context(), "k", "fp", act)
	if err != nil || replayed || string(out) != "observed" {
		t.Fatalf("Do on a key left in flight = %q, %t, %v", out, replayed, err)
	}
	if len(got) != 1 || !got[0].Recovering || got[0].Started.IsZero() {
		t.Fatalf("attempts = %+v, want one recovering attempt with its start time", got)
	}
	out, replayed, _ = b.Do(t.Context(), "k", "fp", act)
	if !replayed || string(out) != "observed" || len(got) != 1 {
		t.Fatalf("Do after recovery = %q, %t (runs %d); want the recovered outcome replayed", out, replayed, len(got))
	}
}

func TestBoltExpires(t *testing.T) {
	clk := &manualClock{t: time.Unix(0, 0)}
	b := openBolt(t, filepath.Join(t.TempDir(), "state.db"), clk)
	defer b.Close()
	var runs atomic.Int32
	b.Do(t.Context(), "k", "a", counting(&runs, "x", true))
	clk.Advance(59 * time.Minute)
	b.Do(t.Context(), "k", "a", counting(&runs, "x", true))
	clk.Advance(2 * time.Minute)
	b.Do(t.Context(), "k", "b", counting(&runs, "x", true)) // expired: no conflict
	if runs.Load() != 2 {
		t.Fatalf("runs = %d, want 2", runs.Load())
	}
}

func TestBoltConcurrentDuplicatesRunOnce(t *testing.T) {
	b := openBolt(t, filepath.Join(t.TempDir(), "state.db"), nil)
	defer b.Close()
	const keys, dup = 50, 10
	var runs atomic.Int32
	var wg sync.WaitGroup
	outs := make([][]string, keys)
	for k := range keys {
		outs[k] = make([]string, dup)
		for d := range dup {
			wg.Go(func() {
				key := string(rune('A' + k))
				out, _, err := b.Do(context.Background(), key, "fp", func(context.Context, idempotency.Attempt) ([]byte, bool, error) {
					runs.Add(1)
					return []byte("outcome-" + key), true, nil
				})
				if err != nil {
					t.Error(err)
				}
				outs[k][d] = string(out)
			})
		}
	}
	wg.Wait()
	if got := runs.Load(); got != keys {
		t.Fatalf("actions ran %d times for %d keys × %d duplicates, want %d", got, keys, dup, keys)
	}
	for k := range keys {
		for d := range dup {
			if outs[k][d] != outs[k][0] {
				t.Fatalf("key %d: caller %d got %q, caller 0 got %q", k, d, outs[k][d], outs[k][0])
			}
		}
	}
}

func TestBoltClosed(t *testing.T) {
	b := openBolt(t, filepath.Join(t.TempDir(), "state.db"), nil)
	b.Close()
	if _, _, err := b.Do(t.Context(), "k", "a", counting(new(atomic.Int32), "x", true)); !errors.Is(err, boltstore.ErrClosed) {
		t.Fatalf("Do after Close = %v, want ErrClosed", err)
	}
}

// TestBoltBeginsWhenTheActionSaysSo: the key is in flight, durably, from
// Attempt.Begin on (a process stopping then leaves it to recovery); an
// action that refuses without Begin leaves nothing, and one that began and
// keeps nothing is forgotten.
func TestBoltBeginsWhenTheActionSaysSo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	b := openBolt(t, path, nil)
	defer b.Close()
	n := func() int {
		k, err := b.Len()
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	var before, after int
	if _, _, err := b.Do(t.Context(), "refused", "fp", func(ctx context.Context, a idempotency.Attempt) ([]byte, bool, error) {
		before = n()
		return []byte("no"), false, nil
	}); err != nil || before != 0 || n() != 0 {
		t.Fatalf("a refusal without Begin: %v, %d records during, %d after; want none", err, before, n())
	}
	if _, _, err := b.Do(t.Context(), "acted", "fp", func(ctx context.Context, a idempotency.Attempt) ([]byte, bool, error) {
		before = n()
		if err := a.Begin(ctx); err != nil {
			return nil, false, err
		}
		if err := a.Begin(ctx); err != nil { // a second call does nothing
			return nil, false, err
		}
		after = n()
		return []byte("done"), true, nil
	}); err != nil || before != 0 || after != 1 || n() != 1 {
		t.Fatalf("an action that began: %v, %d records before Begin, %d after, %d at the end; want 0, 1, 1", err, before, after, n())
	}
	if _, _, err := b.Do(t.Context(), "began-then-refused", "fp", func(ctx context.Context, a idempotency.Attempt) ([]byte, bool, error) {
		if err := a.Begin(ctx); err != nil {
			return nil, false, err
		}
		return []byte("no"), false, nil
	}); err != nil || n() != 1 {
		t.Fatalf("began, kept nothing: %v, %d records; want the key forgotten (1 record: acted)", err, n())
	}
}

// manualClock is a clock the test moves.
type manualClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *manualClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

// After never fires: the store only reads the time.
func (c *manualClock) After(time.Duration) <-chan time.Time { return nil }
func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}
