package capabilities

import (
	"github.com/promcp/promcp-device/drivers/i2c"
	"github.com/promcp/promcp-device/manifests"
)

// openPCF8574 opens a PCF8574 or PCF8574A expander. Channels: its pins by
// name, booleans; output pins are written and read back from the port.
// Input pins are kept high (quasi-bidirectional). Simulated by sim's
// expander. The grounds of a reading are the port byte as read.
func openPCF8574(bus *i2c.Bus, d manifests.Device, e env) (*device, error) {
	var outputs uint8
	for _, p := range d.Pins {
		if p.Output {
			outputs |= 1 << p.Pin
		}
	}
	return openExpander(d, e, i2c.NewPCF8574(bus, d.Address, outputs), "port byte (P7..P0)")
}
