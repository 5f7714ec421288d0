package drivers

import (
	"context"
	"fmt"
	"time"

	"github.com/promcp/promcp-device/clock"
)

// Outcome is how a retried call ended, for a circuit breaker.
type Outcome int

// Outcomes.
const (
	// Answered: the device answered, with data or with an error that another
	// attempt would not change (a Modbus exception). The device is alive.
	Answered Outcome = iota
	// Failed: no usable answer after the retries.
	Failed
	// Abandoned: the caller gave up; this says nothing about the device.
	Abandoned
)

// RetryPolicy is how a bus transaction is retried.
type RetryPolicy struct {
	// Retries is how often a failed transaction is retried; <= 0 means none.
	Retries int
	// Backoff is the wait before the first retry; it doubles for each
	// further one.
	Backoff time.Duration
	// Clock times the back-offs; nil means clock.System.
	Clock clock.Clock
	// Retryable reports whether another attempt may cure err; nil means
	// every error is retried.
	Retryable func(error) bool
}

// Retry is the transaction loop shared by the Modbus and serial-line
// drivers: it runs tx until it succeeds, fails with an error that is not
// retryable, the retries are spent, or ctx ends, waiting Backoff<<n on the
// clock before retry n+1 (the bus is free meanwhile). It returns tx's last
// result and error; a back-off cut short by ctx yields ctx's error
// (classified) wrapping the last one.
func Retry[T any](ctx context.Context, p RetryPolicy, tx func(ctx context.Context) (T, error)) (T, Outcome, error) {
	clk := clock.Or(p.Clock)
	for attempt := 0; ; attempt++ {
		v, err := tx(ctx)
		switch {
		case err == nil:
			return v, Answered, nil
		case ctx.Err() != nil:
			return v, Abandoned, err
		case p.Retryable != nil && !p.Retryable(err):
			return v, Answered, err
		case attempt >= p.Retries:
			return v, Failed, err
		}
		if serr := clock.Sleep(ctx, clk, p.Backoff<<attempt); serr != nil {
			var zero T
			return zero, Abandoned, fmt.Errorf("%w (backing off after: %w)", Classify(serr), err)
		}
	}
}

// Turn is a line that carries one transaction at a time: a lock that a
// waiting caller can give up on. Create one with NewTurn.
type Turn chan struct{}

// NewTurn returns a free Turn.
func NewTurn() Turn { return make(Turn, 1) }

// Wait waits for the turn or for ctx to end, whichever comes first. On
// success the caller holds the turn until it calls release; otherwise err
// is ctx's error, classified, for the caller to say what it waited for.
func (t Turn) Wait(ctx context.Context) (release func(), err error) {
	select {
	case t <- struct{}{}:
		return func() { <-t }, nil
	case <-ctx.Done():
		return nil, Classify(ctx.Err())
	}
}

// Take waits for the line or for ctx to end. On success the caller owns the
// line until it calls release; otherwise the error, classified, says the
// caller gave up waiting. Unlike Wait, it also gives the line back when ctx
// ended just as the line came free.
func (t Turn) Take(ctx context.Context) (release func(), err error) {
	if err := t.Acquire(ctx); err != nil {
		return nil, err
	}
	return func() { <-t }, nil
}

// Acquire is Take without the release function, which costs an allocation
// per call: the caller gives the line back with Release.
func (t Turn) Acquire(ctx context.Context) error {
	select { // a free line is taken without making ctx's Done channel
	case t <- struct{}{}:
	default:
		select {
		case t <- struct{}{}:
		case <-ctx.Done():
			return fmt.Errorf("waiting for the line: %w", Classify(ctx.Err()))
		}
	}
	if ctx.Err() != nil {
		t.Release()
		return fmt.Errorf("waiting for the line: %w", Classify(ctx.Err()))
	}
	return nil
}

// Release gives back a line taken with Acquire.
func (t Turn) Release() { <-t }
