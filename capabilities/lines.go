package capabilities

import (
	"context"
	"fmt"
	"log/slog"
	"net"

	"github.com/promcp/promcp-device/drivers/modbus"
	"github.com/promcp/promcp-device/drivers/modbus/modbusconf"
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
			l := modbus.NewRTU(cfg, port, gap, b.Serial.RS485 == modbusconf.RS485RTS, log)
			ls.modbus[b.Name] = l
			s.closers = append(s.closers, l.Close)
		}
	}
	return ls, nil
}
