package capabilities

import (
	"github.com/promcp/promcp-device/drivers/i2c"
	"github.com/promcp/promcp-device/manifests"
)

// openBH1750 opens a ROHM BH1750 on an I2C bus in continuous
// high-resolution mode. Channel: illuminance (lx). Read-only. Simulated by
// sim's bh1750. The grounds of a reading are the two bytes of the count.
func openBH1750(bus *i2c.Bus, d manifests.Device, e env) (*device, error) {
	sensor := i2c.NewBH1750(bus, d.Address, i2c.Sleep)
	return measured(d, e, sensor.Sense, func(r i2c.LightReading) []byte { return r.Raw[:] },
		"bh1750 count, MSB first",
		[]measurement[i2c.LightReading]{
			{"illuminance", func(r i2c.LightReading) float64 { return r.Lux }, 1,
				"count / 1.2 lx (high-resolution mode), rounded to 0.1"},
		}), nil
}
