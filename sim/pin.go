package sim

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	pgpio "periph.io/x/conn/v3/gpio"
	"periph.io/x/conn/v3/physic"
	"periph.io/x/conn/v3/pin"

	"github.com/promcp/promcp-device/manifests"
)

// errNoPWM is returned by Pin.PWM.
var errNoPWM = errors.New("sim: pwm not supported")

// pinState is one simulated line, shared by its handles. Guarded by
// World.mu.
type pinState struct {
	name      string // host pin name, "GPIO17"
	device    string // the manifest device on the pin, for faults
	activeLow bool   // of the device on the pin; "on" for the physics
	level     pgpio.Level
	output    bool
	pull      pgpio.Pull
}

func newPinState(d manifests.Device) *pinState {
	on := d.Sim != nil && d.Sim.Level
	return &pinState{
		name:      d.Pin,
		device:    d.Name,
		activeLow: d.ActiveLow,
		level:     pgpio.Level(on != d.ActiveLow),
		pull:      pgpio.PullNoChange,
	}
}

// on is the logical level: what a heater or vent on this line is doing.
func (p *pinState) on() bool { return bool(p.level) != p.activeLow }

// Pin is a handle on a simulated GPIO line; it implements periph's
// gpio.PinIO. Get one from [World.Pin]. It is safe for concurrent use.
//
// The line keeps its level when configured as an input (the simulated
// switch drives it; see [World.Drive]); edges and PWM are not simulated.
type Pin struct {
	w *World
	p *pinState
}

// String returns the pin's name.
func (p *Pin) String() string { return p.p.name }

// Halt does nothing.
func (p *Pin) Halt() error { return nil }

// Name returns the pin's name, such as "GPIO17".
func (p *Pin) Name() string { return p.p.name }

// Number returns the number in the pin's name ("GPIO17" is 17), or -1.
func (p *Pin) Number() int {
	n, err := strconv.Atoi(strings.TrimLeft(p.p.name, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_"))
	if err != nil {
		return -1
	}
	return n
}

// Function returns "Out" or "In".
func (p *Pin) Function() string { return string(p.Func()) }

// Func returns gpio.OUT or gpio.IN.
func (p *Pin) Func() pin.Func {
	p.w.mu.Lock()
	defer p.w.mu.Unlock()
	if p.p.output {
		return pgpio.OUT
	}
	return pgpio.IN
}

// SupportedFuncs returns gpio.IN and gpio.OUT.
func (p *Pin) SupportedFuncs() []pin.Func { return []pin.Func{pgpio.IN, pgpio.OUT} }

// SetFunc sets gpio.IN (pull unchanged) or gpio.OUT (level unchanged).
func (p *Pin) SetFunc(f pin.Func) error {
	switch f {
	case pgpio.IN:
		return p.In(pgpio.PullNoChange, pgpio.NoEdge)
	case pgpio.OUT:
		return p.Out(p.Read())
	}
	return fmt.Errorf("sim: pin %s: function %q not supported", p.p.name, f)
}

// In makes the pin an input. The pull is recorded; the level stays what
// the outside drives. Edge detection is not simulated and is refused.
func (p *Pin) In(pull pgpio.Pull, edge pgpio.Edge) error {
	if edge != pgpio.NoEdge {
		return fmt.Errorf("sim: pin %s: edge detection not supported", p.p.name)
	}
	p.w.mu.Lock()
	defer p.w.mu.Unlock()
	p.w.advanceLocked()
	p.p.output = false
	if pull != pgpio.PullNoChange {
		p.p.pull = pull
	}
	return nil
}

// Read returns the line's level, as the fault active on the pin's device
// (if any) makes it read: stuck at the level it had when the fault began,
// chattering (inverted every other read), or slow.
func (p *Pin) Read() pgpio.Level {
	p.w.mu.Lock()
	fs := p.w.faultLocked(p.p.device, p.w.advanceLocked())
	if d := fs.delay(0); d > 0 {
		p.w.mu.Unlock()
		sleep(d)
		p.w.mu.Lock()
		fs = p.w.faultLocked(p.p.device, p.w.advanceLocked())
	}
	defer p.w.mu.Unlock()
	l := p.p.level
	switch {
	case fs.is(manifests.FaultStuck):
		if !fs.levelValid {
			fs.level, fs.levelValid = bool(l), true
		}
		return pgpio.Level(fs.level)
	case fs.is(manifests.FaultNoise):
		fs.flip = !fs.flip
		if !fs.flip { // the first read under the fault is inverted
			return !l
		}
	}
	return l
}

// WaitForEdge returns false at once: edges are not simulated.
func (p *Pin) WaitForEdge(time.Duration) bool { return false }

// Pull returns the last pull set by In.
func (p *Pin) Pull() pgpio.Pull {
	p.w.mu.Lock()
	defer p.w.mu.Unlock()
	return p.p.pull
}

// DefaultPull returns gpio.PullNoChange.
func (p *Pin) DefaultPull() pgpio.Pull { return pgpio.PullNoChange }

// Out makes the pin an output driving l. The zones advance to now first, so
// that the time spent at the previous level is accounted exactly.
func (p *Pin) Out(l pgpio.Level) error {
	p.w.mu.Lock()
	defer p.w.mu.Unlock()
	p.w.advanceLocked()
	p.p.output = true
	p.p.level = l
	return nil
}

// PWM is not supported.
func (p *Pin) PWM(pgpio.Duty, physic.Frequency) error { return errNoPWM }

// addPin adds a simulated GPIO pin (gpio_in or gpio_out); a zone may use
// an output as a heater or a vent.
func addPin(w *World, d manifests.Device, bl *build) error {
	if _, ok := w.pins[d.Pin]; ok {
		return fmt.Errorf("sim: device %s: pin %s is used twice", d.Name, d.Pin)
	}
	p := newPinState(d)
	w.pins[d.Pin] = p
	bl.pinOf[d.Name] = p
	return nil
}
