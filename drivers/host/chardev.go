package host

import (
	"fmt"
	"os"
	"path/filepath"

	"periph.io/x/conn/v3/gpio"
	"periph.io/x/host/v3/gpioioctl"

	"github.com/promcp/promcp-device/drivers/gpio/chardev"
)

// ownLine replaces a line of periph's GPIO character-device driver
// (gpioioctl) with this project's chardev.Line on the same chip and offset:
// periph's Read on an output re-requests it as a pulled-up input, which
// switches a relay. Other pins (the Pi 1–4 register-mapped driver) are
// returned unchanged. The same line yields the same Line, since the kernel
// lets one request hold a line. h.mu is held.
func (h *Host) ownLine(p gpio.PinIO) gpio.PinIO {
	real := p
	if r, ok := p.(gpio.RealPin); ok {
		real = r.Real()
	}
	gl, ok := real.(*gpioioctl.GPIOLine)
	if !ok {
		return p
	}
	for _, c := range gpioioctl.Chips {
		for _, l := range c.Lines() {
			if l != gl {
				continue
			}
			key := fmt.Sprintf("%s:%d", c.Path(), l.Number())
			if own, ok := h.lines[key]; ok {
				return own
			}
			own := chardev.New(c.Path(), l.Number(), p.Name(), consumer(), h.log)
			if h.lines == nil {
				h.lines = make(map[string]*chardev.Line)
			}
			h.lines[key] = own
			return own
		}
	}
	return p
}

// consumer is the label gpioinfo shows on the lines this process holds, as
// periph labels them: program@pid.
func consumer() string {
	return fmt.Sprintf("%s@%d", filepath.Base(os.Args[0]), os.Getpid())
}
