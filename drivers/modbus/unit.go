package modbus

import (
	"context"
	"fmt"
	"sync"
	"time"

	mb "github.com/goburrow/modbus"

	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/drivers"
)

// Unit is one Modbus device (unit id) on a Line. Its calls retry with
// back-off, coalesce identical concurrent reads into one transaction, and
// stop touching the line for a while after repeated failures (a circuit
// breaker), so that one dead device does not starve the others.
//
// A Unit is safe for concurrent use.
type Unit struct {
	line   *Line
	id     uint8
	client mb.Client

	mu        sync.Mutex
	timeout   time.Duration // per transaction
	flights   map[string]*flight
	fails     int           // calls failed in a row
	openUntil time.Time     // breaker open until then
	cooldown  time.Duration // current cool-down
	trial     bool          // a half-open trial is running
}

// ID returns the unit id.
func (u *Unit) ID() uint8 { return u.id }

// flight is one read in progress that identical reads wait for. It runs
// under a context that ends only when every caller waiting for it has
// given up, so one impatient caller does not fail the others.
type flight struct {
	done    chan struct{}
	res     []byte
	err     error
	waiters int // guarded by Unit.mu
	cancel  context.CancelFunc
}

// coalesce runs fn once for all concurrent callers with the same key. The
// first caller runs it on its own goroutine (no hand-off on the fast path);
// if that caller's ctx ends while others still wait, the read goes on for
// them and the first caller returns when it completes (within the line's
// timeout). Other callers return their ctx's error as soon as it ends.
func (u *Unit) coalesce(ctx context.Context, key string, fn func(ctx context.Context) ([]byte, error)) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, u.errorf(key, drivers.Classify(err))
	}
	u.mu.Lock()
	f, joined := u.flights[key]
	var fctx context.Context
	if !joined {
		var cancel context.CancelFunc
		fctx, cancel = context.WithCancel(context.WithoutCancel(ctx))
		f = &flight{done: make(chan struct{}), cancel: cancel}
		u.flights[key] = f
	}
	f.waiters++
	u.mu.Unlock()

	if joined {
		select {
		case <-f.done:
			return f.res, f.err
		case <-ctx.Done():
			u.leave(key, f)
			return nil, u.errorf(key, fmt.Errorf("waiting for the answer: %w", drivers.Classify(ctx.Err())))
		}
	}
	stop := context.AfterFunc(ctx, func() { u.leave(key, f) })
	f.res, f.err = fn(fctx)
	u.mu.Lock()
	if u.flights[key] == f {
		delete(u.flights, key)
	}
	u.mu.Unlock()
	f.cancel()
	close(f.done)
	if !stop() { // this caller's ctx ended first
		return nil, u.errorf(key, drivers.Classify(ctx.Err()))
	}
	return f.res, f.err
}

// leave records that a caller no longer waits for f; the last one to leave
// cancels it, and the next caller starts afresh rather than join it.
func (u *Unit) leave(key string, f *flight) {
	u.mu.Lock()
	defer u.mu.Unlock()
	f.waiters--
	if f.waiters == 0 {
		f.cancel()
		if u.flights[key] == f {
			delete(u.flights, key)
		}
	}
}

// admit checks the breaker before a call.
func (u *Unit) admit(now time.Time) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.openUntil.IsZero() {
		return nil
	}
	if now.Before(u.openUntil) || u.trial {
		return fmt.Errorf("%w: %w: %d failures in a row, retrying after %s", drivers.ErrUnavailable, ErrCircuitOpen, u.fails, u.openUntil.Format(time.RFC3339))
	}
	u.trial = true // half open: this call is the trial
	return nil
}

// outcome is how a call ended, for the breaker.
type outcome int

const (
	answered  outcome = iota // data or an exception: the device is alive
	failed                   // no usable answer after the retries
	abandoned                // the caller gave up: says nothing about the device
)

// settle records a call's outcome in the breaker.
func (u *Unit) settle(now time.Time, o outcome) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.trial = false
	if o == abandoned {
		return
	}
	if o == answered {
		u.fails, u.openUntil, u.cooldown = 0, time.Time{}, 0
		return
	}
	u.fails++
	cfg := u.line.cfg
	if u.fails < cfg.BreakerThreshold {
		return
	}
	switch {
	case u.cooldown == 0:
		u.cooldown = cfg.BreakerCooldown
	case u.cooldown < time.Minute:
		u.cooldown = min(2*u.cooldown, time.Minute)
	}
	u.openUntil = now.Add(u.cooldown)
	u.line.log.Warn("modbus device backed off", "unit", u.id, "fails", u.fails, "dur", u.cooldown)
}

