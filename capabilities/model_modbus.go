package capabilities

import (
	"context"
	"fmt"

	"github.com/promcp/promcp-device/drivers/modbus"
	"github.com/promcp/promcp-device/drivers/modbus/modbusconf"
	"github.com/promcp/promcp-device/manifests"
)

// openModbus opens a Modbus device (unit) on a Modbus TCP or RTU line.
// Channels: its registers by name; registers of one span are read in one
// transaction. Writable registers take numbers or booleans. Simulated by
// sim's ModbusSlave. The grounds of a reading are the value's registers
// as they came off the wire (two bytes each, big endian), or its bit.
func openModbus(line *modbus.Line, d manifests.Device, e env) (*device, error) {
	unit := line.Unit(d.UnitID, modbus.WithTimeout(d.Timeout))
	points := unit.Points(d.ModbusRegisters, d.MaxSpan)
	return &device{
		model: d.Model,
		source: func(channel string, t manifests.ValueType) (*sampler, func(any) any, error) {
			p, ok := points[channel]
			if !ok {
				return nil, nil, fmt.Errorf("modbus device %s has no register %q", d.Name, channel)
			}
			return newSampler(e.clock, func(ctx context.Context) (any, []byte, error) {
				return readPoint(ctx, unit, p, t)
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
		bind: func(channel string) Binding {
			b := Binding{Driver: "modbus", Address: fmt.Sprintf("unit %d", d.UnitID), Register: channel}
			p, ok := points[channel]
			if !ok {
				return b
			}
			reg := p.Register()
			start, count := p.Span()
			b.Register = fmt.Sprintf("%s (%s %d, read in span %d+%d)", channel, reg.Table, reg.Address, start, count)
			if reg.Table.IsBits() {
				b.RawForm, b.Conversion = "the bit as read (0 or 1)", "bit: 1 is true"
				return b
			}
			order := reg.ByteOrder
			if order == "" {
				order = "ABCD"
			}
			b.RawForm = fmt.Sprintf("%d register word(s) as read, big endian", p.Register().Words())
			b.Conversion = fmt.Sprintf("%s word order %s × %v + %v", reg.Type, order, scale(reg.Scale), reg.Offset)
			if reg.Bit >= 0 && reg.Type == modbusconf.DataBool {
				b.Conversion = fmt.Sprintf("bit %d of the register: 1 is true", reg.Bit)
			}
			return b
		},
	}, nil
}

// readPoint reads p as Point.Read does (its whole span, shared by
// concurrent reads of the span), a number as the capability's type t
// (rounded to 9 decimals; an integer rounded to a whole number), and also
// returns the value's bytes as they came off the wire: a sub-slice of the
// span's, so no copy is made. A number is decoded without allocating
// (Codec.Number) and boxed once, as the value returned.
func readPoint(ctx context.Context, unit *modbus.Unit, p *modbus.Point, t manifests.ValueType) (any, []byte, error) {
	reg := p.Register()
	start, count := p.Span()
	if reg.Table.IsBits() {
		bits, err := unit.ReadBits(ctx, reg.Table, start, count)
		if err != nil {
			return nil, nil, err
		}
		on := bits[reg.Address-start]
		return on, level(on), nil
	}
	b, err := unit.ReadRegisters(ctx, reg.Table, start, count)
	if err != nil {
		return nil, nil, err
	}
	codec := modbus.CodecOf(reg)
	off := 2 * int(reg.Address-start)
	wire := b[off : off+2*codec.Words()]
	f, ok, err := codec.Number(wire, reg.Scale, reg.Offset)
	if !ok {
		var raw any
		if raw, err = codec.Decode(wire); err == nil {
			v := modbus.Engineering(raw, reg.Scale, reg.Offset)
			if f, ok := v.(float64); ok {
				return numeric(round(f, 9), t), wire, nil
			}
			return v, wire, nil
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("modbus unit %d register %s: %w", unit.ID(), reg.Name, err)
	}
	return numeric(round(f, 9), t), wire, nil
}
