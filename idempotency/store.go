// Package idempotency keeps the outcome of do_* calls by idempotency key, so
// that a retried call returns the first outcome instead of actuating again.
//
// A [Store] is the seam: [Memory] keeps outcomes in memory for a TTL;
// [Bolt] keeps them in a bbolt file, so that they survive a restart.
// Outcomes are opaque bytes (the serialized tool response), so any store can
// keep them.
//
// # Recovery
//
// A durable store records a key as in flight, durably, when the action
// calls [Attempt.Begin] (which it does after deciding to act and before it
// has any effect), and as done with its outcome after. An action that
// refuses without calling Begin costs the store no write at all. When the
// process dies between the two (kill -9, power loss), the key stays in
// flight. The next call with that key and the same fingerprint does not run
// the action as new: it runs it with [Attempt].Recovering set, and the
// action must find out what the earlier attempt did (read the actuator
// back) instead of actuating blindly.
//
// # Concurrency
//
// Stores are safe for concurrent use. Concurrent calls of Do with the same
// key run the action once: the first caller runs it, the others wait for its
// outcome (or for their own context to end) and return it as replayed.
package idempotency

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrConflict is returned when a key was used before with different
// arguments: the store refuses to replay another call's outcome.
var ErrConflict = errors.New("idempotency key reused with different arguments")

// ErrNotRecorded is returned, wrapped and together with the outcome, when
// an action ran (the device may have been touched) but the store could not
// record its outcome durably: a full disk. The store keeps the outcome in
// memory and answers every later call with that key with the same outcome
// and this error again, also once a later write has recorded it, so that
// the caller answers all of them alike. Only a restart before the outcome
// is written loses it: the key is then in flight, and is recovered.
var ErrNotRecorded = errors.New("the outcome could not be recorded durably")

// Action runs the mutation that a key guards. It returns the outcome to
// return to the caller and whether to keep it for later replays: an
// outcome that touched nothing (a refusal, a bad argument) is not kept, so
// that a retry is evaluated afresh.
type Action func(ctx context.Context, a Attempt) (outcome []byte, keep bool, err error)

// Attempt tells an [Action] what the store knows of the key.
type Attempt struct {
	// Recovering is true when an earlier attempt with this key and
	// fingerprint started and never finished (the process stopped in
	// between): the action may or may not have happened. The action must
	// not actuate again; it observes the device and reports what it finds.
	Recovering bool
	// Started is when the unfinished earlier attempt began; zero unless
	// Recovering.
	Started time.Time

	begin func(ctx context.Context) error
}

// Begin records the key in flight, durably, before the action has any
// effect; the action calls it once it has decided to act, from its own
// goroutine, and does not act when it fails. A store that keeps nothing
// across a restart has nothing to record. Calling it again returns the
// first call's answer.
func (a Attempt) Begin(ctx context.Context) error {
	if a.begin == nil {
		return nil
	}
	return a.begin(ctx)
}

// BeginWith returns a fresh Attempt whose Begin calls begin: a durable
// store outside this package (see boltstore) records the key with it.
func BeginWith(begin func(ctx context.Context) error) Attempt {
	return Attempt{begin: begin}
}

// WaitInFlight waits until done is closed (the call in flight for key,
// which another caller runs, has ended) or until ctx ends, which it
// returns wrapped: what a store's Do does for every caller of a key but
// the first (see Concurrency).
func WaitInFlight(ctx context.Context, key string, done <-chan struct{}) error {
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("key %q: waiting for the call in flight: %w", key, ctx.Err())
	}
}

// Store runs actions at most once per key.
type Store interface {
	// Do runs act unless key already has a kept outcome. fingerprint
	// identifies the call's tool and arguments. It returns the outcome, and
	// replayed true when the outcome is an earlier call's. A key kept with
	// another fingerprint gives ErrConflict and does not run act. An error
	// from act is returned as is and nothing is kept. An outcome that could
	// not be recorded comes with ErrNotRecorded, and so do its replays. A
	// durable store runs
	// act with Attempt.Recovering for a key an earlier process left in
	// flight (see Recovery); act's outcome then replaces that record.
	Do(ctx context.Context, key, fingerprint string, act Action) (outcome []byte, replayed bool, err error)
}
