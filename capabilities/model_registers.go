package capabilities

import (
	"context"
	"fmt"

	"github.com/promcp/promcp-device/driverconf"
	"github.com/promcp/promcp-device/drivers/i2c"
	"github.com/promcp/promcp-device/manifests"
)

// openRegisters opens a generic I2C register-map device. Channels: its
// registers by name, each read alone; writable registers take numbers.
// Simulated by sim's register file.
func openRegisters(_ context.Context, d manifests.Device, e env) (*device, error) {
	bus, ok := e.buses[d.Bus]
	if !ok {
		return nil, fmt.Errorf("bus %q is not an open I2C bus", d.Bus)
	}
	regs := i2c.NewRegisters(bus, d.Address, driverconf.I2CRegisters(d.Registers))
	return &device{
		model: d.Model,
		source: perChannel(e.clock, func(channel string, t manifests.ValueType) func(context.Context) (any, error) {
			return func(ctx context.Context) (any, error) {
				f, err := regs.Read(ctx, channel)
				if err != nil {
					return nil, err
				}
				return numeric(round(f, 9), t), nil
			}
		}),
		writer: func(channel string, t manifests.ValueType) (func(context.Context, any) error, error) {
			return func(ctx context.Context, v any) error {
				f, ok := v.(float64)
				if !ok {
					return fmt.Errorf("register %s takes a number, not %T", channel, v)
				}
				return regs.Write(ctx, channel, f)
			}, nil
		},
	}, nil
}
