package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/promcp/promcp-device/clock"
)

// Timer is a dead-man limit that is counting: unless renewed, Tool's
// actuator is reverted to To at At.
type Timer struct {
	Tool  string    `json:"tool"`
	To    any       `json:"to"`
	At    time.Time `json:"at"`
	Armed time.Time `json:"armed"` // when the action that armed it ran
	Value any       `json:"value"` // the value it holds, away from To
	// Tries counts the reverts that failed; each failure retries later.
	Tries int `json:"tries,omitempty"`
	// Gen names the arming this timer belongs to: each Arm of a new
	// timer (a renewal too) gets a new one, a retry keeps it. Only its own
	// arming disarms a timer (Disarm with its Gen), so a revert that ends
	// after a renewal cannot disarm the renewal's timer.
	Gen uint64 `json:"gen,omitempty"`
}

// TimerStore keeps dead-man timers.
type TimerStore interface {
	PutTimer(t Timer) error
	DeleteTimer(tool string) error
	LoadTimers() ([]Timer, error)
}

// ErrRenewed is what Revert returns when it found, under the actuator's
// reservation, that a renewal re-armed the timer first: the revert is
// dropped, not retried, and the renewal's timer stays.
var ErrRenewed = errors.New("renewed before the revert could run")

// DeadManOptions configure a DeadMan.
type DeadManOptions struct {
	Clock clock.Clock
	Store TimerStore // nil: in memory only
	// Revert applies to to tool's actuator, through the gateway's action
	// path; an error leaves the timer armed, retried after Retry.
	Revert func(ctx context.Context, t Timer) error
	// Note is told of each revert and its error (nil when it worked).
	Note  func(ctx context.Context, t Timer, err error)
	Retry time.Duration // 0: 10 s
	Log   *slog.Logger
}

// DeadMan enforces dead-man limits: each armed timer reverts its actuator
// when it falls due, on the gateway's own clock, whether or not a client is
// connected. Timers are written to the store when armed, so that a revert
// due while the process was down happens as it starts.
type DeadMan struct {
	o      DeadManOptions
	mu     sync.Mutex
	timers map[string]Timer
	gen    uint64 // the last Gen given
	wake   chan struct{}
	// stale holds the timers disarmed in memory whose deletion from the
	// store failed (a full disk), with when it is tried again: the timer
	// no longer fires, and its record goes as soon as the store takes it.
	stale map[string]time.Time
}

// NewDeadMan returns a DeadMan holding the timers of its store.
func NewDeadMan(o DeadManOptions) (*DeadMan, error) {
	o.Clock = clock.Or(o.Clock)
	if o.Retry <= 0 {
		o.Retry = 10 * time.Second
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	d := &DeadMan{o: o, timers: map[string]Timer{}, wake: make(chan struct{}, 1), stale: map[string]time.Time{}}
	if o.Store != nil {
		ts, err := o.Store.LoadTimers()
		if err != nil {
			return nil, fmt.Errorf("loading dead-man timers: %w", err)
		}
		for _, t := range ts {
			d.gen = max(d.gen, t.Gen)
		}
		for _, t := range ts {
			if t.Gen == 0 { // recorded before timers had generations
				d.gen++
				t.Gen = d.gen
			}
			d.timers[t.Tool] = t
		}
	}
	return d, nil
}

// Arm starts (or restarts: a renewal) tool's timer, and returns it with
// its Gen: a new one unless t has one (a retry of the same arming). It is
// durable before Arm returns; on error it still holds in memory.
func (d *DeadMan) Arm(t Timer) (Timer, error) {
	d.mu.Lock()
	if t.Gen == 0 {
		d.gen++
		t.Gen = d.gen
	} else if cur, ok := d.timers[t.Tool]; !ok || cur.Gen != t.Gen {
		d.mu.Unlock()
		return cur, nil // a retry of an arming renewed or disarmed meanwhile
	}
	d.mu.Unlock()
	var err error
	if d.o.Store != nil {
		if perr := d.o.Store.PutTimer(t); perr != nil {
			err = fmt.Errorf("recording the dead-man timer of %s: %w", t.Tool, perr)
		}
	}
	d.mu.Lock()
	d.timers[t.Tool] = t
	if err == nil {
		delete(d.stale, t.Tool) // its record is overwritten
	}
	d.mu.Unlock()
	d.poke()
	return t, err
}

// Disarm stops tool's timer of arming gen (its actuator is back at its
// safe value); a timer armed since (a renewal) stays. It reports whether
// it disarmed one. The timer is forgotten in memory first: if the store
// cannot delete its record (a full disk), it does not fire again; the
// deletion is retried every Retry on the clock until the store takes it.
func (d *DeadMan) Disarm(tool string, gen uint64) (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	cur, ok := d.timers[tool]
	if !ok || cur.Gen != gen {
		return false, nil
	}
	delete(d.timers, tool)
	d.poke()
	if d.o.Store != nil {
		if err := d.o.Store.DeleteTimer(tool); err != nil {
			d.stale[tool] = d.o.Clock.Now().Add(d.o.Retry)
			return true, fmt.Errorf("removing the dead-man timer of %s (retried every %s): %w", tool, d.o.Retry, err)
		}
	}
	delete(d.stale, tool)
	return true, nil
}

// retryStale retries the deletions of disarmed timers' records that are
// due at now, and returns when the next one is due (zero: none waits).
func (d *DeadMan) retryStale(now time.Time) time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	var next time.Time
	for tool, at := range d.stale {
		if _, armed := d.timers[tool]; armed {
			delete(d.stale, tool) // re-armed: its next write replaces the record
			continue
		}
		if at.After(now) {
			if next.IsZero() || at.Before(next) {
				next = at
			}
			continue
		}
		if err := d.o.Store.DeleteTimer(tool); err != nil {
			d.o.Log.Error("dead-man timer record still not removed; retrying", "tool", tool, "retry", d.o.Retry, "err", err)
			at = now.Add(d.o.Retry)
			d.stale[tool] = at
			if next.IsZero() || at.Before(next) {
				next = at
			}
			continue
		}
		delete(d.stale, tool)
	}
	return next
}

