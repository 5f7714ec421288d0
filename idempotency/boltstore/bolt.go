// Package boltstore is the durable idempotency.Store: outcomes kept in a
// bbolt file, so that a retry after a restart is answered, not re-run. It
// is its own package so that the proMCP library (server) sees only the
// idempotency interfaces, not bbolt.
package boltstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/idempotency"
	"github.com/promcp/promcp-device/internal/boltdb"
	"github.com/promcp/promcp-device/internal/positive"
)

// ErrClosed is returned by Do once the store is closed.
var ErrClosed = errors.New("idempotency store is closed")

var keysBucket = []byte("keys")

// record is what Bolt keeps per key, JSON-encoded.
type record struct {
	Fingerprint string    `json:"fp"`
	State       string    `json:"state"` // stateInFlight or stateDone
	Started     time.Time `json:"started"`
	Expires     time.Time `json:"expires"`
	Outcome     []byte    `json:"outcome,omitempty"`
	// Unrecorded says that the first answer went out before the outcome
	// was recorded: replays carry idempotency.ErrNotRecorded, as it did.
	Unrecorded bool `json:"unrecorded,omitempty"`
}

const (
	stateInFlight = "in_flight"
	stateDone     = "done"
)

// BoltOptions configures a Bolt store. The zero value means the defaults.
type BoltOptions struct {
	// TTL is how long an outcome is kept; <= 0 means idempotency.DefaultTTL.
	TTL time.Duration
	// Clock tells the time; nil means the system clock.
	Clock clock.Clock
	// Log receives store failures that cannot be returned; nil discards.
	Log *slog.Logger
	// MaxBatchDelay is how long a write waits for others to share its
	// fsync; 0 means 2 ms. Concurrent calls share one commit, which is
	// what keeps a slow SD card usable.
	MaxBatchDelay time.Duration
}

// Bolt is a durable Store in a bbolt file. Each key's record holds the
// fingerprint, the state (in flight or done), the start time, the expiry
// and the full outcome. A key is recorded in flight, and that record is
// fsync'd, when the action calls idempotency.Attempt.Begin, before it acts; its
// outcome is recorded, and fsync'd, before Do returns. An action that
// keeps nothing and never began costs no write. When that last write fails
// (a full disk), Do returns the outcome with idempotency.ErrNotRecorded, keeps it in
// memory, answers retries with it (and the same error), and writes it once
// a later write succeeds. A lone write commits at once; concurrent writes
// share commits (bbolt's Batch).
//
// Bolt is safe for concurrent use within one process; the file is locked
// against other processes while open.
type Bolt struct {
	db    *bolt.DB
	ttl   time.Duration
	clock clock.Clock
	log   *slog.Logger

	writers atomic.Int32 // writes in progress, to choose between Update and Batch

	mu      sync.Mutex
	flights map[string]*flight
	// pending holds the writes that failed (a full disk), until one
	// succeeds: a done record, or nil for a key to forget.
	pending map[string]*record
	closed  bool
	calls   int

	failWrite atomic.Pointer[func() error] // tests: fail writes as a full disk would
}

// flight is a call in progress in this process.
type flight struct {
	fingerprint string
	done        chan struct{}
	outcome     []byte
	kept        bool
	unrecorded  bool
}

// OpenBolt opens (creating if needed) the store at path. It waits at most
// timeout for another process to release the file; it sweeps expired
// records.
func OpenBolt(path string, timeout time.Duration, opts BoltOptions) (*Bolt, error) {
	opts.TTL = positive.Or(opts.TTL, idempotency.DefaultTTL)
	opts.Clock = clock.Or(opts.Clock)
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	opts.MaxBatchDelay = positive.Or(opts.MaxBatchDelay, 2*time.Millisecond)
	db, err := boltdb.Open(path, "idempotency store", timeout, keysBucket)
	if err != nil {
		return nil, err
	}
	db.MaxBatchDelay = opts.MaxBatchDelay
	b := &Bolt{db: db, ttl: opts.TTL, clock: opts.Clock, log: opts.Log, flights: map[string]*flight{}, pending: map[string]*record{}}
	if err := b.sweep(); err != nil {
		db.Close()
		return nil, err
	}
	return b, nil
}

// TTL returns how long outcomes are kept.
func (b *Bolt) TTL() time.Duration { return b.ttl }

