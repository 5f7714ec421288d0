package capabilities

import (
	"context"
	"fmt"

	"github.com/promcp/promcp-device/driverconf"
	"github.com/promcp/promcp-device/manifests"
)

// openSerialLine opens a text instrument on a serial line. Channels: the
// named groups of its response pattern. Read-only. Simulated by sim's line
// instruments.
func openSerialLine(_ context.Context, d manifests.Device, e env) (*device, error) {
	line, ok := e.lines.serial[d.Bus]
	if !ok {
		return nil, fmt.Errorf("bus %q is not an open serial line", d.Bus)
	}
	in, err := line.Instrument(d.Name, driverconf.Instrument(d.Line), d.Timeout)
	if err != nil {
		return nil, err
	}
	return &device{
		model: d.Model,
		// Each channel has its own sampler; the instrument coalesces
		// concurrent reads of the line into one transaction.
		source: perChannel(e.clock, func(channel string, t manifests.ValueType) func(context.Context) (any, error) {
			return func(ctx context.Context) (any, error) {
				vals, err := in.Read(ctx)
				if err != nil {
					return nil, err
				}
				f, ok := vals[channel]
				if !ok {
					return nil, fmt.Errorf("serial device %s: no value %q in its response", d.Name, channel)
				}
				return numeric(round(f, 9), t), nil
			}
		}),
		writer: noWriter(d.Model),
	}, nil
}
