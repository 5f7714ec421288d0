package capabilities

import (
	"context"
	"fmt"

	pgpio "periph.io/x/conn/v3/gpio"

	"github.com/promcp/promcp-device/driverconf"
	"github.com/promcp/promcp-device/drivers/gpio"
	"github.com/promcp/promcp-device/manifests"
)

// openGPIOOut opens a digital output. One channel: its level, a boolean,
// read back from the pin and written. Simulated by sim's Pin.
func openGPIOOut(ctx context.Context, pin pgpio.PinIO, d manifests.Device, e env) (*device, error) {
	out := gpio.NewOutput(d.Name, pin, d.ActiveLow, e.log)
	if err := out.Open(ctx); err != nil {
		return nil, err
	}
	return levelDevice(d, e, out.Get, func(string, manifests.ValueType) (func(context.Context, any) error, error) {
		return func(ctx context.Context, v any) error {
			on, ok := v.(bool)
			if !ok {
				return fmt.Errorf("pin takes a boolean, not %T", v)
			}
			return out.Set(ctx, on)
		}, nil
	}), nil
}

// openGPIOIn opens a digital input. One channel: its level, a boolean.
// Read-only. Simulated by sim's Pin.
func openGPIOIn(ctx context.Context, pin pgpio.PinIO, d manifests.Device, e env) (*device, error) {
	in := gpio.NewInput(d.Name, pin, driverconf.Pull(d.Pull), d.ActiveLow, e.log)
	if err := in.Open(ctx); err != nil {
		return nil, err
	}
	return levelDevice(d, e, in.Get, noWriter(d.Model)), nil
}

// levelDevice serves the level of a GPIO device: its logical level read
// with get, its electrical level (1 high, 0 low) as the raw form.
func levelDevice(d manifests.Device, e env, get func(context.Context) (bool, error), writer func(string, manifests.ValueType) (func(context.Context, any) error, error)) *device {
	conv := "level: high is true"
	if d.ActiveLow {
		conv = "level, active low: low is true"
	}
	return &device{
		model: d.Model,
		source: perChannelOf(e.clock, get, func(on bool, _ string, _ manifests.ValueType) (any, []byte, error) {
			return on, level(on != d.ActiveLow), nil
		}),
		writer: writer,
		bind: func(string) Binding {
			return Binding{Driver: "gpio", Address: "pin " + d.Pin, Register: "level",
				RawForm: "the electrical level (1 high, 0 low)", Conversion: conv}
		},
	}
}
