package capabilities

import (
	"github.com/promcp/promcp-device/drivers/i2c"
	"github.com/promcp/promcp-device/manifests"
)

// openSHT4x opens a Sensirion SHT4x on an I2C bus. Channels: temperature
// (°C) and humidity (%RH), from one high-precision measurement (0xFD).
// Read-only. Simulated by sim's sht4x. The grounds of a reading are the six
// bytes of the measurement.
func openSHT4x(bus *i2c.Bus, d manifests.Device, e env) (*device, error) {
	sensor := i2c.NewSHT4x(bus, d.Address, i2c.Sleep)
	return measured(d, e, sensor.Sense, func(s i2c.SHT4xSample) []byte { return s.Raw[:] },
		"sht4x measurement: temperature word, CRC-8, humidity word, CRC-8",
		[]measurement[i2c.SHT4xSample]{
			{"temperature", func(s i2c.SHT4xSample) float64 { return s.Celsius }, 2,
				"temperature word (bytes 0-1): -45 + 175 × raw/65535 °C, rounded to 0.01"},
			{"humidity", func(s i2c.SHT4xSample) float64 { return s.Humidity }, 2,
				"humidity word (bytes 3-4): -6 + 125 × raw/65535 %RH clamped to 0..100, rounded to 0.01"},
		}), nil
}
