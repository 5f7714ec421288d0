// Package host opens the I2C buses and GPIO pins of the machine it runs on,
// through periph.io. It is apart from package drivers so that importing the
// error classes does not pull in periph's host drivers and their init-time
// registration.
package host

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"periph.io/x/conn/v3/gpio"
	"periph.io/x/conn/v3/gpio/gpioreg"
	"periph.io/x/conn/v3/i2c"
	"periph.io/x/conn/v3/i2c/i2creg"
	"periph.io/x/conn/v3/spi"
	"periph.io/x/conn/v3/spi/spireg"
	phost "periph.io/x/host/v3"

	"github.com/promcp/promcp-device/drivers"
	"github.com/promcp/promcp-device/drivers/gpio/chardev"
)

// Host opens the buses and pins of the machine it runs on, through periph.io.
// It initializes periph's host drivers once, on first use.
//
// The zero value is not usable; create one with [New]. A Host is safe for
// concurrent use.
type Host struct {
	log *slog.Logger

	once    sync.Once
	initErr error

	mu    sync.Mutex
	lines map[string]*chardev.Line // by chip path and offset
}

// NewHost returns a Host that logs to log (nil discards). It does no I/O.
func New(log *slog.Logger) *Host {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Host{log: log}
}

// init runs periph's host.Init once per Host.
func (h *Host) init() error {
	h.once.Do(func() {
		state, err := phost.Init()
		if err != nil {
			h.initErr = err
			return
		}
		h.log.Info("periph host initialized", "loaded", len(state.Loaded), "skipped", len(state.Skipped), "failed", len(state.Failed))
	})
	return h.initErr
}

// ready is what opening anything needs first: ctx not done, and periph's
// host drivers initialized. Its errors start with what ("i2c bus \"1\"").
func (h *Host) ready(ctx context.Context, what string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if err := h.init(); err != nil {
		return fmt.Errorf("%s: %w: periph host init: %w", what, drivers.ErrUnavailable, err)
	}
	return nil
}

// I2C opens the I²C bus the host calls name: a periph bus name, alias or
// number ("1", "/dev/i2c-1", "I2C1"); "" opens the first bus found. This is
// the manifest bus's Device field.
//
// The caller owns the returned bus and closes it. A bus that cannot be opened
// yields an error that wraps [drivers.ErrUnavailable] and names the bus.
func (h *Host) I2C(ctx context.Context, name string) (i2c.BusCloser, error) {
	if err := h.ready(ctx, fmt.Sprintf("i2c bus %q", name)); err != nil {
		return nil, err
	}
	all := i2creg.All()
	if len(all) == 0 {
		// periph would add "did you forget to call Init()?", which misleads.
		return nil, fmt.Errorf("i2c bus %q: %w: no bus found (is I2C enabled? see raspi-config)", name, drivers.ErrUnavailable)
	}
	b, err := i2creg.Open(name)
	if err != nil {
		names := make([]string, len(all))
		for i, r := range all {
			names[i] = r.Name
		}
		return nil, fmt.Errorf("i2c bus %q: %w: %w (this host has %s)", name, drivers.ErrUnavailable, err, strings.Join(names, ", "))
	}
	h.log.Info("i2c bus opened", "bus", name)
	return b, nil
}

// Pin returns the GPIO pin the host calls name ("GPIO17"), unconfigured: on
// the GPIO character device, a chardev.Line (see ownLine). The
// pin is shared host state and is not closed.
//
// An unknown pin yields an error that wraps [drivers.ErrUnavailable] and names the
// pin.
func (h *Host) Pin(ctx context.Context, name string) (gpio.PinIO, error) {
	if err := h.ready(ctx, fmt.Sprintf("gpio pin %q", name)); err != nil {
		return nil, err
	}
	p := gpioreg.ByName(name)
	if p == nil {
		return nil, fmt.Errorf("gpio pin %q: %w: no such pin on this host", name, drivers.ErrUnavailable)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ownLine(p), nil
}

// SPI opens the SPI port the host calls name: an spidev path or periph
// name ("/dev/spidev0.0", "SPI0.0"); "" opens the first found. This is
// the manifest bus's Device field. The caller closes it.
func (h *Host) SPI(ctx context.Context, name string) (spi.PortCloser, error) {
	if err := h.ready(ctx, fmt.Sprintf("spi port %q", name)); err != nil {
		return nil, err
	}
	if len(spireg.All()) == 0 {
		return nil, fmt.Errorf("spi port %q: %w: no port found (is SPI enabled? dtparam=spi=on)", name, drivers.ErrUnavailable)
	}
	p, err := spireg.Open(name)
	if err != nil {
		return nil, fmt.Errorf("spi port %q: %w: %w", name, drivers.ErrUnavailable, err)
	}
	h.log.Info("spi port opened", "port", name)
	return p, nil
}
