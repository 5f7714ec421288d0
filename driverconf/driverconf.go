// Package driverconf compiles manifest declarations into the drivers' own
// configurations. It is the one place that knows both the manifest schema
// (package manifests) and the drivers (drivers/i2c, drivers/gpio,
// drivers/modbus, drivers/serial, drivers/mqtt), so that no driver depends
// on the YAML schema.
//
// The register maps and serial settings of a manifest are the drivers' own
// types (manifests declares them as aliases of the drivers' hardware-free
// configuration packages, i2cconf and modbusconf), so callers pass them as
// they are. The rest (an input's pull, a line instrument, an mqtt bus with
// its files) is converted here.
package driverconf

import (
	"github.com/promcp/promcp-device/drivers/gpio"
	"github.com/promcp/promcp-device/drivers/serial"
	"github.com/promcp/promcp-device/manifests"
)

// Pull returns the driver's form of an input's pull resistor.
func Pull(p manifests.Pull) gpio.Pull { return gpio.Pull(p) }

// Instrument returns the driver's form of a line instrument.
func Instrument(li manifests.LineInstrument) serial.InstrumentConfig {
	return serial.InstrumentConfig{Request: li.Request, Terminator: li.Terminator, Response: li.Response}
}
