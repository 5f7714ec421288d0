package capabilities

import (
	"github.com/promcp/promcp-device/drivers/i2c"
	"github.com/promcp/promcp-device/manifests"
)

// openSCD4x opens a Sensirion SCD4x on an I2C bus in periodic measurement.
// Channels: co2 (ppm), temperature (°C), humidity (%RH), from one
// read_measurement. Read-only; the first reading comes 5 s after the
// start (before, a read fails: not ready). Simulated by sim's scd4x. The
// grounds of a reading are the nine bytes of read_measurement.
func openSCD4x(bus *i2c.Bus, d manifests.Device, e env) (*device, error) {
	sensor := i2c.NewSCD4x(bus, d.Address, i2c.Sleep)
	return measured(d, e, sensor.Sense, func(r i2c.CO2Reading) []byte { return r.Raw[:] },
		"scd4x read_measurement: CO2 word, CRC-8, temperature word, CRC-8, humidity word, CRC-8",
		[]measurement[i2c.CO2Reading]{
			{"co2", func(r i2c.CO2Reading) float64 { return r.PPM }, 0,
				"CO2 word (bytes 0-1): ppm as is"},
			{"temperature", func(r i2c.CO2Reading) float64 { return r.Celsius }, 2,
				"temperature word (bytes 3-4): -45 + 175 × raw/65535 °C, rounded to 0.01"},
			{"humidity", func(r i2c.CO2Reading) float64 { return r.Humidity }, 2,
				"humidity word (bytes 6-7): 100 × raw/65535 %RH, rounded to 0.01"},
		}), nil
}
