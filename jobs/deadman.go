package jobs

import (
	"context"
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
}

// TimerStore keeps dead-man timers.
type TimerStore interface {
	PutTimer(t Timer) error
	DeleteTimer(tool string) error
	LoadTimers() ([]Timer, error)
}

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
	wake   chan struct{}
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
	d := &DeadMan{o: o, timers: map[string]Timer{}, wake: make(chan struct{}, 1)}
	if o.Store != nil {
		ts, err := o.Store.LoadTimers()
		if err != nil {
			return nil, fmt.Errorf("loading dead-man timers: %w", err)
		}
		for _, t := range ts {
			d.timers[t.Tool] = t
		}
	}
	return d, nil
}

// Arm starts (or restarts: a renewal) tool's timer. It is durable before
// Arm returns.
func (d *DeadMan) Arm(t Timer) error {
	if d.o.Store != nil {
		if err := d.o.Store.PutTimer(t); err != nil {
			return fmt.Errorf("recording the dead-man timer of %s: %w", t.Tool, err)
		}
	}
	d.mu.Lock()
	d.timers[t.Tool] = t
	d.mu.Unlock()
	d.poke()
	return nil
}

// Disarm stops tool's timer: its actuator is back at its safe value.
func (d *DeadMan) Disarm(tool string) error {
	d.mu.Lock()
	_, ok := d.timers[tool]
	d.mu.Unlock()
	if ok && d.o.Store != nil {
		if err := d.o.Store.DeleteTimer(tool); err != nil {
			return fmt.Errorf("removing the dead-man timer of %s: %w", tool, err)
		}
	}
	d.mu.Lock()
	delete(d.timers, tool)
	d.mu.Unlock()
	d.poke()
	return nil
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
		case <-fire:
		}
		d.fire(ctx, t)
	}
}

// fire reverts t, unless it was renewed or disarmed meanwhile.
func (d *DeadMan) fire(ctx context.Context, t Timer) {
	d.mu.Lock()
	cur, ok := d.timers[t.Tool]
	d.mu.Unlock()
	if !ok || !cur.At.Equal(t.At) {
		return
	}
	err := d.o.Revert(ctx, t)
	if d.o.Note != nil {
		d.o.Note(ctx, t, err)
	}
	if err == nil {
		if derr := d.Disarm(t.Tool); derr != nil {
			d.o.Log.Error("dead-man timer", "tool", t.Tool, "err", derr)
		}
		return
	}
	d.o.Log.Error("dead-man revert failed; retrying", "tool", t.Tool, "to", t.To, "retry", d.o.Retry, "err", err)
	d.mu.Lock()
	cur, ok = d.timers[t.Tool]
	d.mu.Unlock()
	if ok && cur.At.Equal(t.At) {
		cur.At, cur.Tries = d.o.Clock.Now().Add(d.o.Retry), cur.Tries+1
		if aerr := d.Arm(cur); aerr != nil {
			d.o.Log.Error("dead-man timer", "tool", t.Tool, "err", aerr)
		}
	}
}
