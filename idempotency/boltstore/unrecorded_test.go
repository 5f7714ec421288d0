package boltstore_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/promcp/promcp-device/audit/audittest"
	"github.com/promcp/promcp-device/idempotency"
	"github.com/promcp/promcp-device/idempotency/boltstore"
)

// TestBoltUnrecordedOutcomeIsReplayedAlike: the action ran, then the disk
// filled and its outcome could not be written. Do says so
// (ErrNotRecorded) with the outcome; a retry with the key returns the same
// outcome and the same error without running the action again; once the
// disk has room the outcome is written, still marked, so that a replay
// after a restart answers alike.
func TestBoltUnrecordedOutcomeIsReplayedAlike(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	b := openBolt(t, path, nil)
	var runs atomic.Int32
	act := func(context.Context, idempotency.Attempt) ([]byte, bool, error) {
		runs.Add(1)
		boltstore.FailWrites(b, syscall.ENOSPC) // the disk fills while the device moves
		return []byte("moved"), true, nil
	}
	out, replayed, err := b.Do(t.Context(), "k", "fp", act)
	if !errors.Is(err, idempotency.ErrNotRecorded) || !errors.Is(err, syscall.ENOSPC) || replayed || string(out) != "moved" {
		t.Fatalf("Do with a full disk = %q, %t, %v; want the outcome with ErrNotRecorded", out, replayed, err)
	}
	for range 2 {
		out, replayed, err = b.Do(t.Context(), "k", "fp", act)
		if !errors.Is(err, idempotency.ErrNotRecorded) || !replayed || string(out) != "moved" {
			t.Fatalf("retry = %q, %t, %v; want the same outcome replayed with ErrNotRecorded", out, replayed, err)
		}
	}
	if _, _, err := b.Do(t.Context(), "k", "other", act); !errors.Is(err, idempotency.ErrConflict) {
		t.Fatalf("another fingerprint = %v, want ErrConflict", err)
	}

	boltstore.FailWrites(b, nil) // space again: the next call writes it
	if _, _, err := b.Do(t.Context(), "k2", "fp", counting(&runs, "other", true)); err != nil {
		t.Fatal(err)
	}
	if n := boltstore.Pending(b); n != 0 {
		t.Fatalf("%d writes still pending once the disk has room", n)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = openBolt(t, path, nil)
	defer b.Close()
	out, replayed, err = b.Do(t.Context(), "k", "fp", act)
	if !errors.Is(err, idempotency.ErrNotRecorded) || !replayed || string(out) != "moved" {
		t.Fatalf("after a restart = %q, %t, %v; want the same outcome replayed with ErrNotRecorded", out, replayed, err)
	}
	if got := runs.Load(); got != 2 { // k once, k2 once
		t.Fatalf("actions ran %d times, want 2", got)
	}
}

// TestBoltUnrecordedOutcomeLostByRestartIsRecovered: with the disk still
// full at the restart, the key was only ever recorded in flight, and the
// next call recovers it instead of actuating again.
func TestBoltUnrecordedOutcomeLostByRestartIsRecovered(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	b := openBolt(t, path, nil)
	_, _, err := b.Do(t.Context(), "k", "fp", func(ctx context.Context, at idempotency.Attempt) ([]byte, bool, error) {
		if err := at.Begin(ctx); err != nil { // in flight, durably, before it acts
			return nil, false, err
		}
		boltstore.FailWrites(b, syscall.ENOSPC)
		return []byte("moved"), true, nil
	})
	if !errors.Is(err, idempotency.ErrNotRecorded) {
		t.Fatalf("Do = %v, want ErrNotRecorded", err)
	}
	b.Close()
	b = openBolt(t, path, nil)
	defer b.Close()
	var recovering bool
	out, _, err := b.Do(t.Context(), "k", "fp", func(_ context.Context, at idempotency.Attempt) ([]byte, bool, error) {
		recovering = at.Recovering
		return []byte("read back"), true, nil
	})
	if err != nil || !recovering || string(out) != "read back" {
		t.Fatalf("after a restart = %q, %v, recovering %t; want a recovery", out, err, recovering)
	}
}

// TestBoltUnforgettableRefusalIsForgotten: a refusal keeps nothing; when
// the disk is too full to delete its in-flight record, a retry must still
// be evaluated afresh, not recovered as if something had moved.
func TestBoltUnforgettableRefusalIsForgotten(t *testing.T) {
	b := openBolt(t, filepath.Join(t.TempDir(), "state.db"), nil)
	defer b.Close()
	var attempts []idempotency.Attempt
	act := func(_ context.Context, at idempotency.Attempt) ([]byte, bool, error) {
		attempts = append(attempts, at)
		boltstore.FailWrites(b, syscall.ENOSPC)
		return []byte("refused"), false, nil
	}
	if _, _, err := b.Do(t.Context(), "k", "fp", act); err != nil {
		t.Fatal(err)
	}
	boltstore.FailWrites(b, nil)
	if _, _, err := b.Do(t.Context(), "k", "fp", act); err != nil {
		t.Fatal(err)
	}
	if len(attempts) != 2 || attempts[1].Recovering {
		t.Fatalf("attempts %+v, want the retry evaluated afresh", attempts)
	}
}

// TestBoltFullTmpfs fills a real 512 KiB tmpfs while the action runs, so
// that bbolt's commit of the outcome fails with ENOSPC. It needs root (or
// CAP_SYS_ADMIN) to mount; elsewhere the injected failures above cover the
// same path.
func TestBoltFullTmpfs(t *testing.T) {
	dir := audittest.Tmpfs(t, "512k")
	b, err := boltstore.OpenBolt(filepath.Join(dir, "state.db"), 0, boltstore.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	filler := filepath.Join(dir, "filler")
	var runs atomic.Int32
	outcome := bytes.Repeat([]byte("x"), 64<<10) // more pages than bbolt has free
	act := func(context.Context, idempotency.Attempt) ([]byte, bool, error) {
		runs.Add(1)
		if err := audittest.Fill(filler); err != nil {
			t.Error(err)
		}
		return outcome, true, nil
	}
	out, replayed, err := b.Do(t.Context(), "k", "fp", act)
	if !errors.Is(err, idempotency.ErrNotRecorded) || !errors.Is(err, syscall.ENOSPC) || replayed || !bytes.Equal(out, outcome) {
		t.Fatalf("Do on a full disk = %d bytes, %t, %v; want the outcome with ErrNotRecorded (ENOSPC)", len(out), replayed, err)
	}
	out, replayed, err = b.Do(t.Context(), "k", "fp", act)
	if !errors.Is(err, idempotency.ErrNotRecorded) || !replayed || !bytes.Equal(out, outcome) {
		t.Fatalf("retry on a full disk = %d bytes, %t, %v; want the same outcome replayed with ErrNotRecorded", len(out), replayed, err)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Do(t.Context(), "k2", "fp", func(context.Context, idempotency.Attempt) ([]byte, bool, error) {
		return []byte("ok"), true, nil
	}); err != nil {
		t.Fatalf("Do once the disk has room: %v", err)
	}
	if n := boltstore.Pending(b); n != 0 {
		t.Fatalf("%d writes still pending once the disk has room", n)
	}
	if runs.Load() != 1 {
		t.Fatalf("action ran %d times, want 1", runs.Load())
	}
}