// Due returns tool's timer, if armed.
func (d *DeadMan) Due(tool string) (Timer, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	t, ok := d.timers[tool]
	return t, ok
}

func (d *DeadMan) poke() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// next returns the earliest timer.
func (d *DeadMan) next() (Timer, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var first Timer
	found := false
	for _, t := range d.timers {
		if !found || t.At.Before(first.At) || (t.At.Equal(first.At) && t.Tool < first.Tool) {
			first, found = t, true
		}
	}
	return first, found
}

// Run reverts each timer as it falls due, until ctx ends. Timers already
// due (the process was down) revert at once.
func (d *DeadMan) Run(ctx context.Context) {
	for {
		var retry <-chan time.Time
		if at := d.retryStale(d.o.Clock.Now()); !at.IsZero() {
			retry = d.o.Clock.After(at.Sub(d.o.Clock.Now()))
		}
		t, ok := d.next()
		var fire <-chan time.Time
		if ok {
			if wait := t.At.Sub(d.o.Clock.Now()); wait > 0 {
				fire = d.o.Clock.After(wait)
			} else {
				ch := make(chan time.Time, 1)
				ch <- t.At
				fire = ch
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-d.wake:
			continue
		case <-retry:
			continue
		case <-fire:
		}
		d.fire(ctx, t)
	}
}

// fire reverts t, unless it was renewed or disarmed meanwhile. The
// revert itself checks again, under the actuator's reservation, that t is
// still the armed timer (a renewal that reserved first wins, and the
// revert is dropped); it disarms only t's own arming.
func (d *DeadMan) fire(ctx context.Context, t Timer) {
	d.mu.Lock()
	cur, ok := d.timers[t.Tool]
	d.mu.Unlock()
	if !ok || cur.Gen != t.Gen || !cur.At.Equal(t.At) {
		return
	}
	err := d.o.Revert(ctx, t)
	if errors.Is(err, ErrRenewed) {
		d.o.Log.Info("dead-man revert dropped: renewed first", "tool", t.Tool)
		return
	}
	if d.o.Note != nil {
		d.o.Note(ctx, t, err)
	}
	if err == nil {
		if _, derr := d.Disarm(t.Tool, t.Gen); derr != nil {
			d.o.Log.Error("dead-man timer", "tool", t.Tool, "err", derr)
		}
		return
	}
	d.o.Log.Error("dead-man revert failed; retrying", "tool", t.Tool, "to", t.To, "retry", d.o.Retry, "err", err)
	d.mu.Lock()
	cur, ok = d.timers[t.Tool]
	d.mu.Unlock()
	if ok && cur.Gen == t.Gen {
		cur.At, cur.Tries = d.o.Clock.Now().Add(d.o.Retry), cur.Tries+1
		if _, aerr := d.Arm(cur); aerr != nil {
			d.o.Log.Error("dead-man timer", "tool", t.Tool, "err", aerr)
		}
	}
}
