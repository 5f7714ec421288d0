package capabilities

import (
	"context"
	"fmt"

	"github.com/promcp/promcp-device/driverconf"
	"github.com/promcp/promcp-device/drivers/gpio"
	"github.com/promcp/promcp-device/manifests"
)

// openGPIOOut opens a digital output. One channel: its level, a boolean,
// read back from the pin and written. Simulated by sim's Pin.
func openGPIOOut(ctx context.Context, d manifests.Device, e env) (*device, error) {
	pin, err := e.hw.OpenPin(ctx, d)
	if err != nil {
		return nil, err
	}
	out := gpio.NewOutput(d.Name, pin, d.ActiveLow, e.log)
	if err := out.Open(ctx); err != nil {
		return nil, err
	}
	return &device{
		model: d.Model,
		source: perChannel(e.clock, func(string, manifests.ValueType) readFunc {
			return pinRead(out.Get, d.ActiveLow)
		}),
		writer: func(string, manifests.ValueType) (func(context.Context, any) error, error) {
			return func(ctx context.Context, v any) error {
				on, ok := v.(bool)
				if !ok {
					return fmt.Errorf("pin takes a boolean, not %T", v)
				}
				return out.Set(ctx, on)
			}, nil
		},
		bind: pinBinding(d),
	}, nil
}

// openGPIOIn opens a digital input. One channel: its level, a boolean.
// Read-only. Simulated by sim's Pin.
func openGPIOIn(ctx context.Context, d manifests.Device, e env) (*device, error) {
	pin, err := e.hw.OpenPin(ctx, d)
	if err != nil {
		return nil, err
	}
	in := gpio.NewInput(d.Name, pin, driverconf.Pull(d.Pull), d.ActiveLow, e.log)
	if err := in.Open(ctx); err != nil {
		return nil, err
	}
	return &device{
		model: d.Model,
		source: perChannel(e.clock, func(string, manifests.ValueType) readFunc {
			return pinRead(in.Get, d.ActiveLow)
		}),
		writer: noWriter(d.Model),
		bind:   pinBinding(d),
	}, nil
}

// pinRead reads a pin's logical level with get, and its electrical level
// (1 high, 0 low) as the raw form.
func pinRead(get func(context.Context) (bool, error), activeLow bool) readFunc {
	return func(ctx context.Context) (any, []byte, error) {
		on, err := get(ctx)
		if err != nil {
			return nil, nil, err
		}
		return on, level(on != activeLow), nil
	}
}

func pinBinding(d manifests.Device) func(string) Binding {
	conv := "level: high is true"
	if d.ActiveLow {
		conv = "level, active low: low is true"
	}
	return func(string) Binding {
		return Binding{Driver: "gpio", Address: "pin " + d.Pin, Register: "level",
			RawForm: "the electrical level (1 high, 0 low)", Conversion: conv}
	}
}
