package capabilities

import (
	"context"
	"fmt"

	"github.com/promcp/promcp-device/drivers/i2c"
	"github.com/promcp/promcp-device/manifests"
)

// openADS1x15 opens a TI ADS1015 or ADS1115 on an I2C bus. Channels: its
// inputs by name, each one single-shot conversion with the input's
// multiplexer and gain, scaled to volts, milliamps (a current loop through
// a shunt) or percent. Read-only. Simulated by sim's ads1x15. The grounds
// of a reading are the conversion register as read.
func openADS1x15(bus *i2c.Bus, d manifests.Device, e env) (*device, error) {
	twelve := d.Model == manifests.ModelADS1015
	adc := i2c.NewADS1x15(bus, d.Address, twelve, nil)
	find := func(channel string) (manifests.ADCInput, i2c.ADSInput, uint8, error) {
		for _, in := range d.Inputs {
			if in.Name != channel {
				continue
			}
			mux, ok := adsMux(in.Input)
			pga, okPGA := i2c.ADSPGA(in.FullScale)
			if !ok || !okPGA {
				return in, 0, 0, fmt.Errorf("%s input %s: input %q at ±%g V is not a setting of the chip", d.Model, in.Name, in.Input, in.FullScale)
			}
			return in, mux, pga, nil
		}
		return manifests.ADCInput{}, 0, 0, fmt.Errorf("%s has no input %q (want %s)", d.Model, channel, oneOfChannels(manifests.ChipChannels(d)))
	}
	return &device{
		model: d.Model,
		source: func(channel string, t manifests.ValueType) (*sampler, func(any) any, error) {
			in, mux, pga, err := find(channel)
			if err != nil {
				return nil, nil, err
			}
			s := newSampler(e.clock, func(ctx context.Context) (any, []byte, error) {
				v, raw, err := adc.Read(ctx, mux, pga)
				if err != nil {
					return nil, nil, fmt.Errorf("input %s: %w", in.Name, err)
				}
				return numeric(round(ADCScaled(in, v), 6), t), raw[:], nil
			})
			return s, identity, nil
		},
		writer: noWriter(d.Model),
		bind: func(channel string) Binding {
			b := i2cBinding(d, channel, "conversion register (0x00), MSB first", "")
			in, mux, pga, err := find(channel)
			if err != nil {
				return b
			}
			lsb := "FS/32768 (16-bit two's complement)"
			if twelve {
				lsb = "FS/2048 (12 bits, left-justified)"
			}
			b.Register = fmt.Sprintf("%s (%s, config 0x%04x)", channel, in.Input, i2c.ADSConfig(mux, pga))
			b.Conversion = fmt.Sprintf("volts = code × %s, FS ±%g V", lsb, in.FullScale)
			switch in.As {
			case manifests.ScaleMilliamps:
				b.Conversion += fmt.Sprintf("; mA = volts / %g Ω × 1000", in.ShuntOhms)
			case manifests.ScalePercent:
				unit, x := "V", "volts"
				if in.ShuntOhms > 0 {
					unit, x = "mA", fmt.Sprintf("(volts / %g Ω × 1000)", in.ShuntOhms)
				}
				b.Conversion += fmt.Sprintf("; %% = (%s - %g %s) / (%g - %g) × 100", x, in.Zero, unit, in.Full, in.Zero)
			}
			return b
		},
	}, nil
}

// ADCScaled converts an input's volts to its scale (the inverse of sim's
// ADCVolts).
func ADCScaled(in manifests.ADCInput, volts float64) float64 {
	switch in.As {
	case manifests.ScaleMilliamps:
		return volts / in.ShuntOhms * 1000
	case manifests.ScalePercent:
		x := volts
		if in.ShuntOhms > 0 {
			x = volts / in.ShuntOhms * 1000
		}
		return (x - in.Zero) / (in.Full - in.Zero) * 100
	}
	return volts
}

// adsMux maps the manifest's input word to the multiplexer setting.
func adsMux(s string) (i2c.ADSInput, bool) {
	m, ok := map[string]i2c.ADSInput{
		"a0_a1": i2c.ADSDiff01, "a0_a3": i2c.ADSDiff03, "a1_a3": i2c.ADSDiff13, "a2_a3": i2c.ADSDiff23,
		"a0": i2c.ADSAIN0, "a1": i2c.ADSAIN1, "a2": i2c.ADSAIN2, "a3": i2c.ADSAIN3,
	}[s]
	return m, ok
}
