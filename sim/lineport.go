package sim

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/promcp/promcp-device/drivers"
	"github.com/promcp/promcp-device/drivers/modbus"
	"github.com/promcp/promcp-device/drivers/modbus/modbusconf"
	"github.com/promcp/promcp-device/manifests"
)

// OpenPort opens the simulated serial line of the manifest bus b (a
// modbus_rtu or serial bus) as a driver opens a real one: the pty's
// terminal side with b's settings, or, where no pseudo-terminal could be
// made (not Linux), an in-process stand-in on a loopback socket that
// carries the same bytes. The caller closes the port.
func (e *ModbusEndpoints) OpenPort(ctx context.Context, b manifests.Bus) (modbus.Port, error) {
	if path, ok := e.port[b.Name]; ok {
		s := b.Serial
		s.Port = path
		s.RS485 = modbusconf.RS485None // a pty has no transceiver
		return modbus.OpenPort(ctx, s)
	}
	addr, ok := e.loop[b.Name]
	if !ok {
		return nil, fmt.Errorf("sim bus %s: %w: not a simulated serial bus", b.Name, drivers.ErrUnavailable)
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("sim bus %s: %w: %w", b.Name, drivers.ErrUnavailable, err)
	}
	return &loopPort{Conn: c}, nil
}

// loopPort makes a loopback connection behave as a serial port: reads
// time out with 0, nil as go.bug.st/serial's do.
type loopPort struct {
	net.Conn
	timeout time.Duration
}

func (p *loopPort) SetReadTimeout(d time.Duration) error {
	p.timeout = d
	return nil
}

func (p *loopPort) Read(b []byte) (int, error) {
	var dl time.Time
	if p.timeout > 0 {
		dl = time.Now().Add(p.timeout)
	}
	p.Conn.SetReadDeadline(dl)
	n, err := p.Conn.Read(b)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return n, nil
	}
	return n, err
}

// ResetInputBuffer discards what has arrived and not been read.
func (p *loopPort) ResetInputBuffer() error {
	buf := make([]byte, 256)
	for {
		p.Conn.SetReadDeadline(time.Now().Add(time.Millisecond))
		if n, err := p.Conn.Read(buf); n == 0 || err != nil {
			return nil
		}
	}
}
