// Package chardev drives one GPIO line through the Linux GPIO character
// device's v2 uAPI (/dev/gpiochipN): the path a Raspberry Pi 5 and any
// board whose GPIO chip is not a bcm283x takes.
//
// It replaces periph's gpioioctl line, whose Read on a line that is not an
// input first re-requests it as a pulled-up input: reading back a relay
// output turned it into an input. Here reading a line never changes its
// direction or bias: the kernel returns an output line's driven value
// through GPIO_V2_LINE_GET_VALUES_IOCTL on the request that holds it as an
// output.
//
// A [Line] implements periph's gpio.PinIO and holds its line request for
// its lifetime (pins are shared host state and are not closed). It is safe
// for concurrent use.
package chardev

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	pgpio "periph.io/x/conn/v3/gpio"
	"periph.io/x/conn/v3/physic"
)

// direction is the direction this process requested for the line.
type direction int

const (
	asIs direction = iota // requested without a direction, or not requested
	input
	output
)

// Line is one line of a GPIO chip. The zero value is not usable; create one
// with [New].
type Line struct {
	chip     string // the chip's device path
	offset   uint32
	name     string
	consumer string
	sys      sys
	log      *slog.Logger

	mu     sync.Mutex
	fd     int // the line request; -1 before the first request
	dir    direction
	pull   pgpio.Pull
	edge   pgpio.Edge
	events *os.File // the request fd as a file, once edges are waited for
}

// New returns line offset of the chip at path (/dev/gpiochip0), named name.
// consumer is the label the kernel shows for the line once requested
// (gpioinfo). log nil discards. New does no I/O: the line is requested on
// first use.
func New(path string, offset int, name, consumer string, log *slog.Logger) *Line {
	return newLine(path, offset, name, consumer, log, osSys{})
}

func newLine(path string, offset int, name, consumer string, log *slog.Logger, s sys) *Line {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Line{chip: path, offset: uint32(offset), name: name, consumer: consumer, sys: s, log: log, fd: -1, pull: pgpio.PullNoChange}
}

// String implements conn.Resource.
func (l *Line) String() string { return fmt.Sprintf("%s (%s line %d)", l.name, l.chip, l.offset) }

// Name implements pin.Pin: the line's name ("GPIO17").
func (l *Line) Name() string { return l.name }

// Number implements pin.Pin: the line's offset on its chip.
func (l *Line) Number() int { return int(l.offset) }

// Function implements pin.Pin.
func (l *Line) Function() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch l.dir {
	case input:
		return "In/" + l.level()
	case output:
		return "Out/" + l.level()
	}
	return ""
}

func (l *Line) level() string {
	v, err := l.get()
	if err != nil {
		return "?"
	}
	return v.String()
}

// Halt implements conn.Resource: it interrupts a pending WaitForEdge.
func (l *Line) Halt() error {
	l.mu.Lock()
	f := l.events
	l.mu.Unlock()
	if f == nil {
		return nil
	}
	return f.SetReadDeadline(time.Unix(0, 1))
}

// In implements gpio.PinIn: it requests the line as an input with the pull
// (PullNoChange leaves the bias as it is) and edge detection.
func (l *Line) In(pull pgpio.Pull, edge pgpio.Edge) error {
	flags := flagInput
	switch pull {
	case pgpio.PullNoChange:
	case pgpio.Float:
		flags |= flagBiasDisabled
	case pgpio.PullUp:
		flags |= flagBiasPullUp
	case pgpio.PullDown:
		flags |= flagBiasPullDown
	default:
		return fmt.Errorf("%s: unknown pull %v", l.name, pull)
	}
	switch edge {
	case pgpio.NoEdge:
	case pgpio.RisingEdge:
		flags |= flagEdgeRising
	case pgpio.FallingEdge:
		flags |= flagEdgeFalling
	case pgpio.BothEdges:
		flags |= flagEdgeRising | flagEdgeFalling
	default:
		return fmt.Errorf("%s: unknown edge %v", l.name, edge)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.configure(flags, false); err != nil {
		return err
	}
	l.dir, l.pull, l.edge = input, pull, edge
	return nil
}

// Out implements gpio.PinOut: it drives the line at level, requesting it as
// an output at that level first if it is not one (direction and value in one
// call, without a glitch).
func (l *Line) Out(level pgpio.Level) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.dir != output {
		if err := l.configure(flagOutput, bool(level)); err != nil {
			return err
		}
		l.dir, l.pull, l.edge = output, pgpio.PullNoChange, pgpio.NoEdge
		return nil
	}
	v := lineValues{mask: 1}
	if level {
		v.bits = 1
	}
	if err := l.sys.ioctl(l.fd, ioctlSetValues, &v); err != nil {
		return fmt.Errorf("%s: set value %s: %w", l.name, level, err)
	}
	return nil
}

