package capabilities

import (
	"context"
	"fmt"
	"log/slog"

	pgpio "periph.io/x/conn/v3/gpio"

	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/drivers/i2c"
	"github.com/promcp/promcp-device/drivers/modbus"
	"github.com/promcp/promcp-device/drivers/serial"
	"github.com/promcp/promcp-device/manifests"
)

// models is the table of device models: each has its own file with its
// opener (and its channels); adding a model is adding that file and a row
// here. A row also says what the opener is handed: the device's open I2C
// bus, Modbus or serial line, or GPIO pin (onI2C, onModbus, onSerial,
// onPin), or only the env. The simulator keeps the same table for its
// counterparts (sim's models).
func models() map[manifests.Model]opener {
	return map[manifests.Model]opener{
		manifests.ModelSHT3x:      onI2C(openSHT3x),
		manifests.ModelRegisters:  onI2C(openRegisters),
		manifests.ModelGPIOOut:    onPin(openGPIOOut),
		manifests.ModelGPIOIn:     onPin(openGPIOIn),
		manifests.ModelModbus:     onModbus(openModbus),
		manifests.ModelSerialLine: onSerial(openSerialLine),
		manifests.ModelMQTT:       openMQTT,
		manifests.ModelBME280:     onI2C(openBME280),
		manifests.ModelBMP280:     onI2C(openBME280),
		manifests.ModelADS1115:    onI2C(openADS1x15),
		manifests.ModelADS1015:    onI2C(openADS1x15),
		manifests.ModelINA219:     onI2C(openINA219),
		manifests.ModelMCP23017:   onI2C(openMCP23017),
		manifests.ModelPCF8574:    onI2C(openPCF8574),
		manifests.ModelSHT4x:      onI2C(openSHT4x),
		manifests.ModelSCD4x:      onI2C(openSCD4x),
		manifests.ModelBH1750:     onI2C(openBH1750),

		// 1-Wire, PWM and SPI through the kernel; pulses on a GPIO edge.
		manifests.ModelDS18B20:      openDS18B20,
		manifests.ModelPWM:          openPWM,
		manifests.ModelMCP3008:      openMCP3008,
		manifests.ModelPulseCounter: onPin(openPulseCounter),
		manifests.ModelDHT22:        openDHT22,
	}
}

// opener opens one device of its model.
type opener func(ctx context.Context, d manifests.Device, e env) (*device, error)

// busOpener opens one device of its model on its open bus or line B.
type busOpener[B any] func(bus B, d manifests.Device, e env) (*device, error)

// onBus makes an opener of open: it hands open the device's bus from
// buses (the env's open buses of one kind, by name), and fails for a bus
// that is not an open one of that kind.
func onBus[B any](kind string, buses func(env) map[string]B, open busOpener[B]) opener {
	return func(_ context.Context, d manifests.Device, e env) (*device, error) {
		bus, ok := buses(e)[d.Bus]
		if !ok {
			return nil, fmt.Errorf("bus %q is not an open %s", d.Bus, kind)
		}
		return open(bus, d, e)
	}
}

func onI2C(open busOpener[*i2c.Bus]) opener {
	return onBus("I2C bus", func(e env) map[string]*i2c.Bus { return e.buses }, open)
}

func onModbus(open busOpener[*modbus.Line]) opener {
	return onBus("Modbus line", func(e env) map[string]*modbus.Line { return e.lines.modbus }, open)
}

func onSerial(open busOpener[*serial.Line]) opener {
	return onBus("serial line", func(e env) map[string]*serial.Line { return e.lines.serial }, open)
}

// onPin makes an opener of open: it hands open the device's GPIO pin.
func onPin(open func(ctx context.Context, pin pgpio.PinIO, d manifests.Device, e env) (*device, error)) opener {
	return func(ctx context.Context, d manifests.Device, e env) (*device, error) {
		pin, err := e.hw.OpenPin(ctx, d)
		if err != nil {
			return nil, err
		}
		return open(ctx, pin, d, e)
	}
}

// openDevice opens d with its model's opener.
func openDevice(ctx context.Context, table map[manifests.Model]opener, d manifests.Device, e env) (*device, error) {
	open, ok := table[d.Model]
	if !ok {
		return nil, fmt.Errorf("unknown model %q", d.Model)
	}
	e.log = e.log.With("device", d.Name)
	return open(ctx, d, e)
}

// env is what a model's opener may use: the open I2C buses and serial or
// TCP lines, the hardware for pins, the clock and the device's logger.
type env struct {
	buses map[string]*i2c.Bus
	lines *lineSet
	hw    Hardware
	clock clock.Clock
	log   *slog.Logger
	// declared is every bus of the manifest, by name.
	declared map[string]manifests.Bus
	// closers registers what the Set closes when it closes.
	closers func(func() error)
	// stateDir is Options.StateDir.
	stateDir string
	// brokers are the open mqtt buses by name.
	brokers map[string]*broker
}

// device is an opened device that hands out per-channel functions.
type device struct {
	model manifests.Model
	// source returns the sampler that reads channel and the function that
	// picks the channel's value (of type t) from its samples. Channels of
	// one measurement share a sampler.
	source func(channel string, t manifests.ValueType) (*sampler, func(any) any, error)
	writer func(channel string, t manifests.ValueType) (func(context.Context, any) error, error)
	// bind says how channel is read and converted (Device and Bus are
	// filled by Open).
	bind func(channel string) Binding
	// origin prefixes the device's name in its capabilities' Source
	// ("mqtt:zigbee2mqtt/" for a Lite device adopted over MQTT); "" for a
	// device this gateway drives itself.
	origin string
	// onDeviceError is the model's default for health.on_device_error
	// when the manifest leaves it out ("" means the framework's, error).
	onDeviceError manifests.OnDeviceError
	// bus is the manifest's bus the device is on (filled by Open).
	bus string
}

func identity(v any) any { return v }

// perChannel gives each channel its own sampler over read.
func perChannel(clk clock.Clock, read func(channel string, t manifests.ValueType) readFunc) func(string, manifests.ValueType) (*sampler, func(any) any, error) {
	return func(channel string, t manifests.ValueType) (*sampler, func(any) any, error) {
		return newSampler(clk, read(channel, t)), identity, nil
	}
}

// perChannelOf is perChannel for a device read whole: each channel's
// sampler reads the device with read and, when that succeeds, picks the
// channel's value (of type t) and raw bytes from the sample with pick.
func perChannelOf[S any](clk clock.Clock, read func(context.Context) (S, error), pick func(s S, channel string, t manifests.ValueType) (any, []byte, error)) func(string, manifests.ValueType) (*sampler, func(any) any, error) {
	return perChannel(clk, func(channel string, t manifests.ValueType) readFunc {
		return func(ctx context.Context) (any, []byte, error) {
			s, err := read(ctx)
			if err != nil {
				return nil, nil, err
			}
			return pick(s, channel, t)
		}
	})
}

func noWriter(model manifests.Model) func(string, manifests.ValueType) (func(context.Context, any) error, error) {
	return func(string, manifests.ValueType) (func(context.Context, any) error, error) {
		return nil, fmt.Errorf("model %s is read-only", model)
	}
}
