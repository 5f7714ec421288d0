package capabilities

import (
	"context"
	"fmt"
	"log/slog"
	"net"

	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/driverconf"
	"github.com/promcp/promcp-device/drivers/modbus"
	"github.com/promcp/promcp-device/drivers/serial"
	"github.com/promcp/promcp-device/manifests"
)

// lineSet holds the opened Modbus and serial lines by bus name.
type lineSet struct {
	modbus map[string]*modbus.Line
	serial map[string]*serial.Line
}

// openLines opens every Modbus and serial bus of m. TCP buses dial on first
// use (a device that is down shows as a failed read, not a refusal to
// start); serial ports open now.
func openLines(ctx context.Context, m *manifests.Manifest, hw Hardware, log *slog.Logger, s *Set) (*lineSet, error) {
	ls := &lineSet{modbus: map[string]*modbus.Line{}, serial: map[string]*serial.Line{}}
	for _, b := range m.Buses {
		cfg := modbus.Config{Name: b.Name, Timeout: b.Timeout, Retries: b.Retries}
		switch b.Kind {
		case manifests.BusModbusTCP, manifests.BusModbusRTUTCP:
			dial := func(ctx context.Context) (net.Conn, error) { return hw.DialTCP(ctx, b) }
			var l *modbus.Line
			if b.Kind == manifests.BusModbusTCP {
				l = modbus.NewTCP(cfg, dial, log)
			} else {
				l = modbus.NewRTUOverTCP(cfg, dial, log)
			}
			ls.modbus[b.Name] = l
			s.closers = append(s.closers, l.Close)
		case manifests.BusModbusRTU, manifests.BusSerial:
			port, err := hw.OpenSerial(ctx, b)
			if err != nil {
				return nil, fmt.Errorf("bus %s: %w", b.Name, err)
			}
			if b.Kind == manifests.BusSerial {
				l := serial.NewLine(serial.Config{Name: b.Name, Timeout: b.Timeout, Retries: b.Retries}, port, log)
				ls.serial[b.Name] = l
				s.closers = append(s.closers, l.Close)
				continue
			}
			gap := b.Serial.FrameGap
			if gap <= 0 {
				gap = modbus.FrameGap(b.Serial.Baud)
			}
			l := modbus.NewRTU(cfg, port, gap, b.Serial.RS485 == manifests.RS485RTS, log)
			ls.modbus[b.Name] = l
			s.closers = append(s.closers, l.Close)
		}
	}
	return ls, nil
}

func (ls *lineSet) modbusDevice(d manifests.Device, clk clock.Clock) (*device, error) {
	line, ok := ls.modbus[d.Bus]
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
			return newSampler(clk, func(ctx context.Context) (any, error) {
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

func (ls *lineSet) serialDevice(d manifests.Device, clk clock.Clock) (*device, error) {
	line, ok := ls.serial[d.Bus]
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
		source: perChannel(clk, func(channel string, t manifests.ValueType) func(context.Context) (any, error) {
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
