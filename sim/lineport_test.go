package sim

import (
	"testing"
	"time"

	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/driverconf"
	"github.com/promcp/promcp-device/drivers/modbus"
	"github.com/promcp/promcp-device/drivers/serial"
	"github.com/promcp/promcp-device/manifests/manifesttest"
)

const serialLines = `
version: 1
gateway: t
buses:
  - {name: rs485, kind: modbus_rtu, port: /dev/ttyUSB0, baud: 19200}
  - {name: rs232, kind: serial, port: /dev/ttyS0}
devices:
  - name: vfd
    bus: rs485
    model: modbus
    unit_id: 5
    registers: [{name: speed_setpoint, table: holding, address: 0, type: uint16, writable: true}]
    sim: {values: {speed_setpoint: 321}}
  - {name: scale, bus: rs232, model: serial_line, request: "W?", response: 'W=(?P<w>[0-9.]+)', sim: {response: "W=2.5"}}
`

// TestSerialLinesWithoutPTY: where no pseudo-terminal can be made, serial
// buses are served on a loopback stand-in that carries the same RTU frames
// and text lines, so serve --sim still runs them through the real drivers.
func TestSerialLinesWithoutPTY(t *testing.T) {
	for _, noPTY := range []bool{false, true} {
		m := manifesttest.Parse(t, "lines.yml", serialLines)
		w, err := New(m, clock.NewManual(time.Unix(0, 0)))
		if err != nil {
			t.Fatal(err)
		}
		e, err := w.startLines(noPTY)
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		rtu, err := e.OpenPort(t.Context(), m.Buses[0])
		if err != nil {
			t.Fatalf("noPTY=%t: %v", noPTY, err)
		}
		line := modbus.NewRTU(modbus.Config{Name: "rs485", Timeout: time.Second}, rtu, modbus.FrameGap(19200), false, nil)
		defer line.Close()
		v, err := line.Unit(5).Points(m.Devices[0].ModbusRegisters, 0)["speed_setpoint"].Read(t.Context())
		if err != nil || v != 321.0 {
			t.Fatalf("noPTY=%t: RTU read = %v, %v; want 321", noPTY, v, err)
		}
		port, err := e.OpenPort(t.Context(), m.Buses[1])
		if err != nil {
			t.Fatal(err)
		}
		sl := serial.NewLine(serial.Config{Name: "rs232", Timeout: time.Second}, port, nil)
		defer sl.Close()
		in, _ := sl.Instrument("scale", driverconf.Instrument(m.Devices[1].Line), 0)
		vals, err := in.Read(t.Context())
		if err != nil || vals["w"] != 2.5 {
			t.Fatalf("noPTY=%t: line read = %v, %v; want w=2.5", noPTY, vals, err)
		}
	}
}