// Close waits for no call and closes the file; calls in flight must have
// returned (the server drains them first). It makes a last attempt to
// record outcomes whose write failed. Do after Close gives ErrClosed.
func (b *Bolt) Close() error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.flushPending()
	return b.db.Close()
}

// Do implements Store.
func (b *Bolt) Do(ctx context.Context, key, fingerprint string, act idempotency.Action) ([]byte, bool, error) {
	for {
		b.mu.Lock()
		if b.closed {
			b.mu.Unlock()
			return nil, false, ErrClosed
		}
		if b.calls++; b.calls >= 1024 {
			b.calls = 0
			go func() {
				if err := b.sweep(); err != nil {
					b.log.Warn("sweeping expired idempotency keys", "err", err)
				}
			}()
		}
		f, ok := b.flights[key]
		if !ok {
			f = &flight{fingerprint: fingerprint, done: make(chan struct{})}
			b.flights[key] = f
			b.mu.Unlock()
			return b.run(ctx, key, f, act)
		}
		b.mu.Unlock()
		if f.fingerprint != fingerprint {
			return nil, false, fmt.Errorf("key %q: %w", key, idempotency.ErrConflict)
		}
		if err := idempotency.WaitInFlight(ctx, key, f.done); err != nil {
			return nil, false, err
		}
		if f.kept {
			if f.unrecorded {
				return f.outcome, true, fmt.Errorf("key %q: %w", key, idempotency.ErrNotRecorded)
			}
			return f.outcome, true, nil
		}
		// The call in flight kept nothing: claim the key ourselves.
	}
}

// run is the one call of this process holding key.
func (b *Bolt) run(ctx context.Context, key string, f *flight, act idempotency.Action) (out []byte, replayed bool, err error) {
	defer func() {
		b.mu.Lock()
		delete(b.flights, key)
		b.mu.Unlock()
		close(f.done)
	}()
	now := b.clock.Now()
	rec, found, err := b.lookup(key, now)
	if err != nil {
		return nil, false, err
	}
	var attempt idempotency.Attempt
	began := false
	switch {
	case found && rec.Fingerprint != f.fingerprint:
		return nil, false, fmt.Errorf("key %q: %w", key, idempotency.ErrConflict)
	case found && rec.State == stateDone:
		f.outcome, f.kept, f.unrecorded = rec.Outcome, true, rec.Unrecorded
		if rec.Unrecorded {
			return rec.Outcome, true, fmt.Errorf("key %q: %w", key, idempotency.ErrNotRecorded)
		}
		return rec.Outcome, true, nil
	case found: // in flight, left by a process that stopped
		attempt = idempotency.Attempt{Recovering: true, Started: rec.Started}
		began = true
	default:
		rec = record{Fingerprint: f.fingerprint, State: stateInFlight, Started: now, Expires: now.Add(b.ttl)}
		attempt = b.begin(key, &rec, &began)
	}

	out, keep, err := act(ctx, attempt)
	if !began && err != nil {
		return nil, false, err // never began: nothing was written for the key
	}
	if !began && !keep {
		return out, false, nil
	}
	if err != nil || !keep {
		// Nothing happened that a retry must not repeat: forget the key.
		b.forget(key)
		if err != nil {
			return nil, false, err
		}
		return out, false, nil
	}
	return b.recordDone(key, f, rec.Started, out)
}

// lookup finds key's unexpired record: the one waiting in memory for a
// write that failed, else the one on disk.
func (b *Bolt) lookup(key string, now time.Time) (rec record, found bool, err error) {
	b.flushPending()
	b.mu.Lock()
	p, isPending := b.pending[key]
	b.mu.Unlock()
	switch {
	case isPending && p != nil:
		rec, found = *p, true
	case isPending: // forgotten, though the disk still says in flight
	default:
		if rec, found, err = b.get(key); err != nil {
			return record{}, false, err
		}
	}
	if found && now.After(rec.Expires) {
		found = false
	}
	return rec, found, nil
}

// begin returns the attempt whose Begin writes rec (key in flight) once,
// before the action may actuate; *began reports whether it was written.
func (b *Bolt) begin(key string, rec *record, began *bool) idempotency.Attempt {
	var berr error
	return idempotency.BeginWith(func(context.Context) error {
		if *began {
			return berr
		}
		*began = true
		if berr = b.put(key, rec); berr != nil {
			berr = fmt.Errorf("%w (nothing recorded, so nothing may actuate)", berr)
		}
		return berr
	})
}

