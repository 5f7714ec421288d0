package modbus_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/drivers/modbus"
	"github.com/promcp/promcp-device/drivers/modbus/modbusconf"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/sim"
)

var (
	dataTypes = []modbusconf.DataType{modbusconf.DataInt16, modbusconf.DataUint16, modbusconf.DataInt32, modbusconf.DataUint32,
		modbusconf.DataInt64, modbusconf.DataUint64, modbusconf.DataFloat32, modbusconf.DataFloat64}
	orders = []modbusconf.WordOrder{modbusconf.OrderABCD, modbusconf.OrderDCBA, modbusconf.OrderBADC, modbusconf.OrderCDAB}
)

// codecDevice is a modbus device with one holding register per numeric
// type and order (4 registers apart), a string, a bit of an input register,
// a coil and a discrete input.
func codecDevice(unit uint8) manifests.Device {
	d := manifests.Device{Name: fmt.Sprintf("dev%d", unit), Bus: "line", Model: manifests.ModelModbus, UnitID: unit, MaxSpan: 8}
	addr := uint16(0)
	for _, t := range dataTypes {
		for _, o := range orders {
			d.ModbusRegisters = append(d.ModbusRegisters, manifests.ModbusRegister{
				Name: fmt.Sprintf("%s_%s", t, o), Table: modbusconf.TableHolding, Address: addr, Type: t,
				ByteOrder: o, Bit: -1, Scale: 1, Writable: true})
			addr += 4
		}
	}
	d.ModbusRegisters = append(d.ModbusRegisters,
		manifests.ModbusRegister{Name: "label", Table: modbusconf.TableHolding, Address: addr, Type: modbusconf.DataString, Length: 4, ByteOrder: modbusconf.OrderABCD, Bit: -1, Scale: 1},
		manifests.ModbusRegister{Name: "scaled", Table: modbusconf.TableHolding, Address: addr + 4, Type: modbusconf.DataInt16, ByteOrder: modbusconf.OrderABCD, Bit: -1, Scale: 0.1, Offset: -40, Writable: true},
		manifests.ModbusRegister{Name: "status_bit3", Table: modbusconf.TableInput, Address: 0, Type: modbusconf.DataBool, Bit: 3, ByteOrder: modbusconf.OrderABCD, Scale: 1},
		manifests.ModbusRegister{Name: "relay", Table: modbusconf.TableCoil, Address: 0, Type: modbusconf.DataBool, Bit: -1, Scale: 1, Writable: true},
		manifests.ModbusRegister{Name: "door", Table: modbusconf.TableDiscrete, Address: 0, Type: modbusconf.DataBool, Bit: -1, Scale: 1},
	)
	return d
}

// world builds a simulated world with codec devices at units 1 and 2 on
// one bus of kind k, on a manual clock.
func world(t testing.TB, k manifests.BusKind) (*sim.World, *manifests.Manifest) {
	t.Helper()
	m := &manifests.Manifest{Gateway: "t",
		Buses:   []manifests.Bus{{Name: "line", Kind: k}},
		Devices: []manifests.Device{codecDevice(1), codecDevice(2)}}
	w, err := sim.New(m, clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
	if err != nil {
		t.Fatal(err)
	}
	return w, m
}

// serve starts the world's bus on a loopback listener (kind tcp or
// rtu_tcp) or a pty (rtu) and returns a Line to it.
func serve(t testing.TB, w *sim.World, k manifests.BusKind, cfg modbus.Config) (*modbus.Line, *sim.ModbusServer) {
	t.Helper()
	srv, err := w.ModbusServer("line")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	if cfg.Timeout == 0 {
		cfg.Timeout = 500 * time.Millisecond
	}
	cfg.Name = "line"
	var line *modbus.Line
	switch k {
	case manifests.BusModbusRTU:
		p, err := sim.OpenPTY()
		if err != nil {
			t.Skipf("no pseudo-terminal here: %v", err)
		}
		t.Cleanup(func() { p.Close() })
		go srv.ServeRTU(p.Master())
		port, err := modbus.OpenPort(context.Background(), modbusconf.SerialConfig{Port: p.SlavePath, Baud: 115200, DataBits: 8, Parity: modbusconf.ParityNone, StopBits: 1})
		if err != nil {
			t.Fatal(err)
		}
		line = modbus.NewRTU(cfg, port, modbus.FrameGap(115200), false, nil)
	default:
		addr, err := srv.ServeLoopback(k)
		if err != nil {
			t.Fatal(err)
		}
		if k == manifests.BusModbusTCP {
			line = modbus.NewTCP(cfg, modbus.DialerTCP(addr), nil)
		} else {
			line = modbus.NewRTUOverTCP(cfg, modbus.DialerTCP(addr), nil)
		}
	}
	t.Cleanup(func() { line.Close() })
	return line, srv
}
