package sim

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"periph.io/x/conn/v3/physic"

	"github.com/promcp/promcp-device/drivers"
	"github.com/promcp/promcp-device/manifests"
)

// errClosed is returned by a closed bus handle.
var errClosed = errors.New("bus closed")

// device is a simulated I²C device. tx runs with World.mu held; it returns
// nack() where the chip would not acknowledge. fs is the fault active on the
// device, or nil; the bus applies dropout, nack and delays itself, the
// device the faults on its data (stuck, noise, implausible, crc).
type device interface {
	tx(now time.Time, fs *faultState, w, r []byte) error
}

// busState is one simulated I²C bus, shared by its handles. Guarded by
// World.mu.
type busState struct {
	name    string
	devices map[uint16]device
	names   map[uint16]string // device names, for errors
	tx      uint64
	timeout time.Duration // the manifest's bus timeout, for timeout faults
}

func (b *busState) add(addr uint16, name string, d device) {
	if b.names == nil {
		b.names = make(map[uint16]string)
	}
	b.devices[addr] = d
	b.names[addr] = name
}

// I2CBus is a handle on a simulated I²C bus; it implements periph's
// i2c.BusCloser. Get one from [World.I2C]. It is safe for concurrent use.
type I2CBus struct {
	w      *World
	b      *busState
	closed atomic.Bool
}

// String returns "sim-" followed by the manifest's bus name.
func (c *I2CBus) String() string { return "sim-" + c.b.name }

// Tx performs a transaction with the simulated device at addr: the write
// first, then the read, as on a real bus with a repeated start. A missing
// device, or a device that would not acknowledge, yields an error wrapping
// drivers.ErrnoRemoteIO (EREMOTEIO), as Linux i2c-dev returns.
func (c *I2CBus) Tx(addr uint16, w, r []byte) error {
	if c.closed.Load() {
		return fmt.Errorf("%s: %w", c, errClosed)
	}
	c.w.mu.Lock()
	c.b.tx++
	d, ok := c.b.devices[addr]
	if !ok {
		c.w.mu.Unlock()
		return fmt.Errorf("%s: no device at 0x%02x: %w", c, addr, drivers.ErrnoRemoteIO)
	}
	name := c.b.names[addr]
	fs := c.w.faultLocked(name, c.w.advanceLocked())
	if delay := fs.delay(c.b.timeout); delay > 0 {
		// A slow or stretching device holds the bus, not the world.
		c.w.mu.Unlock()
		sleep(delay)
		c.w.mu.Lock()
		fs = c.w.faultLocked(name, c.w.advanceLocked())
	}
	defer c.w.mu.Unlock()
	switch {
	case fs.is(manifests.FaultDropout):
		return fmt.Errorf("%s: no device at 0x%02x (fault dropout): %w", c, addr, drivers.ErrnoRemoteIO)
	case fs.is(manifests.FaultNACK) && len(r) > 0:
		return fmt.Errorf("%s: %s at 0x%02x: %w", c, name, addr, nack("read refused (fault nack)"))
	}
	if err := d.tx(c.w.clk.Now(), fs, w, r); err != nil {
		return fmt.Errorf("%s: %s at 0x%02x: %w", c, name, addr, err)
	}
	return nil
}

// SetSpeed accepts any speed; the simulator has no bus clock.
func (c *I2CBus) SetSpeed(physic.Frequency) error { return nil }

// Close closes this handle; further Tx calls on it fail. Other handles on the
// same bus are unaffected. Close is idempotent.
func (c *I2CBus) Close() error {
	c.closed.Store(true)
	return nil
}

// nack is what a device returns when it does not acknowledge.
func nack(why string) error {
	return fmt.Errorf("%s: %w", why, drivers.ErrnoRemoteIO)
}