// Read implements gpio.PinIn: the line's level, Low where it cannot be read
// (see [Line.ReadLevel], which reports why). Reading never changes the
// line's direction or bias; an output returns the value it drives.
func (l *Line) Read() pgpio.Level {
	v, err := l.ReadLevel()
	if err != nil {
		l.log.Warn("gpio read failed", "line", l.name, "err", err)
		return pgpio.Low
	}
	return v
}

// ReadLevel returns the line's level. A line not requested yet is requested
// as it is, without a direction, so that reading it changes nothing.
func (l *Line) ReadLevel() (pgpio.Level, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.get()
}

func (l *Line) get() (pgpio.Level, error) {
	if l.fd < 0 {
		if err := l.configure(0, false); err != nil {
			return pgpio.Low, err
		}
	}
	v := lineValues{mask: 1}
	if err := l.sys.ioctl(l.fd, ioctlGetValues, &v); err != nil {
		return pgpio.Low, fmt.Errorf("%s: get value: %w", l.name, err)
	}
	return v.bits&1 == 1, nil
}

// WaitForEdge implements gpio.PinIn: it waits up to timeout (0: for ever)
// for an edge that In asked for, and reports whether one came. Halt
// interrupts it.
func (l *Line) WaitForEdge(timeout time.Duration) bool {
	f, err := l.eventFile()
	if err != nil {
		l.log.Warn("gpio edge wait failed", "line", l.name, "err", err)
		return false
	}
	deadline := time.Time{}
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	if err := f.SetReadDeadline(deadline); err != nil {
		return false
	}
	var ev [eventSize]byte
	n, err := f.Read(ev[:])
	return err == nil && n == eventSize
}

func (l *Line) eventFile() (*os.File, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.dir != input || l.edge == pgpio.NoEdge {
		return nil, fmt.Errorf("%s: no edge detection requested", l.name)
	}
	if l.events == nil {
		f, err := l.sys.file(l.fd, l.name)
		if err != nil {
			return nil, fmt.Errorf("%s: edge events: %w", l.name, err)
		}
		l.events = f
	}
	return l.events, nil
}

// Pull implements gpio.PinIn: the pull this process requested.
func (l *Line) Pull() pgpio.Pull {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.pull
}

// DefaultPull implements gpio.PinIn: the uAPI does not say.
func (l *Line) DefaultPull() pgpio.Pull { return pgpio.PullNoChange }

// PWM implements gpio.PinOut: not on this path (use the PWM sysfs driver).
func (l *Line) PWM(pgpio.Duty, physic.Frequency) error {
	return fmt.Errorf("%s: %w: PWM is not driven through the GPIO character device", l.name, errors.ErrUnsupported)
}

// configure requests the line with flags (and, for an output, its value),
// or changes the configuration of the request it holds. l.mu is held.
func (l *Line) configure(flags uint64, value bool) error {
	var c lineConfig
	c.flags = flags
	if flags&flagOutput != 0 {
		c.numAttrs = 1
		c.attrs[0] = lineConfigAttribute{attr: lineAttribute{id: attrIDValues}, mask: 1}
		if value {
			c.attrs[0].attr.value = 1
		}
	}
	if l.fd >= 0 {
		if err := l.sys.ioctl(l.fd, ioctlSetConfig, &c); err != nil {
			return fmt.Errorf("%s: configure line (flags %#x): %w", l.name, flags, err)
		}
		return nil
	}
	chip, err := l.sys.open(l.chip)
	if err != nil {
		return fmt.Errorf("%s: %w", l.name, err)
	}
	defer func() { _ = l.sys.close(chip) }()
	var r lineRequest
	r.offsets[0] = l.offset
	r.numLines = 1
	copy(r.consumer[:maxNameSize-1], l.consumer)
	r.config = c
	if err := l.sys.ioctl(chip, ioctlGetLine, &r); err != nil {
		return fmt.Errorf("%s: request line %d of %s (flags %#x): %w", l.name, l.offset, l.chip, flags, err)
	}
	l.fd = int(r.fd)
	return nil
}
