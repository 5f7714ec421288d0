package modbus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	mb "github.com/goburrow/modbus"

	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/drivers"
	"github.com/promcp/promcp-device/internal/flight"
)

// Config is what a Line needs beyond its transport. The zero value of each
// field means its documented default.
type Config struct {
	// Name names the line in errors and logs (the manifest bus name).
	Name string
	// Timeout bounds one transaction, response included. Default
	// DefaultTimeout.
	Timeout time.Duration
	// Retries is how often a failed transaction is retried (timeouts,
	// garbled frames, busy devices, dropped connections; not other
	// exceptions). Negative means none; 0 means none too: callers pass the
	// manifest's value (manifests.DefaultRetries when it declares none).
	Retries int
	// Backoff is the wait before the first retry; it doubles for each
	// further one. Default 20ms. The line is free while a device backs off.
	Backoff time.Duration
	// BreakerThreshold is how many calls in a row (after their retries)
	// must fail before the device is backed off. Default 3.
	BreakerThreshold int
	// BreakerCooldown is how long a backed-off device is refused without
	// touching the line; it doubles after each failed trial, up to 1 minute.
	// Default 5s.
	BreakerCooldown time.Duration
	// Clock times back-offs and silences; nil means clock.System.
	Clock clock.Clock
}

func (c *Config) defaults() {
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Retries < 0 {
		c.Retries = 0
	}
	if c.Backoff <= 0 {
		c.Backoff = 20 * time.Millisecond
	}
	if c.BreakerThreshold <= 0 {
		c.BreakerThreshold = 3
	}
	if c.BreakerCooldown <= 0 {
		c.BreakerCooldown = 5 * time.Second
	}
	if c.Clock == nil {
		c.Clock = clock.System{}
	}
}

// Line is one physical Modbus line (an RS-485 pair, a TCP connection to a
// device or to a gateway): the devices on it take turns, one transaction at
// a time, first come first served.
//
// A Line is safe for concurrent use. It owns its transport and closes it in
// Close.
type Line struct {
	cfg  Config
	tr   transport
	rtu  bool
	log  *slog.Logger
	turn drivers.Turn
	// abort is tr.abort, bound once rather than per transaction.
	abort func()

	mu    sync.Mutex
	units map[uint8]*Unit
	stats Stats
}

// Stats are a Line's counters.
type Stats struct {
	// Transactions counts requests put on the line, retries included.
	Transactions uint64
	// Errors counts transactions that failed.
	Errors uint64
	// Discarded counts bytes read on an RTU line and thrown away: frames
	// that were not the reply to the request in flight (a late reply to an
	// earlier one, another unit's), noise, and what a drain after a
	// timeout read.
	Discarded uint64
}

// NewTCP returns a Modbus TCP line (MBAP framing) to the endpoint dial
// reaches. The connection is dialled on first use and again after the peer
// drops it. NewTCP does no I/O.
func NewTCP(cfg Config, dial Dialer, log *slog.Logger) *Line {
	return newLine(cfg, &streamTransport{dial: dial}, false, log)
}

// NewRTUOverTCP returns a line that sends RTU frames over TCP, as serial
// device servers expect. NewRTUOverTCP does no I/O.
func NewRTUOverTCP(cfg Config, dial Dialer, log *slog.Logger) *Line {
	return newLine(cfg, &streamTransport{dial: dial, rtu: true}, true, log)
}

// NewRTU returns an RTU line on an open serial port, which the Line owns
// from now on. gap is the silence kept between frames (see FrameGap);
// rts raises RTS while sending, for RS-485 adapters that need it.
func NewRTU(cfg Config, port Port, gap time.Duration, rts bool, log *slog.Logger) *Line {
	cfg.defaults()
	return newLine(cfg, &serialTransport{port: port, gap: gap, rtsCtl: rts, clock: cfg.Clock}, true, log)
}

// DialerTCP returns a Dialer for a TCP address using net.Dialer.
func DialerTCP(address string) Dialer {
	var d net.Dialer
	return func(ctx context.Context) (net.Conn, error) { return d.DialContext(ctx, "tcp", address) }
}

// FrameGap returns the Modbus RTU inter-frame silence at baud: 3.5
// character times of 11 bits, fixed at 1.75 ms above 19200 baud.
func FrameGap(baud int) time.Duration {
	if baud <= 0 || baud > 19200 {
		return 1750 * time.Microsecond
	}
	return time.Duration(float64(time.Second) * 3.5 * 11 / float64(baud))
}

