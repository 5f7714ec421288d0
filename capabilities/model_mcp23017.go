package capabilities

import (
	"context"
	"fmt"

	"github.com/promcp/promcp-device/drivers/i2c"
	"github.com/promcp/promcp-device/manifests"
)

// openMCP23017 opens a Microchip MCP23017 expander. Channels: its pins by
// name, booleans; output pins are written (relays) and read back from the
// GPIO registers. Simulated by sim's expander. The grounds of a reading
// are GPIOA and GPIOB as read.
func openMCP23017(bus *i2c.Bus, d manifests.Device, e env) (*device, error) {
	var outputs, pullUps, off uint16
	for _, p := range d.Pins {
		switch {
		case p.Output:
			outputs |= 1 << p.Pin
			if p.ActiveLow {
				off |= 1 << p.Pin // off is the line high
			}
		case p.PullUp:
			pullUps |= 1 << p.Pin
		}
	}
	return openExpander(d, e, i2c.NewMCP23017(bus, d.Address, outputs, pullUps, off), "GPIOA, GPIOB (0x12, 0x13)")
}

// openExpander serves the pins of an MCP23017 or PCF8574. Each pin's reads
// are their own transaction, so that a write's readback is fresh.
func openExpander(d manifests.Device, e env, x *i2c.Expander, rawForm string) (*device, error) {
	find := func(channel string) (manifests.ExpanderPin, error) {
		for _, p := range d.Pins {
			if p.Name == channel {
				return p, nil
			}
		}
		return manifests.ExpanderPin{}, fmt.Errorf("%s has no pin %q (want %s)", d.Model, channel, oneOfChannels(manifests.ChipChannels(d)))
	}
	return &device{
		model: d.Model,
		source: func(channel string, t manifests.ValueType) (*sampler, func(any) any, error) {
			p, err := find(channel)
			if err != nil {
				return nil, nil, err
			}
			return newSampler(e.clock, func(ctx context.Context) (any, []byte, error) {
				lv, raw, err := x.Levels(ctx)
				if err != nil {
					return nil, nil, fmt.Errorf("pin %s: %w", p.Name, err)
				}
				return (lv&(1<<p.Pin) != 0) != p.ActiveLow, raw, nil
			}), identity, nil
		},
		writer: func(channel string, _ manifests.ValueType) (func(context.Context, any) error, error) {
			p, err := find(channel)
			if err != nil {
				return nil, err
			}
			if !p.Output {
				return nil, fmt.Errorf("%s pin %s is an input", d.Model, p.Name)
			}
			return func(ctx context.Context, v any) error {
				on, ok := v.(bool)
				if !ok {
					return fmt.Errorf("pin %s takes a boolean, not %T", p.Name, v)
				}
				if _, err := x.Set(ctx, p.Pin, on != p.ActiveLow); err != nil {
					return fmt.Errorf("pin %s: %w", p.Name, err)
				}
				return nil
			}, nil
		},
		bind: func(channel string) Binding {
			b := i2cBinding(d, channel, rawForm, "")
			if p, err := find(channel); err == nil {
				b.Register = fmt.Sprintf("%s (pin %d)", channel, p.Pin)
				b.Conversion = fmt.Sprintf("bit %d: high is true", p.Pin)
				if p.ActiveLow {
					b.Conversion = fmt.Sprintf("bit %d, active low: low is true", p.Pin)
				}
			}
			return b
		},
	}, nil
}
