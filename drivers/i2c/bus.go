package i2c

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	pi2c "periph.io/x/conn/v3/i2c"

	"github.com/promcp/promcp-device/drivers"
)

// Bus schedules transactions on one I²C bus: one at a time, each bounded by a
// timeout and by the caller's context.
//
// The zero value is not usable; create one with [NewBus]. A Bus is safe for
// concurrent use. It does not own the underlying pi2c.Bus and never closes it.
type Bus struct {
	name    string
	bus     pi2c.Bus
	timeout time.Duration
	log     *slog.Logger

	// turn holds one token while a transaction is on the wire (STYLE rule 5).
	turn chan struct{}

	mu    sync.Mutex
	stats BusStats
}

// BusStats are a Bus's counters since it was created.
type BusStats struct {
	// Transactions counts transactions started on the wire.
	Transactions uint64
	// Errors counts transactions that failed, timeouts included.
	Errors uint64
	// Timeouts counts transactions that overran their timeout.
	Timeouts uint64
	// LastLatency is the duration of the most recent transaction as its
	// caller saw it (for a timeout: until the timeout).
	LastLatency time.Duration
}

// NewBus returns a scheduler for bus, which is named name in errors and logs
// (the manifest bus name, such as "i2c1", or the host's, such as "1").
// timeout bounds each transaction; zero or negative means
// DefaultTimeout. log nil discards. NewBus does no I/O.
func NewBus(name string, bus pi2c.Bus, timeout time.Duration, log *slog.Logger) *Bus {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Bus{
		name:    name,
		bus:     bus,
		timeout: timeout,
		log:     log.With("bus", name),
		turn:    make(chan struct{}, 1),
	}
}

// Name returns the bus's name as given to [NewBus].
func (b *Bus) Name() string { return b.name }

// Timeout returns the per-transaction timeout.
func (b *Bus) Timeout() time.Duration { return b.timeout }

// Stats returns a snapshot of the bus's counters.
func (b *Bus) Stats() BusStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stats
}

// Tx performs one transaction with the device at the 7-bit address addr:
// it writes w, then reads len(r) bytes into r (either may be empty), as
// periph's Tx does.
//
// Tx waits for the bus's turn under ctx and returns ctx's error, without
// touching the bus, if ctx is done first. The transaction is bounded by
// min(bus timeout, ctx deadline); on expiry Tx returns an error wrapping
// drivers.ErrTimeout while the bus stays held until the underlying
// transaction returns. Tx does not retain w or r after it returns, even
// then: it works on copies.
//
// Errors name the bus and address and are classified with drivers.Classify.
func (b *Bus) Tx(ctx context.Context, addr uint16, w, r []byte) error {
	select {
	case b.turn <- struct{}{}:
	case <-ctx.Done():
		return b.errorf(addr, "waiting for bus: %w", drivers.Classify(ctx.Err()))
	}
	if err := ctx.Err(); err != nil {
		<-b.turn
		return b.errorf(addr, "waiting for bus: %w", drivers.Classify(err))
	}

	tctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()

	// periph's Tx cannot be cancelled: run it on copies in a goroutine that
	// alone releases the turn, so that an abandoned transaction keeps the bus.
	wc := append([]byte(nil), w...)
	var rc []byte
	if len(r) > 0 {
		rc = make([]byte, len(r))
	}
	done := make(chan error, 1)
	abandoned := make(chan struct{})
	start := time.Now()
	b.count(func(s *BusStats) { s.Transactions++ })
	go func() {
		err := b.bus.Tx(addr, wc, rc)
		<-b.turn
		done <- err
		select {
		case <-abandoned:
			b.log.Warn("i2c transaction returned after its timeout", "addr", addrString(addr), "dur", time.Since(start), "err", err)
		default:
		}
	}()

	var err error
	select {
	case err = <-done:
	case <-tctx.Done():
		select {
		case err = <-done: // finished at the same instant: keep the result
		default:
			close(abandoned)
			return b.timedOut(ctx, addr, time.Since(start))
		}
	}
	lat := time.Since(start)
	b.count(func(s *BusStats) {
		s.LastLatency = lat
		if err != nil {
			s.Errors++
		}
	})
	if err != nil {
		b.log.Debug("i2c tx", "addr", addrString(addr), "dur", lat, "err", err)
		return b.errorf(addr, "%w", drivers.Classify(err))
	}
	copy(r, rc)
	b.log.Debug("i2c tx", "addr", addrString(addr), "dur", lat)
	return nil
}

// timedOut records and reports a transaction abandoned after lat.
func (b *Bus) timedOut(ctx context.Context, addr uint16, lat time.Duration) error {
	b.count(func(s *BusStats) {
		s.LastLatency = lat
		s.Errors++
		s.Timeouts++
	})
	b.log.Debug("i2c tx timed out", "addr", addrString(addr), "dur", lat)
	if err := ctx.Err(); err != nil {
		// The caller's deadline or cancellation came before the bus timeout.
		return b.errorf(addr, "transaction abandoned, bus held until it returns: %w", drivers.Classify(err))
	}
	return b.errorf(addr, "%w after %s, bus held until the transaction returns", drivers.ErrTimeout, b.timeout)
}

func (b *Bus) count(f func(*BusStats)) {
	b.mu.Lock()
	f(&b.stats)
	b.mu.Unlock()
}

// errorf prefixes a message with the bus name and the address.
func (b *Bus) errorf(addr uint16, format string, args ...any) error {
	return fmt.Errorf("i2c %s addr %s: "+format, append([]any{b.name, addrString(addr)}, args...)...)
}

func addrString(addr uint16) string {
	return fmt.Sprintf("0x%02x", addr)
}