func newLine(cfg Config, tr transport, rtu bool, log *slog.Logger) *Line {
	cfg.defaults()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Line{cfg: cfg, tr: tr, rtu: rtu, log: log.With("bus", cfg.Name), turn: drivers.NewTurn(), abort: tr.abort, units: map[uint8]*Unit{}}
}

// Close closes the transport. Transactions in flight fail.
func (l *Line) Close() error { return l.tr.Close() }

// Stats returns a snapshot of the line's counters.
func (l *Line) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stats
}

// UnitOption is an optional setting of a Unit.
type UnitOption func(*Unit)

// WithTimeout bounds each transaction with this unit by d instead of the
// line's Config.Timeout; d <= 0 keeps the line's.
func WithTimeout(d time.Duration) UnitOption {
	return func(u *Unit) {
		if d > 0 {
			u.timeout = d
		}
	}
}

// Unit returns the device with unit id id on the line; every call with the
// same id returns the same *Unit, which shares the line's turn. Options
// given apply from then on.
func (l *Line) Unit(id uint8, opts ...UnitOption) *Unit {
	l.mu.Lock()
	defer l.mu.Unlock()
	if u, ok := l.units[id]; ok {
		u.mu.Lock()
		for _, o := range opts {
			o(u)
		}
		u.mu.Unlock()
		return u
	}
	var pk mb.Packager
	if l.rtu {
		h := mb.NewRTUClientHandler("")
		h.SlaveId = id
		pk = h
	} else {
		h := mb.NewTCPClientHandler("")
		h.SlaveId = id
		pk = h
	}
	u := &Unit{line: l, id: id, client: mb.NewClient2(pk, l.tr), timeout: l.cfg.Timeout}
	for _, o := range opts {
		o(u)
	}
	l.units[id] = u
	return u
}

// tx runs one transaction for u: waits for the line's turn under ctx,
// arms the transport with min(timeout, ctx deadline), runs op.
func (l *Line) tx(ctx context.Context, u *Unit, what opName, op func(mb.Client) ([]byte, error)) ([]byte, error) {
	if err := l.turn.Acquire(ctx); err != nil {
		return nil, err
	}
	defer l.turn.Release()
	// The transaction's duration is for the debug log only: no clock read
	// per transaction when debug is off.
	debug := l.log.Enabled(ctx, slog.LevelDebug)
	var start time.Time
	if debug {
		start = time.Now()
	}
	l.mu.Lock()
	l.stats.Transactions++
	l.mu.Unlock()
	res, err := func() ([]byte, error) {
		// The line settles (drains, keeps its silence) before this
		// transaction's time starts.
		if err := l.tr.settle(ctx, u.id); err != nil {
			return nil, err
		}
		if err := l.tr.prepare(ctx, l.deadline(ctx, u)); err != nil {
			return nil, err
		}
		// A caller that gives up aborts the transaction. Under a coalesced
		// read (flight.Group) the watch costs no allocation; a caller that
		// cannot cancel needs none.
		w := flight.Watch(ctx, l.abort)
		defer w.Stop()
		return op(u.client)
	}()
	if n := l.tr.discards(); n > 0 {
		l.mu.Lock()
		l.stats.Discarded += n
		l.mu.Unlock()
		if debug {
			l.log.Debug("modbus discarded bytes that were not the reply", "unit", u.id, "key", what.String(), "bytes", n)
		}
	}
	if err != nil {
		l.tr.reset()
		l.mu.Lock()
		l.stats.Errors++
		l.mu.Unlock()
		err = classify(err)
		if ctx.Err() != nil && !isTimeout(err) {
			err = fmt.Errorf("%w (%w)", drivers.Classify(ctx.Err()), err)
		}
		if debug {
			l.log.Debug("modbus tx", "unit", u.id, "key", what.String(), "dur", time.Since(start), "err", err)
		}
		return nil, err
	}
	if debug { // its arguments would cost allocations on every read
		l.log.Debug("modbus tx", "unit", u.id, "key", what.String(), "dur", time.Since(start))
	}
	return res, nil
}

// deadline is when a transaction of u starting now must end: its timeout
// from now, or ctx's deadline if sooner.
func (l *Line) deadline(ctx context.Context, u *Unit) time.Time {
	u.mu.Lock()
	timeout := u.timeout
	u.mu.Unlock()
	deadline := l.cfg.Clock.Now().Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	return deadline
}

func isTimeout(err error) bool { return errors.Is(err, drivers.ErrTimeout) }