// forget deletes key, so that a retry runs the action again.
func (b *Bolt) forget(key string) {
	if derr := b.delete(key); derr != nil {
		// Forget it in this process; the disk catches up later.
		b.log.Error("forgetting an idempotency key", "key", key, "err", derr)
		b.mu.Lock()
		b.pending[key] = nil
		b.mu.Unlock()
	}
}

// recordDone writes the outcome of an action that happened.
func (b *Bolt) recordDone(key string, f *flight, started time.Time, out []byte) ([]byte, bool, error) {
	done := record{Fingerprint: f.fingerprint, State: stateDone, Started: started,
		Expires: b.clock.Now().Add(b.ttl), Outcome: out}
	if err := b.put(key, &done); err != nil {
		// The action happened. The key stays in flight on disk (a restart
		// recovers it instead of actuating again); until a write succeeds,
		// this process answers retries from memory, marked alike.
		b.log.Error("recording an outcome failed; kept in memory until a write succeeds", "key", key, "err", err)
		done.Unrecorded = true
		b.mu.Lock()
		b.pending[key] = &done
		b.mu.Unlock()
		f.outcome, f.kept, f.unrecorded = out, true, true
		return out, false, fmt.Errorf("key %q: %w: %w", key, idempotency.ErrNotRecorded, err)
	}
	f.outcome, f.kept = out, true
	return out, false, nil
}

// flushPending makes the writes that failed, now that the disk may have
// room again.
func (b *Bolt) flushPending() {
	b.mu.Lock()
	if len(b.pending) == 0 {
		b.mu.Unlock()
		return
	}
	todo := maps.Clone(b.pending)
	b.mu.Unlock()
	for key, rec := range todo {
		var err error
		if rec == nil {
			err = b.delete(key)
		} else {
			err = b.put(key, rec)
		}
		if err != nil {
			b.log.Warn("a failed idempotency write still cannot be made", "key", key, "err", err)
			return // the disk is still full
		}
		b.mu.Lock()
		if b.pending[key] == rec {
			delete(b.pending, key)
		}
		b.mu.Unlock()
	}
}

func (b *Bolt) get(key string) (rec record, found bool, err error) {
	err = b.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(keysBucket).Get([]byte(key))
		if v == nil {
			return nil
		}
		found = true
		return json.Unmarshal(v, &rec)
	})
	if err != nil {
		return record{}, false, fmt.Errorf("idempotency key %q: reading: %w", key, err)
	}
	return rec, found, nil
}

func (b *Bolt) put(key string, rec *record) error {
	v, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("idempotency key %q: encoding: %w", key, err)
	}
	if err := b.write(func(tx *bolt.Tx) error {
		return tx.Bucket(keysBucket).Put([]byte(key), v)
	}); err != nil {
		return fmt.Errorf("idempotency key %q: writing: %w", key, err)
	}
	return nil
}

func (b *Bolt) delete(key string) error {
	return b.write(func(tx *bolt.Tx) error {
		return tx.Bucket(keysBucket).Delete([]byte(key))
	})
}

// write commits fn durably. A lone writer commits at once; concurrent
// writers share a commit through Batch, which waits up to MaxBatchDelay
// for company. fn may run more than once (Batch retries), so it must be
// idempotent: a put or a delete is.
func (b *Bolt) write(fn func(*bolt.Tx) error) error {
	if fail := b.failWrite.Load(); fail != nil {
		if err := (*fail)(); err != nil {
			return err
		}
	}
	if b.writers.Add(1) == 1 {
		defer b.writers.Add(-1)
		return b.db.Update(fn)
	}
	defer b.writers.Add(-1)
	return b.db.Batch(fn)
}

// sweep deletes expired records.
func (b *Bolt) sweep() error {
	now := b.clock.Now()
	err := b.db.Update(func(tx *bolt.Tx) error {
		bk := tx.Bucket(keysBucket)
		var expired [][]byte
		err := bk.ForEach(func(k, v []byte) error {
			var rec record
			if json.Unmarshal(v, &rec) == nil && now.After(rec.Expires) {
				expired = append(expired, append([]byte(nil), k...))
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, k := range expired {
			if err := bk.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("idempotency store: sweeping: %w", err)
	}
	return nil
}

// Len returns the number of records kept (done or in flight), for tests
// and status.
func (b *Bolt) Len() (int, error) {
	n := 0
	err := b.db.View(func(tx *bolt.Tx) error {
		n = tx.Bucket(keysBucket).Stats().KeyN
		return nil
	})
	return n, err
}
