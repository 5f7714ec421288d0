// Package pulse counts the edges of a GPIO input: a hall-effect flow meter,
// a rain gauge's tipping bucket, an energy meter's S0 output. A goroutine
// waits for edges (periph's gpio.PinIn.WaitForEdge), drops those that
// follow a counted one within the debounce time, and keeps the total and
// the times of recent pulses for the rate. The total can be kept in a file
// across restarts.
package pulse

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"periph.io/x/conn/v3/gpio"

	"github.com/promcp/promcp-device/clock"
)

// RateWindow is the span over which the rate is averaged.
const RateWindow = time.Minute

// maxRecent bounds the pulse times kept for the rate: above
// maxRecent/RateWindow (about 1 kHz) the rate is averaged over the span the
// kept pulses cover instead.
const maxRecent = 1 << 16

// poll is how long one wait for an edge lasts before the loop checks
// whether it should stop.
const poll = 100 * time.Millisecond

// Counter counts the edges of one pin.
type Counter struct {
	pin      gpio.PinIn
	pull     gpio.Pull
	edge     gpio.Edge
	debounce time.Duration
	clk      clock.Clock
	store    *File
	log      *slog.Logger

	mu      sync.Mutex
	total   uint64
	saved   uint64
	savedAt time.Time
	last    time.Time   // the last counted edge
	recent  []time.Time // ring of the last pulses' times
	next    int
	start   time.Time

	stop chan struct{}
	done chan struct{}
}

// Config is how a Counter counts.
type Config struct {
	Pull     gpio.Pull
	Edge     gpio.Edge // gpio.FallingEdge, RisingEdge or BothEdges
	Debounce time.Duration
	// Store keeps the total across restarts; nil keeps it in memory.
	Store *File
	Clock clock.Clock
	Log   *slog.Logger
}

// New returns a counter on pin. Start begins counting.
func New(pin gpio.PinIn, cfg Config) *Counter {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Counter{pin: pin, pull: cfg.Pull, edge: cfg.Edge, debounce: cfg.Debounce,
		clk: clock.Or(cfg.Clock), store: cfg.Store, log: cfg.Log}
}

// Start loads the stored total, sets the pin up for edge detection and
// starts counting until Close.
func (c *Counter) Start(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if c.store != nil {
		n, err := c.store.Load()
		if err != nil {
			return err
		}
		c.total, c.saved = n, n
	}
	if err := c.pin.In(c.pull, c.edge); err != nil {
		return fmt.Errorf("pulse counter on %s: edge detection: %w", c.pin, err)
	}
	c.start = c.clk.Now()
	c.savedAt = c.start
	c.stop, c.done = make(chan struct{}), make(chan struct{})
	go c.run()
	return nil
}

func (c *Counter) run() {
	defer close(c.done)
	for {
		select {
		case <-c.stop:
			return
		default:
		}
		if c.pin.WaitForEdge(poll) {
			c.Observe(c.clk.Now())
		}
	}
}

// Observe counts an edge seen at t, unless it follows the last counted
// one within the debounce time (contact bounce). The counting goroutine
// calls it; it is exported for drivers that see edges some other way.
func (c *Counter) Observe(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.last.IsZero() && t.Sub(c.last) < c.debounce {
		return
	}
	c.last = t
	c.total++
	if len(c.recent) < maxRecent {
		c.recent = append(c.recent, t)
	} else {
		c.recent[c.next] = t
		c.next = (c.next + 1) % maxRecent
	}
	if c.store != nil && t.Sub(c.savedAt) >= time.Second {
		c.saveLocked(t)
	}
}

func (c *Counter) saveLocked(t time.Time) {
	if c.total == c.saved {
		return
	}
	if err := c.store.Save(c.total); err != nil {
		c.log.Error("pulse total not saved", "err", err)
		return
	}
	c.saved, c.savedAt = c.total, t
}

// Snapshot returns the total and the rate in pulses per second at now:
// the pulses of the last RateWindow over the window (over the time since
// Start while that is shorter).
func (c *Counter) Snapshot(now time.Time) (total uint64, rate float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	span := min(RateWindow, now.Sub(c.start))
	if len(c.recent) == maxRecent {
		oldest := c.recent[c.next]
		span = min(span, now.Sub(oldest))
	}
	if span <= 0 {
		return c.total, 0
	}
	n := 0
	for _, t := range c.recent {
		if now.Sub(t) < span && !t.After(now) {
			n++
		}
	}
	if c.store != nil && now.Sub(c.savedAt) >= time.Second {
		c.saveLocked(now)
	}
	return c.total, float64(n) / span.Seconds()
}

// Close stops counting and saves the total.
func (c *Counter) Close() error {
	if c.stop == nil {
		return nil
	}
	close(c.stop)
	<-c.done
	c.stop = nil
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.store != nil && c.total != c.saved {
		if err := c.store.Save(c.total); err != nil {
			return err
		}
		c.saved = c.total
	}
	return nil
}

// File keeps a total in a file, replaced atomically (a temporary file,
// fsync, rename), so that a crash leaves the old total or the new one.
type File struct{ Path string }

// Load returns the stored total, 0 when the file does not exist yet.
func (f *File) Load() (uint64, error) {
	b, err := os.ReadFile(f.Path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("pulse total: %w", err)
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("pulse total: %s holds %q, not a count (remove it to start from 0)", f.Path, strings.TrimSpace(string(b)))
	}
	return n, nil
}

// Save replaces the stored total with n.
func (f *File) Save(n uint64) error {
	if err := os.MkdirAll(filepath.Dir(f.Path), 0o700); err != nil {
		return fmt.Errorf("pulse total: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(f.Path), ".pulses-*")
	if err != nil {
		return fmt.Errorf("pulse total: %w", err)
	}
	_, werr := fmt.Fprintf(tmp, "%d\n", n)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("pulse total: %w", err)
	}
	if err := os.Rename(tmp.Name(), f.Path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("pulse total: %w", err)
	}
	return nil
}
