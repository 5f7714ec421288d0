// Package driverconf compiles manifest declarations into the drivers' own
// configurations. It is the one place that knows both the manifest schema
// (package manifests) and the drivers (drivers/i2c, drivers/gpio,
// drivers/modbus, drivers/serial, drivers/mqtt), so that no driver depends
// on the YAML schema.
//
// The register maps and serial settings of a manifest are the drivers' own
// types (manifests declares them as aliases of the drivers' hardware-free
// configuration packages, i2cconf and modbusconf), so they need no
// compiling: their functions here return their argument. The rest (an
// input's pull, a line instrument, an mqtt bus with its files) is
// converted.
package driverconf

import (
	"github.com/promcp/promcp-device/drivers/gpio"
	"github.com/promcp/promcp-device/drivers/i2c/i2cconf"
	"github.com/promcp/promcp-device/drivers/modbus/modbusconf"
	"github.com/promcp/promcp-device/drivers/serial"
	"github.com/promcp/promcp-device/manifests"
)

// I2CRegister returns the driver's form of a register-map register.
//
// Deprecated: a manifests.Register is an i2cconf.Register; use it as it is.
func I2CRegister(r manifests.Register) i2cconf.Register { return r }

// I2CRegisters returns the driver's form of a register map.
//
// Deprecated: a manifests.Register is an i2cconf.Register; use the slice as it is.
func I2CRegisters(rs []manifests.Register) []i2cconf.Register { return rs }

// Pull returns the driver's form of an input's pull resistor.
func Pull(p manifests.Pull) gpio.Pull { return gpio.Pull(p) }

// ModbusRegister returns the driver's form of a Modbus register.
//
// Deprecated: a manifests.ModbusRegister is a modbusconf.Register; use it as it is.
func ModbusRegister(r manifests.ModbusRegister) modbusconf.Register { return r }

// ModbusRegisters returns the driver's form of a Modbus register map.
//
// Deprecated: a manifests.ModbusRegister is a modbusconf.Register; use the slice
// as it is.
func ModbusRegisters(rs []manifests.ModbusRegister) []modbusconf.Register { return rs }

// Serial returns the driver's form of a serial port's settings.
//
// Deprecated: manifests.SerialSettings is modbusconf.SerialConfig; use it as it is.
func Serial(s manifests.SerialSettings) modbusconf.SerialConfig { return s }

// Instrument returns the driver's form of a line instrument.
func Instrument(li manifests.LineInstrument) serial.InstrumentConfig {
	return serial.InstrumentConfig{Request: li.Request, Terminator: li.Terminator, Response: li.Response}
}