// call runs op with retries, back-off and the breaker.
func (u *Unit) call(ctx context.Context, what string, op func(mb.Client) ([]byte, error)) ([]byte, error) {
	cfg := u.line.cfg
	if err := u.admit(cfg.Clock.Now()); err != nil {
		return nil, u.errorf(what, err)
	}
	for attempt := 0; ; attempt++ {
		res, err := u.line.tx(ctx, u, what, op)
		if err == nil {
			u.settle(cfg.Clock.Now(), answered)
			return res, nil
		}
		if ctx.Err() != nil {
			u.settle(cfg.Clock.Now(), abandoned)
			return nil, u.errorf(what, err)
		}
		if !retryable(err) {
			u.settle(cfg.Clock.Now(), answered) // an exception is an answer
			return nil, u.errorf(what, err)
		}
		if attempt >= cfg.Retries {
			u.settle(cfg.Clock.Now(), failed)
			return nil, u.errorf(what, err)
		}
		if serr := clock.Sleep(ctx, cfg.Clock, cfg.Backoff<<attempt); serr != nil {
			u.settle(cfg.Clock.Now(), abandoned)
			return nil, u.errorf(what, fmt.Errorf("%w (backing off after: %w)", drivers.Classify(serr), err))
		}
	}
}

func (u *Unit) errorf(what string, err error) error {
	return fmt.Errorf("modbus %s unit %d %s: %w", u.line.cfg.Name, u.id, what, err)
}

// ReadRegisters reads count holding or input registers from address (0-based)
// and returns their 2*count bytes as sent (each register big endian).
// Identical concurrent reads share one transaction.
func (u *Unit) ReadRegisters(ctx context.Context, table Table, address, count uint16) ([]byte, error) {
	what := fmt.Sprintf("%s %d+%d", table, address, count)
	var op func(mb.Client) ([]byte, error)
	switch table {
	case TableHolding:
		op = func(c mb.Client) ([]byte, error) { return c.ReadHoldingRegisters(address, count) }
	case TableInput:
		op = func(c mb.Client) ([]byte, error) { return c.ReadInputRegisters(address, count) }
	default:
		return nil, u.errorf(what, fmt.Errorf("table %q holds no registers", table))
	}
	return u.coalesce(ctx, what, func(ctx context.Context) ([]byte, error) {
		b, err := u.call(ctx, what, op)
		if err == nil && len(b) != 2*int(count) {
			err = u.errorf(what, fmt.Errorf("%w: %d bytes for %d registers", ErrFrame, len(b), count))
		}
		return b, err
	})
}

// ReadBits reads count coils or discrete inputs from address (0-based).
// Identical concurrent reads share one transaction.
func (u *Unit) ReadBits(ctx context.Context, table Table, address, count uint16) ([]bool, error) {
	what := fmt.Sprintf("%s %d+%d", table, address, count)
	var op func(mb.Client) ([]byte, error)
	switch table {
	case TableCoil:
		op = func(c mb.Client) ([]byte, error) { return c.ReadCoils(address, count) }
	case TableDiscrete:
		op = func(c mb.Client) ([]byte, error) { return c.ReadDiscreteInputs(address, count) }
	default:
		return nil, u.errorf(what, fmt.Errorf("table %q holds no bits", table))
	}
	b, err := u.coalesce(ctx, what, func(ctx context.Context) ([]byte, error) { return u.call(ctx, what, op) })
	if err != nil {
		return nil, err
	}
	if len(b) < (int(count)+7)/8 {
		return nil, u.errorf(what, fmt.Errorf("%w: %d bytes for %d bits", ErrFrame, len(b), count))
	}
	bits := make([]bool, count)
	for i := range bits {
		bits[i] = b[i/8]&(1<<(i%8)) != 0
	}
	return bits, nil
}

// WriteRegisters writes wire (2 bytes per register, big endian each) to
// holding registers from address: function 6 for one register, 16 for more.
func (u *Unit) WriteRegisters(ctx context.Context, address uint16, wire []byte) error {
	n := len(wire) / 2
	if n == 0 || len(wire)%2 != 0 {
		return u.errorf("write", fmt.Errorf("%d bytes is not a whole number of registers", len(wire)))
	}
	what := fmt.Sprintf("holding %d+%d write", address, n)
	_, err := u.call(ctx, what, func(c mb.Client) ([]byte, error) {
		if n == 1 {
			return c.WriteSingleRegister(address, uint16(wire[0])<<8|uint16(wire[1]))
		}
		return c.WriteMultipleRegisters(address, uint16(n), wire)
	})
	return err
}

// WriteCoil sets one coil (function 5).
func (u *Unit) WriteCoil(ctx context.Context, address uint16, on bool) error {
	v := uint16(0x0000)
	if on {
		v = 0xFF00
	}
	_, err := u.call(ctx, fmt.Sprintf("coil %d write", address), func(c mb.Client) ([]byte, error) {
		return c.WriteSingleCoil(address, v)
	})
	return err
}

// WriteCoils sets len(bits) coils from address (function 15).
func (u *Unit) WriteCoils(ctx context.Context, address uint16, bits []bool) error {
	packed := make([]byte, (len(bits)+7)/8)
	for i, on := range bits {
		if on {
			packed[i/8] |= 1 << (i % 8)
		}
	}
	_, err := u.call(ctx, fmt.Sprintf("coil %d+%d write", address, len(bits)), func(c mb.Client) ([]byte, error) {
		return c.WriteMultipleCoils(address, uint16(len(bits)), packed)
	})
	return err
}
