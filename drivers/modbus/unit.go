package modbus

import (
	"context"
	"fmt"
	"sync"
	"time"

	mb "github.com/goburrow/modbus"

	"github.com/promcp/promcp-device/drivers"
	"github.com/promcp/promcp-device/drivers/modbus/modbusconf"
	"github.com/promcp/promcp-device/internal/flight"
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
	flights   flight.Group[opName, []byte]
	fails     int           // calls failed in a row
	openUntil time.Time     // breaker open until then
	cooldown  time.Duration // current cool-down
	trial     bool          // a half-open trial is running
}

// ID returns the unit id.
func (u *Unit) ID() uint8 { return u.id }

// coalesce runs fn once for all concurrent callers with the same key (see
// flight.Group: the read goes on as long as one caller still waits for it).
// A caller that gives up gets its ctx's error, classified.
func (u *Unit) coalesce(ctx context.Context, key opName, fn func(ctx context.Context) ([]byte, error)) ([]byte, error) {
	res, err, joined := u.flights.Do(ctx, key, fn)
	if cerr := ctx.Err(); err != nil && err == cerr {
		if joined {
			return nil, u.errorf(key.String(), fmt.Errorf("waiting for the answer: %w", drivers.Classify(cerr)))
		}
		return nil, u.errorf(key.String(), drivers.Classify(cerr))
	}
	return res, err
}

// admit checks the breaker before a call. It reads the clock only when
// the breaker is open: a healthy device's call costs no clock read here.
func (u *Unit) admit() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.openUntil.IsZero() {
		return nil
	}
	if u.line.cfg.Clock.Now().Before(u.openUntil) || u.trial {
		return fmt.Errorf("%w: %w: %d failures in a row, retrying after %s", drivers.ErrUnavailable, ErrCircuitOpen, u.fails, u.openUntil.Format(time.RFC3339))
	}
	u.trial = true // half open: this call is the trial
	return nil
}

// settle records a call's outcome in the breaker. It reads the clock only
// when the breaker opens.
func (u *Unit) settle(o drivers.Outcome) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.trial = false
	if o == drivers.Abandoned {
		return
	}
	if o == drivers.Answered {
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
	u.openUntil = cfg.Clock.Now().Add(u.cooldown)
	u.line.log.Warn("modbus device backed off", "unit", u.id, "fails", u.fails, "dur", u.cooldown)
}

// call runs op with retries, back-off (drivers.Retry) and the breaker.
func (u *Unit) call(ctx context.Context, what opName, op func(mb.Client) ([]byte, error)) ([]byte, error) {
	cfg := u.line.cfg
	if err := u.admit(); err != nil {
		return nil, u.errorf(what.String(), err)
	}
	p := drivers.RetryPolicy{Retries: cfg.Retries, Backoff: cfg.Backoff, Clock: cfg.Clock, Retryable: retryable}
	res, o, err := drivers.Retry(ctx, p, func(ctx context.Context) ([]byte, error) { return u.line.tx(ctx, u, what, op) })
	u.settle(o)
	if err != nil {
		return nil, u.errorf(what.String(), err)
	}
	return res, nil
}

// opName names a call, and keys the coalescing of reads: count values of
// table from address, or a write (count 0: one coil). Its text, for errors
// and logs, is made only when needed.
type opName struct {
	table          modbusconf.Table
	address, count uint16
	write          bool
}

func (o opName) String() string {
	switch {
	case o.write && o.count == 0:
		return fmt.Sprintf("%s %d write", o.table, o.address)
	case o.write:
		return fmt.Sprintf("%s %d+%d write", o.table, o.address, o.count)
	}
	return fmt.Sprintf("%s %d+%d", o.table, o.address, o.count)
}

func (u *Unit) errorf(what string, err error) error {
	return fmt.Errorf("modbus %s unit %d %s: %w", u.line.cfg.Name, u.id, what, err)
}

// readOp returns the request that reads count values of table from
// address (function 1, 2, 3 or 4), or nil for an unknown table.
func readOp(table modbusconf.Table, address, count uint16) func(mb.Client) ([]byte, error) {
	switch table {
	case modbusconf.TableCoil:
		return func(c mb.Client) ([]byte, error) { return c.ReadCoils(address, count) }
	case modbusconf.TableDiscrete:
		return func(c mb.Client) ([]byte, error) { return c.ReadDiscreteInputs(address, count) }
	case modbusconf.TableHolding:
		return func(c mb.Client) ([]byte, error) { return c.ReadHoldingRegisters(address, count) }
	case modbusconf.TableInput:
		return func(c mb.Client) ([]byte, error) { return c.ReadInputRegisters(address, count) }
	}
	return nil
}

// ReadRegisters reads count holding or input registers from address (0-based)
// and returns their 2*count bytes as sent (each register big endian).
// Identical concurrent reads share one transaction.
func (u *Unit) ReadRegisters(ctx context.Context, table modbusconf.Table, address, count uint16) ([]byte, error) {
	what := opName{table: table, address: address, count: count}
	op := readOp(table, address, count)
	if op == nil || table.IsBits() {
		return nil, u.errorf(what.String(), fmt.Errorf("table %q holds no registers", table))
	}
	return u.coalesce(ctx, what, func(ctx context.Context) ([]byte, error) {
		b, err := u.call(ctx, what, op)
		if err == nil && len(b) != 2*int(count) {
			err = u.errorf(what.String(), fmt.Errorf("%w: %d bytes for %d registers", ErrFrame, len(b), count))
		}
		return b, err
	})
}

// ReadBits reads count coils or discrete inputs from address (0-based).
// Identical concurrent reads share one transaction.
func (u *Unit) ReadBits(ctx context.Context, table modbusconf.Table, address, count uint16) ([]bool, error) {
	what := opName{table: table, address: address, count: count}
	op := readOp(table, address, count)
	if op == nil || !table.IsBits() {
		return nil, u.errorf(what.String(), fmt.Errorf("table %q holds no bits", table))
	}
	b, err := u.coalesce(ctx, what, func(ctx context.Context) ([]byte, error) { return u.call(ctx, what, op) })
	if err != nil {
		return nil, err
	}
	if len(b) < (int(count)+7)/8 {
		return nil, u.errorf(what.String(), fmt.Errorf("%w: %d bytes for %d bits", ErrFrame, len(b), count))
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
	what := opName{table: modbusconf.TableHolding, address: address, count: uint16(n), write: true}
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
	_, err := u.call(ctx, opName{table: modbusconf.TableCoil, address: address, write: true}, func(c mb.Client) ([]byte, error) {
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
	_, err := u.call(ctx, opName{table: modbusconf.TableCoil, address: address, count: uint16(len(bits)), write: true}, func(c mb.Client) ([]byte, error) {
		return c.WriteMultipleCoils(address, uint16(len(bits)), packed)
	})
	return err
}
