package capabilities

import (
	"context"
	"fmt"

	"github.com/promcp/promcp-device/driverconf"
	"github.com/promcp/promcp-device/drivers/modbus"
	"github.com/promcp/promcp-device/manifests"
)

// openModbus opens a Modbus device (unit) on a Modbus TCP or RTU line.
// Channels: its registers by name; registers of one span are read in one
// transaction. Writable registers take numbers or booleans. Simulated by
// sim's ModbusSlave.
func openModbus(_ context.Context, d manifests.Device, e env) (*device, error) {
	line, ok := e.lines.modbus[d.Bus]
	if !ok {
		return nil, fmt.Errorf("bus %q is not an open Modbus line", d.Bus)
	}
	points := line.Unit(d.UnitID, modbus.WithTimeout(d.Timeout)).Points(driverconf.ModbusRegisters(d.ModbusRegisters), d.MaxSpan)
	return &device{
		model: d.Model,
		source: func(channel string, t manifests.ValueType) (*sampler, func(any) any, error) {
			p, ok := points[channel]
			if !ok {
				return nil, nil, fmt.Errorf("modbus device %s has no register %q", d.Name, channel)
			}
			return newSampler(e.clock, func(ctx context.Context) (any, error) {
				v, err := p.Read(ctx)
				if err != nil {
					return nil, err
				}
				if f, ok := v.(float64); ok {
					return numeric(round(f, 9), t), nil
				}
				return v, nil
			}), identity, nil
		},
		writer: func(channel string, t manifests.ValueType) (func(context.Context, any) error, error) {
			p, ok := points[channel]
			if !ok {
				return nil, fmt.Errorf("modbus device %s has no register %q", d.Name, channel)
			}
			return func(ctx context.Context, v any) error {
				switch x := v.(type) {
				case int64:
					v = float64(x)
				case int:
					v = float64(x)
				}
				return p.Write(ctx, v)
			}, nil
		},
	}, nil
}
