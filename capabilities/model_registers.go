package capabilities

import (
	"context"
	"fmt"

	"github.com/promcp/promcp-device/drivers/i2c"
	"github.com/promcp/promcp-device/drivers/i2c/i2cconf"
	"github.com/promcp/promcp-device/manifests"
)

// openRegisters opens a generic I2C register-map device. Channels: its
// registers by name, each read alone; writable registers take numbers.
// Simulated by sim's register file. The grounds of a reading are the
// register's bytes as read.
func openRegisters(bus *i2c.Bus, d manifests.Device, e env) (*device, error) {
	regs := i2c.NewRegisters(bus, d.Address, d.Registers)
	return &device{
		model: d.Model,
		source: perChannel(e.clock, func(channel string, t manifests.ValueType) readFunc {
			reg, known := regs.Register(channel)
			return func(ctx context.Context) (any, []byte, error) {
				if !known {
					_, err := regs.Read(ctx, channel) // the driver's unknown-register error
					return nil, nil, err
				}
				// One transaction, as Registers.Read does it, keeping the
				// bytes read.
				b := make([]byte, reg.Type.Size())
				if err := bus.Tx(ctx, d.Address, []byte{reg.Address}, b); err != nil {
					return nil, nil, fmt.Errorf("register %s read: %w", channel, err)
				}
				f, err := i2c.DecodeRegister(reg, b)
				if err != nil {
					return nil, nil, fmt.Errorf("register %s read: i2c %s addr 0x%02x: %w", channel, d.Bus, d.Address, err)
				}
				return numeric(round(f, 9), t), b, nil
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
		bind: func(channel string) Binding {
			b := i2cBinding(d, channel, "register bytes as read", "")
			if reg, ok := regs.Register(channel); ok {
				order := reg.ByteOrder
				if order == "" {
					order = i2cconf.BigEndian
				}
				b.Register = fmt.Sprintf("%s (0x%02x)", channel, reg.Address)
				b.Conversion = fmt.Sprintf("%s %s-endian × %v + %v", reg.Type, order, scale(reg.Scale), reg.Offset)
			}
			return b
		},
	}, nil
}

// scale is a register's scale as applied: 0 counts as 1.
func scale(s float64) float64 {
	if s == 0 {
		return 1
	}
	return s
}
