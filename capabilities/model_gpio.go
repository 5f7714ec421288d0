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
		source: perChannel(e.clock, func(string, manifests.ValueType) func(context.Context) (any, error) {
			return func(ctx context.Context) (any, error) { return out.Get(ctx) }
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
		source: perChannel(e.clock, func(string, manifests.ValueType) func(context.Context) (any, error) {
			return func(ctx context.Context) (any, error) { return in.Get(ctx) }
		}),
		writer: noWriter(d.Model),
	}, nil
}
