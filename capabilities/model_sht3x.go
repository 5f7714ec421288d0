package capabilities

import (
	"periph.io/x/conn/v3/physic"

	"github.com/promcp/promcp-device/drivers/i2c"
	"github.com/promcp/promcp-device/manifests"
)

// openSHT3x opens a Sensirion SHT3x on an I2C bus. Channels: temperature
// (°C) and humidity (%RH), both from one measurement. Read-only. Simulated
// by sim's SHT3x. The grounds of a reading are the six bytes of the
// measurement (temperature word, CRC, humidity word, CRC).
func openSHT3x(bus *i2c.Bus, d manifests.Device, e env) (*device, error) {
	sensor := i2c.NewSHT3x(bus, d.Address)
	return measured(d, e, sensor.Sense, func(s i2c.Sample) []byte { return s.Raw[:] },
		"sht3x measurement: temperature word, CRC-8, humidity word, CRC-8",
		[]measurement[i2c.Sample]{
			{"temperature", func(s i2c.Sample) float64 { return s.Temperature.Celsius() }, 2,
				"temperature word (bytes 0-1): -45 + 175 × raw/65535 °C, rounded to 0.01"},
			{"humidity", func(s i2c.Sample) float64 { return float64(s.Humidity) / float64(physic.PercentRH) }, 2,
				"humidity word (bytes 3-4): 100 × raw/65535 %RH, rounded to 0.01"},
		}), nil
}
