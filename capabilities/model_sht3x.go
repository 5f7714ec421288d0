package capabilities

import (
	"context"
	"fmt"

	"periph.io/x/conn/v3/physic"

	"github.com/promcp/promcp-device/drivers/i2c"
	"github.com/promcp/promcp-device/manifests"
)

// openSHT3x opens a Sensirion SHT3x on an I2C bus. Channels: temperature
// (°C) and humidity (%RH), both from one measurement. Read-only. Simulated
// by sim's SHT3x. The grounds of a reading are the six bytes of the
// measurement (temperature word, CRC, humidity word, CRC).
func openSHT3x(_ context.Context, d manifests.Device, e env) (*device, error) {
	bus, ok := e.buses[d.Bus]
	if !ok {
		return nil, fmt.Errorf("bus %q is not an open I2C bus", d.Bus)
	}
	sensor := i2c.NewSHT3x(bus, d.Address)
	// One measurement serves temperature and humidity alike.
	shared := newSampler(e.clock, func(ctx context.Context) (any, []byte, error) {
		s, err := sensor.Sense(ctx)
		if err != nil {
			return nil, nil, err
		}
		return s, s.Raw[:], nil
	})
	return &device{
		model: d.Model,
		source: func(channel string, t manifests.ValueType) (*sampler, func(any) any, error) {
			var pick func(i2c.Sample) float64
			switch channel {
			case "temperature":
				pick = func(s i2c.Sample) float64 { return s.Temperature.Celsius() }
			case "humidity":
				pick = func(s i2c.Sample) float64 { return float64(s.Humidity) / float64(physic.PercentRH) }
			default:
				return nil, nil, fmt.Errorf("sht3x has no channel %q (want temperature or humidity)", channel)
			}
			return shared, func(v any) any { return numeric(round(pick(v.(i2c.Sample)), 2), t) }, nil
		},
		writer: noWriter(d.Model),
		bind: func(channel string) Binding {
			conv := "humidity word (bytes 3-4): 100 × raw/65535 %RH, rounded to 0.01"
			if channel == "temperature" {
				conv = "temperature word (bytes 0-1): -45 + 175 × raw/65535 °C, rounded to 0.01"
			}
			return Binding{Driver: "i2c", Address: fmt.Sprintf("0x%02x", d.Address), Register: channel,
				RawForm: "sht3x measurement: temperature word, CRC-8, humidity word, CRC-8", Conversion: conv}
		},
	}, nil
}
