package gpio

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	pgpio "periph.io/x/conn/v3/gpio"
)

// Output is a digital output. Its logical level is true ("on") when the line
// is high, or low when active low.
//
// The zero value is not usable; create one with [NewOutput].
type Output struct {
	name      string
	pin       pgpio.PinIO
	activeLow bool
	log       *slog.Logger

	mu sync.Mutex // serializes read-modify sequences on the pin
}

// NewOutput returns an output on pin, named name in errors and logs (the
// manifest device name). log nil discards. NewOutput does no I/O.
func NewOutput(name string, pin pgpio.PinIO, activeLow bool, log *slog.Logger) *Output {
	return &Output{name: name, pin: pin, activeLow: activeLow, log: logger(log, pin)}
}

// Open configures the pin as an output without changing its level: it reads
// the line and drives it at the level it read, so that opening a relay that
// is on does not switch it off.
func (o *Output) Open(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return o.errorf("open: %w", err)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	l, err := readLevel(o.pin)
	if err != nil {
		return o.errorf("open: read: %w", err)
	}
	if err := o.pin.Out(l); err != nil {
		return o.errorf("open: set as output at %s: %w", l, err)
	}
	o.log.Info("gpio output opened", "level", l, "on", o.logical(l))
	return nil
}

// Set switches the output on (true) or off (false), the line level following
// active_low.
func (o *Output) Set(ctx context.Context, on bool) error {
	if err := ctx.Err(); err != nil {
		return o.errorf("set: %w", err)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	l := pgpio.Level(on != o.activeLow)
	if err := o.pin.Out(l); err != nil {
		return o.errorf("set %t (line %s): %w", on, l, err)
	}
	o.log.Debug("gpio set", "on", on, "level", l)
	return nil
}

// Get returns the output's logical level, read back from the line: on the
// GPIO character device, the value the kernel drives (reading never turns
// the output into an input).
func (o *Output) Get(ctx context.Context) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, o.errorf("get: %w", err)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	l, err := readLevel(o.pin)
	if err != nil {
		return false, o.errorf("get: %w", err)
	}
	return o.logical(l), nil
}

// levelReader is a pin that reports why a read failed (chardev.Line);
// periph's PinIn.Read returns Low instead.
type levelReader interface {
	ReadLevel() (pgpio.Level, error)
}

func readLevel(pin pgpio.PinIn) (pgpio.Level, error) {
	if r, ok := pin.(levelReader); ok {
		return r.ReadLevel()
	}
	return pin.Read(), nil
}

func (o *Output) logical(l pgpio.Level) bool { return bool(l) != o.activeLow }

func (o *Output) errorf(format string, args ...any) error {
	return fmt.Errorf("gpio %s (%s): "+format, append([]any{o.name, o.pin.Name()}, args...)...)
}

// Input is a digital input. Its logical level is true when the line is high,
// or low when active low.
//
// The zero value is not usable; create one with [NewInput].
type Input struct {
	name      string
	pin       pgpio.PinIO
	pull      Pull
	activeLow bool
	log       *slog.Logger
}

// NewInput returns an input on pin with the pull resistor pull (the empty
// Pull leaves the resistor as it is), named name in errors and logs. log nil
// discards. NewInput does no I/O.
func NewInput(name string, pin pgpio.PinIO, pull Pull, activeLow bool, log *slog.Logger) *Input {
	return &Input{name: name, pin: pin, pull: pull, activeLow: activeLow, log: logger(log, pin)}
}

// Open configures the pin as an input with the pull resistor and no edge
// detection. An unknown pull value is an error and leaves the pin untouched.
func (i *Input) Open(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return i.errorf("open: %w", err)
	}
	p, err := i.pull.Periph()
	if err != nil {
		return i.errorf("open: %w", err)
	}
	if err := i.pin.In(p, pgpio.NoEdge); err != nil {
		return i.errorf("open: set as input (pull %s): %w", p, err)
	}
	i.log.Info("gpio input opened", "pull", p)
	return nil
}

// Get returns the input's logical level.
func (i *Input) Get(ctx context.Context) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, i.errorf("get: %w", err)
	}
	l, err := readLevel(i.pin)
	if err != nil {
		return false, i.errorf("get: %w", err)
	}
	return bool(l) != i.activeLow, nil
}

func (i *Input) errorf(format string, args ...any) error {
	return fmt.Errorf("gpio %s (%s): "+format, append([]any{i.name, i.pin.Name()}, args...)...)
}

// Pull is an input's pull resistor. The empty Pull leaves the resistor as it
// is.
type Pull string

// Pull values.
const (
	PullNone Pull = "none"
	PullUp   Pull = "up"
	PullDown Pull = "down"
)

// Periph converts p to periph's pull: "" is PullNoChange, "none" Float, "up"
// PullUp and "down" PullDown.
func (p Pull) Periph() (pgpio.Pull, error) {
	switch p {
	case "":
		return pgpio.PullNoChange, nil
	case PullNone:
		return pgpio.Float, nil
	case PullUp:
		return pgpio.PullUp, nil
	case PullDown:
		return pgpio.PullDown, nil
	}
	return pgpio.PullNoChange, fmt.Errorf("unknown pull %q (want none, up or down)", p)
}

func logger(log *slog.Logger, pin pgpio.PinIO) *slog.Logger {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return log.With("addr", pin.Name()) // the caller's logger names the device
}
