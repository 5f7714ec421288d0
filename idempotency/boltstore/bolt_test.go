package boltstore_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/idempotency"
	"github.com/promcp/promcp-device/idempotency/boltstore"
	"github.com/promcp/promcp-device/idempotency/storetest"
)

var _ idempotency.Store = (*boltstore.Bolt)(nil)

// openBolt opens the store at path, keeping outcomes for storetest.TTL by
// clk (nil: the system clock).
func openBolt(t *testing.T, path string, clk clock.Clock) *boltstore.Bolt {
	t.Helper()
	b, err := boltstore.OpenBolt(path, time.Second, boltstore.BoltOptions{TTL: storetest.TTL, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var counting = storetest.Counting

// TestBolt: the bbolt store passes the shared suite; what only a durable
// store does is tested below.
func TestBolt(t *testing.T) {
	storetest.Run(t, func(t *testing.T, clk *clock.Manual) idempotency.Store {
		b := openBolt(t, filepath.Join(t.TempDir(), "state.db"), clk)
		t.Cleanup(func() { b.Close() })
		return b
	})
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
