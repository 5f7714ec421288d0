package i2c

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"periph.io/x/conn/v3/i2c/i2ctest"

	"github.com/promcp/promcp-device/drivers"
)

func TestBusTx(t *testing.T) {
	pb := playback(t, i2ctest.IO{Addr: 0x20, W: []byte{0x02}, R: []byte{0x2E, 0xE0}})
	b := NewBus("i2c1", pb, 0, nil)
	r := make([]byte, 2)
	if err := b.Tx(t.Context(), 0x20, []byte{0x02}, r); err != nil {
		t.Fatalf("Tx() = %v", err)
	}
	if r[0] != 0x2E || r[1] != 0xE0 {
		t.Errorf("Tx read % x, want 2e e0", r)
	}
	if s := b.Stats(); s.Transactions != 1 || s.Errors != 0 {
		t.Errorf("Stats() = %+v, want 1 transaction, 0 errors", s)
	}
	if got := b.Timeout(); got != 100*time.Millisecond {
		t.Errorf("Timeout() = %v, want the manifest default 100ms", got)
	}
}

func TestBusTxErrors(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want error
	}{
		{"nack", drivers.ErrnoRemoteIO, drivers.ErrNACK},
		{"enxio", syscall.ENXIO, drivers.ErrNACK},
		{"kernel timeout", syscall.ETIMEDOUT, drivers.ErrTimeout},
		{"other", syscall.EIO, syscall.EIO},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBus("i2c1", &errBus{err: tc.err}, time.Second, nil)
			err := b.Tx(t.Context(), 0x44, []byte{0x24, 0x00}, nil)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Tx() = %v, want %v", err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "i2c i2c1 addr 0x44: ") {
				t.Errorf("Tx() = %q, want it to start with the bus and address", err)
			}
			if s := b.Stats(); s.Transactions != 1 || s.Errors != 1 {
				t.Errorf("Stats() = %+v, want 1 transaction, 1 error", s)
			}
		})
	}
}

func TestBusTxContextDoneBeforeTurn(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	pb := playback(t) // any transaction is an error
	b := NewBus("i2c1", pb, 0, nil)
	err := b.Tx(ctx, 0x44, []byte{0x24, 0x00}, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Tx(cancelled ctx) = %v, want context.Canceled", err)
	}
	if pb.Count != 0 {
		t.Errorf("Tx(cancelled ctx) did %d transactions, want 0", pb.Count)
	}
	if s := b.Stats(); s.Transactions != 0 {
		t.Errorf("Stats() = %+v, want no transaction", s)
	}
}

// A stuck transaction times out after the bus timeout, keeps the bus until it
// returns, and never writes into the caller's buffer afterwards.
func TestBusTxStuck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sb := newStuckBus()
		b := NewBus("i2c1", sb, 100*time.Millisecond, nil)
		ctx := t.Context()

		r := make([]byte, 2)
		start := time.Now()
		err := b.Tx(ctx, 0x44, nil, r)
		if !errors.Is(err, drivers.ErrTimeout) {
			t.Fatalf("Tx(stuck) = %v, want ErrTimeout", err)
		}
		if d := time.Since(start); d != 100*time.Millisecond {
			t.Errorf("Tx(stuck) returned after %v, want 100ms", d)
		}

		// The bus is still held: a second caller waits for its turn, here
		// until its own deadline, and never reaches the bus.
		wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		err = b.Tx(wctx, 0x44, nil, nil)
		if !errors.Is(err, drivers.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Tx(waiting) = %v, want ErrTimeout wrapping DeadlineExceeded", err)
		}
		if n := sb.calls.Load(); n != 1 {
			t.Errorf("bus saw %d transactions, want 1", n)
		}

		// The stuck transaction returns: the bus is free again, and the
		// abandoned read did not land in r.
		close(sb.release)
		synctest.Wait()
		if err := b.Tx(ctx, 0x44, nil, nil); err != nil {
			t.Errorf("Tx(after release) = %v", err)
		}
		if r[0] != 0 || r[1] != 0 {
			t.Errorf("abandoned Tx wrote % x into the caller's buffer", r)
		}
		if s := b.Stats(); s.Transactions != 2 || s.Timeouts != 1 || s.Errors != 1 {
			t.Errorf("Stats() = %+v, want 2 transactions, 1 timeout, 1 error", s)
		}
	})
}

// The caller's context ends a transaction on a stuck bus before the bus
// timeout (1s) does: its deadline is a timeout, ended at that deadline; its
// cancellation ends the transaction at once and is not a timeout.
func TestBusTxCallerContext(t *testing.T) {
	for _, tc := range []struct {
		name string
		// ctx derives the caller's context; sb.entered tells when the
		// transaction is on the bus.
		ctx     func(ctx context.Context, sb *stuckBus) (context.Context, context.CancelFunc)
		want    error
		timeout bool // whether the error wraps drivers.ErrTimeout
		after   time.Duration
	}{
		{"deadline", func(ctx context.Context, _ *stuckBus) (context.Context, context.CancelFunc) {
			return context.WithTimeout(ctx, 10*time.Millisecond)
		}, context.DeadlineExceeded, true, 10 * time.Millisecond},
		{"cancelled during Tx", func(ctx context.Context, sb *stuckBus) (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(ctx)
			go func() {
				<-sb.entered
				cancel()
			}()
			return ctx, cancel
		}, context.Canceled, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sb := newStuckBus()
				defer close(sb.release)
				b := NewBus("i2c1", sb, time.Second, nil)
				ctx, cancel := tc.ctx(t.Context(), sb)
				defer cancel()
				start := time.Now()
				err := b.Tx(ctx, 0x44, nil, make([]byte, 1))
				if !errors.Is(err, tc.want) || errors.Is(err, drivers.ErrTimeout) != tc.timeout {
					t.Fatalf("Tx() = %v, want %v (ErrTimeout: %v)", err, tc.want, tc.timeout)
				}
				if d := time.Since(start); d != tc.after {
					t.Errorf("Tx() returned after %v, want %v", d, tc.after)
				}
			})
		})
	}
}

// Transactions on one bus never overlap.
func TestBusTxOneAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sb := newStuckBus()
		b := NewBus("i2c1", sb, time.Hour, nil)
		errs := make(chan error, 3)
		for range 3 {
			go func() { errs <- b.Tx(t.Context(), 0x44, nil, nil) }()
		}
		synctest.Wait()
		if n := sb.calls.Load(); n != 1 {
			t.Fatalf("%d transactions on the wire at once, want 1", n)
		}
		close(sb.release)
		for range 3 {
			if err := <-errs; err != nil {
				t.Error(err)
			}
		}
		if n := sb.calls.Load(); n != 3 {
			t.Errorf("%d transactions, want 3", n)
		}
	})
}
