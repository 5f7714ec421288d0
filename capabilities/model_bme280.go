package capabilities

import (
	"context"
	"fmt"

	"github.com/promcp/promcp-device/drivers/i2c"
	"github.com/promcp/promcp-device/manifests"
)

// openBME280 opens a Bosch BME280 or BMP280 on an I2C bus. Channels:
// temperature (°C), pressure (hPa) and, on a BME280, humidity (%RH), all
// from one forced-mode measurement. Read-only. Simulated by sim's bme280.
// The grounds of a reading are the data registers as read from 0xF7.
func openBME280(_ context.Context, d manifests.Device, e env) (*device, error) {
	bus, ok := e.buses[d.Bus]
	if !ok {
		return nil, fmt.Errorf("bus %q is not an open I2C bus", d.Bus)
	}
	sensor := i2c.NewBME280(bus, d.Address, d.Model == manifests.ModelBME280, nil)
	shared := newSampler(e.clock, func(ctx context.Context) (any, []byte, error) {
		s, err := sensor.Sense(ctx)
		if err != nil {
			return nil, nil, err
		}
		return s, s.Raw, nil
	})
	return &device{
		model: d.Model,
		source: func(channel string, t manifests.ValueType) (*sampler, func(any) any, error) {
			var pick func(i2c.EnvSample) float64
			digits := 2
			switch {
			case channel == "temperature":
				pick = func(s i2c.EnvSample) float64 { return s.Temperature }
			case channel == "pressure":
				pick, digits = func(s i2c.EnvSample) float64 { return s.Pressure }, 3
			case channel == "humidity" && d.Model == manifests.ModelBME280:
				pick = func(s i2c.EnvSample) float64 { return s.Humidity }
			default:
				return nil, nil, fmt.Errorf("%s has no channel %q (want %s)", d.Model, channel, oneOfChannels(manifests.ChipChannels(d)))
			}
			return shared, func(v any) any { return numeric(round(pick(v.(i2c.EnvSample)), digits), t) }, nil
		},
		writer: noWriter(d.Model),
		bind: func(channel string) Binding {
			conv := map[string]string{
				"temperature": "Bosch 32-bit compensation of adc_T (bytes 3-5) with the chip's trimming: 0.01 °C",
				"pressure":    "Bosch 64-bit compensation of adc_P (bytes 0-2): Q24.8 Pa / 100 = hPa, rounded to 0.001",
				"humidity":    "Bosch 32-bit compensation of adc_H (bytes 6-7): Q22.10 %RH, rounded to 0.01",
			}[channel]
			return Binding{Driver: "i2c", Address: fmt.Sprintf("0x%02x", d.Address), Register: channel,
				RawForm: string(d.Model) + " data registers 0xF7.. (pressure, temperature 20 bits each, humidity 16 bits)", Conversion: conv}
		},
	}, nil
}

// oneOfChannels lists channels as "a, b or c".
func oneOfChannels(chans []string) string {
	switch len(chans) {
	case 0:
		return "none declared"
	case 1:
		return chans[0]
	}
	s := chans[0]
	for _, c := range chans[1 : len(chans)-1] {
		s += ", " + c
	}
	return s + " or " + chans[len(chans)-1]
}
