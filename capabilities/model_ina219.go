package capabilities

import (
	"fmt"

	"github.com/promcp/promcp-device/drivers/i2c"
	"github.com/promcp/promcp-device/manifests"
)

// openINA219 opens a TI INA219 on an I2C bus, calibrated for the device's
// shunt_ohms and max_current. Channels: bus_voltage (V), shunt_voltage
// (mV), current (A), power (W), from one read of the four registers.
// Read-only. Simulated by sim's ina219. The grounds of a reading are the
// shunt, bus, power and current registers as read.
func openINA219(bus *i2c.Bus, d manifests.Device, e env) (*device, error) {
	cal, err := i2c.NewINACalibration(d.ShuntOhms, d.MaxCurrent)
	if err != nil {
		return nil, err
	}
	mon := i2c.NewINA219(bus, d.Address, cal)
	return measured(d, e, mon.Sense, func(r i2c.PowerReading) []byte { return r.Raw[:] },
		"ina219 shunt, bus, power and current registers, MSB first",
		[]measurement[i2c.PowerReading]{
			{"bus_voltage", func(r i2c.PowerReading) float64 { return r.BusVolts }, 6,
				"bus register (bytes 2-3) >> 3 × 4 mV"},
			{"shunt_voltage", func(r i2c.PowerReading) float64 { return r.ShuntMilli }, 6,
				"shunt register (bytes 0-1), int16 × 10 µV, in mV"},
			{"current", func(r i2c.PowerReading) float64 { return r.Amps }, 6,
				fmt.Sprintf("current register (bytes 6-7), int16 × %.6g A (Cal %d for %g Ω)", cal.CurrentLSB, cal.Cal, d.ShuntOhms)},
			{"power", func(r i2c.PowerReading) float64 { return r.Watts }, 6,
				fmt.Sprintf("power register (bytes 4-5) × %.6g W (20 × current LSB)", 20*cal.CurrentLSB)},
		}), nil
}
