// Package idempotency keeps the outcome of do_* calls by idempotency key, so
// that a retried call returns the first outcome instead of actuating again.
//
// A [Store] is the seam: [Memory] keeps outcomes in memory for a TTL; a
// durable store (bbolt) implements the same interface later. Outcomes are
// opaque bytes (the serialized tool response), so any store can keep them.
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
)

// ErrConflict is returned when a key was used before with different
// arguments: the store refuses to replay another call's outcome.
var ErrConflict = errors.New("idempotency key reused with different arguments")

// Action runs the mutation that a key guards. It returns the outcome to
// return to the caller and whether to keep it for later replays: an
// outcome that touched nothing (a refusal, a bad argument) is not kept, so
// that a retry is evaluated afresh.
type Action func(ctx context.Context) (outcome []byte, keep bool, err error)

// Store runs actions at most once per key.
type Store interface {
	// Do runs act unless key already has a kept outcome. fingerprint
	// identifies the call's tool and arguments. It returns the outcome, and
	// replayed true when the outcome is an earlier call's. A key kept with
	// another fingerprint gives ErrConflict and does not run act. An error
	// from act is returned as is and nothing is kept.
	Do(ctx context.Context, key, fingerprint string, act Action) (outcome []byte, replayed bool, err error)
}
