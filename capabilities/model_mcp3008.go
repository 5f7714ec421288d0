package capabilities

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"periph.io/x/conn/v3/physic"
	pspi "periph.io/x/conn/v3/spi"

	"github.com/promcp/promcp-device/drivers"
	"github.com/promcp/promcp-device/drivers/adc"
	"github.com/promcp/promcp-device/manifests"
)

// openMCP3008 opens an MCP3008 ADC on an spi bus (one per bus: a bus is a
// chip select). Channels: ch0..ch7 single-ended and diff0..diff7 the
// datasheet's differential configurations, in volts of the device's vref
// (rounded to 1 mV); raw0..raw7 the single-ended 10-bit code. Read-only.
// Simulated by sim's MCP3008 at the SPI transaction. The grounds of a
// reading are the reply's three bytes.
func openMCP3008(ctx context.Context, d manifests.Device, e env) (*device, error) {
	conn, dev, err := connectSPI(ctx, d, e, adc.MaxSpeed)
	if err != nil {
		return nil, err
	}
	chip := adc.NewMCP3008(conn)
	vref := d.VRef
	if vref <= 0 {
		vref = manifests.DefaultVRef
	}
	return &device{
		model: d.Model,
		source: perChannel(e.clock, func(channel string, t manifests.ValueType) readFunc {
			in := mcp3008Input(d, channel)
			config, diff, raw := mcp3008Channel(in.Input)
			return func(ctx context.Context) (any, []byte, error) {
				code, reply, err := chip.Read(ctx, config, diff)
				if err != nil {
					return nil, nil, err
				}
				if raw {
					return numeric(float64(code), t), reply[:], nil
				}
				return numeric(scaleInput(in, adc.Volts(code, vref)), t), reply[:], nil
			}
		}),
		writer: noWriter(d.Model),
		bind: func(channel string) Binding {
			return mcp3008Binding(mcp3008Input(d, channel), dev, vref)
		},
	}, nil
}

// connectSPI opens the spi bus of device d and connects to it in mode 0,
// 8 bits a word, at the bus's speed but at most maxSpeed (Hz); the Set
// closes the port. It returns the bus's device too.
func connectSPI(ctx context.Context, d manifests.Device, e env, maxSpeed int) (pspi.Conn, string, error) {
	port, b, err := openExtension(ctx, d, e, spiPorts, SPIHardware.OpenSPI)
	if err != nil {
		return nil, "", err
	}
	dev := b.Device
	if dev == "" {
		dev = manifests.DefaultSPIDevice
	}
	speed := b.Speed
	if speed <= 0 {
		speed = manifests.DefaultSPISpeed
	}
	conn, err := port.Connect(physic.Frequency(min(speed, maxSpeed))*physic.Hertz, pspi.Mode0, 8)
	if err != nil {
		port.Close()
		return nil, "", fmt.Errorf("bus %s: %w: %w", b.Name, drivers.ErrUnavailable, err)
	}
	e.closers(port.Close)
	return conn, dev, nil
}

// mcp3008Binding says how input in is read from the chip at dev with
// reference vref, and converted.
func mcp3008Binding(in manifests.ADCInput, dev string, vref float64) Binding {
	config, diff, raw := mcp3008Channel(in.Input)
	conv := fmt.Sprintf("code × %g / 1024 V, rounded to 0.001", vref)
	switch in.As {
	case manifests.ScaleMilliamps:
		conv = fmt.Sprintf("code × %g / 1024 V / %g Ω × 1000 mA, rounded to 0.001", vref, in.ShuntOhms)
	case manifests.ScalePercent:
		x, unit := fmt.Sprintf("code × %g / 1024 V", vref), "V"
		if in.ShuntOhms > 0 {
			x, unit = fmt.Sprintf("(code × %g / 1024 V / %g Ω × 1000)", vref, in.ShuntOhms), "mA"
		}
		conv = fmt.Sprintf("(%s − %g %s) / (%g − %g) × 100 %%, rounded to 0.01", x, in.Zero, unit, in.Full, in.Zero)
	}
	if raw {
		conv = "the 10-bit code (reply byte 1 bits 1-0, byte 2)"
	}
	reg := fmt.Sprintf("CH%d single-ended", config)
	if diff {
		reg = fmt.Sprintf("differential configuration %d (datasheet Table 5-2)", config)
	}
	return Binding{Driver: "spi", Address: dev, Register: reg,
		RawForm: "the 3-byte reply (undefined, null bit + B9-B8, B7-B0)", Conversion: conv}
}

// mcp3008Channel parses a validated channel name.
func mcp3008Channel(ch string) (config int, diff, raw bool) {
	digits := strings.TrimLeft(ch, "abcdefghijklmnopqrstuvwxyz")
	config, _ = strconv.Atoi(digits)
	return config, strings.HasPrefix(ch, "diff"), strings.HasPrefix(ch, "raw")
}

// mcp3008Input returns the scaled input a channel names; a chip channel
// (ch0, diff3, raw7) is itself, in volts.
func mcp3008Input(d manifests.Device, channel string) manifests.ADCInput {
	for _, in := range d.Inputs {
		if in.Name == channel {
			return in
		}
	}
	return manifests.ADCInput{Name: channel, Input: channel, As: manifests.ScaleVolts}
}

// scaleInput converts an input's volts to its scale (as an ADS1x15's,
// [ADCScaled]), rounded to the MCP3008's resolution: 0.001 V or mA, 0.01 %.
func scaleInput(in manifests.ADCInput, v float64) float64 {
	if in.As == manifests.ScalePercent {
		return round(ADCScaled(in, v), 2)
	}
	return round(ADCScaled(in, v), 3)
}
