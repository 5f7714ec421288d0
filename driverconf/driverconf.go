// Package driverconf compiles manifest declarations into the drivers' own
// configurations. It is the one place that knows both the manifest schema
// (package manifests) and the drivers (drivers/i2c, drivers/gpio,
// drivers/modbus, drivers/serial), so that no driver depends on the YAML
// schema. The enums share their spelling on both sides, so each conversion
// is a plain type conversion; TestEnumsAgree keeps them in step.
package driverconf

import (
	"github.com/promcp/promcp-device/drivers/gpio"
	"github.com/promcp/promcp-device/drivers/i2c"
	"github.com/promcp/promcp-device/drivers/modbus"
	"github.com/promcp/promcp-device/drivers/serial"
	"github.com/promcp/promcp-device/manifests"
)

// I2CRegister returns the driver's form of a register-map register.
func I2CRegister(r manifests.Register) i2c.Register {
	return i2c.Register{
		Name: r.Name, Address: r.Address, Type: i2c.RegType(r.Type), ByteOrder: i2c.ByteOrder(r.ByteOrder),
		Scale: r.Scale, Offset: r.Offset, Writable: r.Writable,
	}
}

// I2CRegisters returns the driver's form of a register map.
func I2CRegisters(rs []manifests.Register) []i2c.Register { return each(rs, I2CRegister) }

// Pull returns the driver's form of an input's pull resistor.
func Pull(p manifests.Pull) gpio.Pull { return gpio.Pull(p) }

// ModbusRegister returns the driver's form of a Modbus register.
func ModbusRegister(r manifests.ModbusRegister) modbus.Register {
	return modbus.Register{
		Name: r.Name, Table: modbus.Table(r.Table), Address: r.Address, Type: modbus.DataType(r.Type),
		ByteOrder: modbus.WordOrder(r.ByteOrder), Bit: r.Bit, Length: r.Length,
		Scale: r.Scale, Offset: r.Offset, Writable: r.Writable,
	}
}

// ModbusRegisters returns the driver's form of a Modbus register map.
func ModbusRegisters(rs []manifests.ModbusRegister) []modbus.Register {
	return each(rs, ModbusRegister)
}

// each returns f of every element of in, in order.
func each[S, T any](in []S, f func(S) T) []T {
	out := make([]T, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}

// Table returns the driver's form of a Modbus table.
func Table(t manifests.Table) modbus.Table { return modbus.Table(t) }

// Serial returns the driver's form of a serial port's settings.
func Serial(s manifests.SerialSettings) modbus.SerialConfig {
	return modbus.SerialConfig{
		Port: s.Port, Baud: s.Baud, DataBits: s.DataBits, Parity: modbus.Parity(s.Parity),
		StopBits: s.StopBits, RS485: modbus.RS485(s.RS485), FrameGap: s.FrameGap,
	}
}

// Instrument returns the driver's form of a line instrument.
func Instrument(li manifests.LineInstrument) serial.InstrumentConfig {
	return serial.InstrumentConfig{Request: li.Request, Terminator: li.Terminator, Response: li.Response}
}
