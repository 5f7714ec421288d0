package capabilities

import (
	"github.com/promcp/promcp-device/drivers/i2c"
	"github.com/promcp/promcp-device/manifests"
)

// openBME280 opens a Bosch BME280 or BMP280 on an I2C bus. Channels:
// temperature (°C), pressure (hPa) and, on a BME280, humidity (%RH), all
// from one forced-mode measurement. Read-only. Simulated by sim's bme280.
// The grounds of a reading are the data registers as read from 0xF7.
func openBME280(bus *i2c.Bus, d manifests.Device, e env) (*device, error) {
	humidity := d.Model == manifests.ModelBME280
	sensor := i2c.NewBME280(bus, d.Address, humidity, nil)
	chans := []measurement[i2c.EnvSample]{
		{"temperature", func(s i2c.EnvSample) float64 { return s.Temperature }, 2,
			"Bosch 32-bit compensation of adc_T (bytes 3-5) with the chip's trimming: 0.01 °C"},
		{"pressure", func(s i2c.EnvSample) float64 { return s.Pressure }, 3,
			"Bosch 64-bit compensation of adc_P (bytes 0-2): Q24.8 Pa / 100 = hPa, rounded to 0.001"},
	}
	if humidity {
		chans = append(chans, measurement[i2c.EnvSample]{"humidity", func(s i2c.EnvSample) float64 { return s.Humidity }, 2,
			"Bosch 32-bit compensation of adc_H (bytes 6-7): Q22.10 %RH, rounded to 0.01"})
	}
	return measured(d, e, sensor.Sense, func(s i2c.EnvSample) []byte { return s.Raw },
		string(d.Model)+" data registers 0xF7.. (pressure, temperature 20 bits each, humidity 16 bits)", chans), nil
}
