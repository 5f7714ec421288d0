package capabilities

import (
	"context"
	"fmt"

	"github.com/promcp/promcp-device/drivers/i2c"
	"github.com/promcp/promcp-device/manifests"
)

// openINA219 opens a TI INA219 on an I2C bus, calibrated for the device's
// shunt_ohms and max_current. Channels: bus_voltage (V), shunt_voltage
// (mV), current (A), power (W), from one read of the four registers.
// Read-only. Simulated by sim's ina219. The grounds of a reading are the
// shunt, bus, power and current registers as read.
func openINA219(_ context.Context, d manifests.Device, e env) (*device, error) {
	bus, ok := e.buses[d.Bus]
	if !ok {
		return nil, fmt.Errorf("bus %q is not an open I2C bus", d.Bus)
	}
	cal, err := i2c.NewINACalibration(d.ShuntOhms, d.MaxCurrent)
	if err != nil {
		return nil, err
	}
	mon := i2c.NewINA219(bus, d.Address, cal)
	shared := newSampler(e.clock, func(ctx context.Context) (any, []byte, error) {
		r, err := mon.Sense(ctx)
		if err != nil {
			return nil, nil, err
		}
		return r, r.Raw[:], nil
	})
	return &device{
		model: d.Model,
		source: func(channel string, t manifests.ValueType) (*sampler, func(any) any, error) {
			var pick func(i2c.PowerReading) float64
			switch channel {
			case "bus_voltage":
				pick = func(r i2c.PowerReading) float64 { return r.BusVolts }
			case "shunt_voltage":
				pick = func(r i2c.PowerReading) float64 { return r.ShuntMilli }
			case "current":
				pick = func(r i2c.PowerReading) float64 { return r.Amps }
			case "power":
				pick = func(r i2c.PowerReading) float64 { return r.Watts }
			default:
				return nil, nil, fmt.Errorf("ina219 has no channel %q (want %s)", channel, oneOfChannels(manifests.ChipChannels(d)))
			}
			return shared, func(v any) any { return numeric(round(pick(v.(i2c.PowerReading)), 6), t) }, nil
		},
		writer: noWriter(d.Model),
		bind: func(channel string) Binding {
			conv := map[string]string{
				"bus_voltage":   "bus register (bytes 2-3) >> 3 × 4 mV",
				"shunt_voltage": "shunt register (bytes 0-1), int16 × 10 µV, in mV",
				"current":       fmt.Sprintf("current register (bytes 6-7), int16 × %.6g A (Cal %d for %g Ω)", cal.CurrentLSB, cal.Cal, d.ShuntOhms),
				"power":         fmt.Sprintf("power register (bytes 4-5) × %.6g W (20 × current LSB)", 20*cal.CurrentLSB),
			}[channel]
			return Binding{Driver: "i2c", Address: fmt.Sprintf("0x%02x", d.Address), Register: channel,
				RawForm: "ina219 shunt, bus, power and current registers, MSB first", Conversion: conv}
		},
	}, nil
}
