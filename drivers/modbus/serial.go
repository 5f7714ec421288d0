package modbus

import (
	"context"
	"fmt"

	"go.bug.st/serial"

	"github.com/promcp/promcp-device/drivers"
	"github.com/promcp/promcp-device/drivers/modbus/modbusconf"
)

// OpenPort opens the serial port of a modbus_rtu or serial bus with its
// settings, and switches on the kernel's RS-485 mode when the manifest asks
// for it. The caller closes the port (or hands it to NewRTU, which then
// owns it). Errors wrap drivers.ErrUnavailable.
func OpenPort(ctx context.Context, s modbusconf.SerialConfig) (serial.Port, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	mode := &serial.Mode{BaudRate: s.Baud, DataBits: s.DataBits, Parity: serial.NoParity, StopBits: serial.OneStopBit}
	switch s.Parity {
	case modbusconf.ParityEven:
		mode.Parity = serial.EvenParity
	case modbusconf.ParityOdd:
		mode.Parity = serial.OddParity
	}
	if s.StopBits == 2 {
		mode.StopBits = serial.TwoStopBits
	}
	if mode.BaudRate == 0 {
		mode.BaudRate = modbusconf.DefaultBaud
	}
	if mode.DataBits == 0 {
		mode.DataBits = modbusconf.DefaultDataBits
	}
	if s.RS485 == modbusconf.RS485Kernel {
		if err := enableRS485(s.Port); err != nil {
			return nil, fmt.Errorf("serial %s: %w: kernel RS-485 mode: %w", s.Port, drivers.ErrUnavailable, err)
		}
	}
	p, err := serial.Open(s.Port, mode)
	if err != nil {
		return nil, fmt.Errorf("serial %s: %w: %v", s.Port, drivers.ErrUnavailable, err)
	}
	return p, nil
}
