package capabilities

import (
	"fmt"

	"github.com/promcp/promcp-device/driverconf"
	"github.com/promcp/promcp-device/drivers/serial"
	"github.com/promcp/promcp-device/manifests"
)

// openSerialLine opens a text instrument on a serial line. Channels: the
// named groups of its response pattern. Read-only. Simulated by sim's line
// instruments.
func openSerialLine(line *serial.Line, d manifests.Device, e env) (*device, error) {
	in, err := line.Instrument(d.Name, driverconf.Instrument(d.Line), d.Timeout)
	if err != nil {
		return nil, err
	}
	return &device{
		model: d.Model,
		// Each channel has its own sampler; the instrument coalesces
		// concurrent reads of the line into one transaction.
		source: perChannelOf(e.clock, in.Read, func(vals map[string]float64, channel string, t manifests.ValueType) (any, []byte, error) {
			f, ok := vals[channel]
			if !ok {
				return nil, nil, fmt.Errorf("serial device %s: no value %q in its response", d.Name, channel)
			}
			// The driver hands out the parsed fields, not the line.
			return numeric(round(f, 9), t), nil, nil
		}),
		writer: noWriter(d.Model),
		bind: func(channel string) Binding {
			return Binding{Driver: "serial", Address: "request " + fmt.Sprintf("%q", d.Line.Request), Register: channel,
				RawForm:    "none: the serial driver returns the response's parsed fields, not its text",
				Conversion: fmt.Sprintf("named group %q of the response pattern, parsed as a decimal number", channel)}
		},
	}, nil
}
