package capabilities

import (
	"context"
	"fmt"
	"strconv"

	"github.com/promcp/promcp-device/drivers/pwm"
	"github.com/promcp/promcp-device/manifests"
)

// openPWM opens one channel of a hardware PWM chip through the kernel's
// pwm class. Channels: duty (% of the period, writable) and frequency (Hz,
// writable); both are read back from the kernel's files, so a do_* reports
// what the chip outputs. Opening exports the channel and, if it has no
// period yet, sets the manifest's frequency at 0 % duty. Simulated by
// sim's pwmOutput behind the same files. The grounds of a reading are the
// period and duty_cycle files' text.
func openPWM(ctx context.Context, d manifests.Device, e env) (*device, error) {
	fs, b, err := openSysfs(ctx, d, e)
	if err != nil {
		return nil, err
	}
	ch := pwm.New(fs, d.Channel)
	if err := ch.Open(ctx, d.Frequency); err != nil {
		return nil, err
	}
	root := b.Device
	if root == "" {
		root = manifests.DefaultPWMChip
	}
	dir := root + "/pwm" + strconv.Itoa(d.Channel)
	return &device{
		model: d.Model,
		source: perChannelOf(e.clock, ch.State, func(s pwm.State, channel string, t manifests.ValueType) (any, []byte, error) {
			raw := fmt.Appendf(nil, "period=%d duty_cycle=%d enable=%d", s.Period, s.Duty, b2i(s.Enabled))
			if channel == "frequency" {
				return numeric(round(s.Frequency(), 3), t), raw, nil
			}
			return numeric(round(s.DutyPercent(), 2), t), raw, nil
		}),
		writer: func(channel string, _ manifests.ValueType) (func(context.Context, any) error, error) {
			return func(ctx context.Context, v any) error {
				f, ok := v.(float64)
				if !ok {
					return fmt.Errorf("pwm %s takes a number, not %T", channel, v)
				}
				if channel == "frequency" {
					return ch.SetFrequency(ctx, f)
				}
				return ch.SetDuty(ctx, f)
			}, nil
		},
		bind: func(channel string) Binding {
			conv := "100 × duty_cycle / period %, 0 when disabled, rounded to 0.01"
			if channel == "frequency" {
				conv = "1e9 / period Hz, rounded to 0.001"
			}
			return Binding{Driver: "pwm", Address: dir, Register: channel,
				RawForm: "the kernel's period, duty_cycle (ns) and enable files", Conversion: conv}
		},
	}, nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
