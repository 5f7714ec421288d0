// Package pwm drives one channel of a hardware PWM chip through the Linux
// pwm class (dtoverlay=pwm-2chan on a Raspberry Pi: channel 0 on GPIO18,
// channel 1 on GPIO19): export, then period, duty_cycle and enable in
// nanoseconds. Every setting is read back from the kernel's files.
//
// periph.io's bcm283x driver reaches the PWM block through /dev/mem (root,
// and it fights the kernel's driver); the pwm class is what the overlay
// provides and needs only write access to the files, so this package
// writes them.
package pwm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"

	"github.com/promcp/promcp-device/drivers"
	"github.com/promcp/promcp-device/drivers/sysfs"
)

// State is what the kernel holds for a channel.
type State struct {
	Period, Duty int64 // ns
	Enabled      bool
}

// DutyPercent is the duty cycle in percent of the period, 0 when disabled.
func (s State) DutyPercent() float64 {
	if !s.Enabled || s.Period <= 0 {
		return 0
	}
	return 100 * float64(s.Duty) / float64(s.Period)
}

// Frequency is 1 / period in Hz, 0 before a period is set.
func (s State) Frequency() float64 {
	if s.Period <= 0 {
		return 0
	}
	return 1e9 / float64(s.Period)
}

// Channel is one exported PWM channel.
type Channel struct {
	fs sysfs.FS
	n  int
	mu sync.Mutex // one setting at a time: period and duty are two writes
}

// New returns channel n of the chip whose files fs holds. It does no I/O.
func New(fs sysfs.FS, n int) *Channel { return &Channel{fs: fs, n: n} }

func (c *Channel) attr(name string) string { return "pwm" + strconv.Itoa(c.n) + "/" + name }

// Open exports the channel if the kernel has not, and, when it has no
// period yet, sets hz with a duty cycle of 0 and enables it.
func (c *Channel) Open(ctx context.Context, hz float64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.fs.ReadFile(ctx, c.attr("period")); errors.Is(err, drivers.ErrUnavailable) {
		if err := c.fs.WriteFile(ctx, "export", []byte(strconv.Itoa(c.n))); err != nil {
			return fmt.Errorf("pwm channel %d: export (is dtoverlay=pwm-2chan loaded?): %w", c.n, err)
		}
	}
	s, err := c.stateLocked(ctx)
	if err != nil {
		return err
	}
	if s.Period == 0 {
		if err := c.writeLocked(ctx, "period", Period(hz)); err != nil {
			return err
		}
	}
	if !s.Enabled {
		if err := c.writeLocked(ctx, "enable", 1); err != nil {
			return err
		}
	}
	return nil
}

// Period is the period in ns of hz, rounded.
func Period(hz float64) int64 { return int64(math.Round(1e9 / hz)) }

// Duty is the duty cycle in ns of pct percent of period, rounded.
func Duty(period int64, pct float64) int64 { return int64(math.Round(float64(period) * pct / 100)) }

// State reads the channel's settings back from the kernel.
func (c *Channel) State(ctx context.Context) (State, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stateLocked(ctx)
}

func (c *Channel) stateLocked(ctx context.Context) (State, error) {
	var s State
	var en int64
	for _, f := range []struct {
		name string
		v    *int64
	}{{"period", &s.Period}, {"duty_cycle", &s.Duty}, {"enable", &en}} {
		b, err := c.fs.ReadFile(ctx, c.attr(f.name))
		if err != nil {
			return State{}, fmt.Errorf("pwm channel %d: %w", c.n, err)
		}
		v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			return State{}, fmt.Errorf("pwm channel %d: %s holds %q, not a number of ns", c.n, f.name, strings.TrimSpace(string(b)))
		}
		*f.v = v
	}
	s.Enabled = en == 1
	return s, nil
}

func (c *Channel) writeLocked(ctx context.Context, attr string, v int64) error {
	if err := c.fs.WriteFile(ctx, c.attr(attr), []byte(strconv.FormatInt(v, 10))); err != nil {
		return fmt.Errorf("pwm channel %d: %s %d: %w", c.n, attr, v, err)
	}
	return nil
}

// SetDuty sets the duty cycle to pct percent (0..100) of the period and
// enables the channel.
func (c *Channel) SetDuty(ctx context.Context, pct float64) error {
	if pct < 0 || pct > 100 || math.IsNaN(pct) {
		return fmt.Errorf("pwm channel %d: duty %g%% (want 0..100)", c.n, pct)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s, err := c.stateLocked(ctx)
	if err != nil {
		return err
	}
	if err := c.writeLocked(ctx, "duty_cycle", Duty(s.Period, pct)); err != nil {
		return err
	}
	if !s.Enabled {
		return c.writeLocked(ctx, "enable", 1)
	}
	return nil
}

// SetFrequency sets the frequency to hz, keeping the duty cycle's percent.
// The kernel refuses a duty cycle longer than the period at every step, so
// a shorter period is written after the duty cycle, a longer one before.
func (c *Channel) SetFrequency(ctx context.Context, hz float64) error {
	if !(hz > 0) || math.IsInf(hz, 0) {
		return fmt.Errorf("pwm channel %d: frequency %g Hz (want more than 0)", c.n, hz)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s, err := c.stateLocked(ctx)
	if err != nil {
		return err
	}
	period := Period(hz)
	pct := 0.0
	if s.Period > 0 {
		pct = 100 * float64(s.Duty) / float64(s.Period)
	}
	duty := Duty(period, pct)
	if period >= s.Period {
		if err := c.writeLocked(ctx, "period", period); err != nil {
			return err
		}
		return c.writeLocked(ctx, "duty_cycle", duty)
	}
	if err := c.writeLocked(ctx, "duty_cycle", duty); err != nil {
		return err
	}
	return c.writeLocked(ctx, "period", period)
}
