package gpio

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	pgpio "periph.io/x/conn/v3/gpio"
	"periph.io/x/conn/v3/physic"
	"periph.io/x/conn/v3/pin"
)

// fakePin is a gpio.PinIO that records every call that configures or drives
// it. (periph's gpiotest.Pin needs github.com/jonboulle/clockwork, which
// this module does not require yet.)
type fakePin struct {
	mu     sync.Mutex
	level  pgpio.Level
	ops    []string
	outErr error
}

func (p *fakePin) String() string                         { return "GPIO17" }
func (p *fakePin) Halt() error                            { return nil }
func (p *fakePin) Name() string                           { return "GPIO17" }
func (p *fakePin) Number() int                            { return 17 }
func (p *fakePin) Function() string                       { return "" }
func (p *fakePin) Func() pin.Func                         { return pin.FuncNone }
func (p *fakePin) SupportedFuncs() []pin.Func             { return nil }
func (p *fakePin) SetFunc(pin.Func) error                 { return errors.New("unsupported") }
func (p *fakePin) WaitForEdge(time.Duration) bool         { return false }
func (p *fakePin) Pull() pgpio.Pull                       { return pgpio.PullNoChange }
func (p *fakePin) DefaultPull() pgpio.Pull                { return pgpio.PullNoChange }
func (p *fakePin) PWM(pgpio.Duty, physic.Frequency) error { return errors.New("unsupported") }

func (p *fakePin) In(pull pgpio.Pull, edge pgpio.Edge) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ops = append(p.ops, fmt.Sprintf("In(%s, %s)", pull, edge))
	return nil
}

func (p *fakePin) Read() pgpio.Level {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.level
}

func (p *fakePin) Out(l pgpio.Level) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ops = append(p.ops, fmt.Sprintf("Out(%s)", l))
	if p.outErr != nil {
		return p.outErr
	}
	p.level = l
	return nil
}

var _ pgpio.PinIO = (*fakePin)(nil)

func TestOutputOpenKeepsLevel(t *testing.T) {
	for _, l := range []pgpio.Level{pgpio.Low, pgpio.High} {
		t.Run(l.String(), func(t *testing.T) {
			p := &fakePin{level: l}
			o := NewOutput("heater_relay", p, true, nil)
			if err := o.Open(t.Context()); err != nil {
				t.Fatalf("Open() = %v", err)
			}
			if want := []string{fmt.Sprintf("Out(%s)", l)}; !slices.Equal(p.ops, want) {
				t.Errorf("Open() did %q, want %q", p.ops, want)
			}
		})
	}
}

func TestOutputSetGet(t *testing.T) {
	tests := []struct {
		name      string
		activeLow bool
		on        bool
		line      pgpio.Level
	}{
		{"on", false, true, pgpio.High},
		{"off", false, false, pgpio.Low},
		{"on active low", true, true, pgpio.Low},
		{"off active low", true, false, pgpio.High},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &fakePin{level: !tc.line}
			o := NewOutput("relay", p, tc.activeLow, nil)
			if err := o.Set(t.Context(), tc.on); err != nil {
				t.Fatalf("Set(%t) = %v", tc.on, err)
			}
			if want := []string{fmt.Sprintf("Out(%s)", tc.line)}; !slices.Equal(p.ops, want) {
				t.Errorf("Set(%t) did %q, want %q", tc.on, p.ops, want)
			}
			got, err := o.Get(t.Context())
			if err != nil || got != tc.on {
				t.Errorf("Get() = %t, %v, want %t", got, err, tc.on)
			}
		})
	}
}

func TestOutputErrors(t *testing.T) {
	p := &fakePin{outErr: errors.New("permission denied")}
	o := NewOutput("pump_relay", p, false, nil)
	err := o.Set(t.Context(), true)
	const want = "gpio pump_relay (GPIO17): set true (line High): permission denied"
	if err == nil || err.Error() != want {
		t.Errorf("Set() = %q, want %q", err, want)
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	p = &fakePin{}
	o = NewOutput("pump_relay", p, false, nil)
	if err := o.Set(ctx, true); !errors.Is(err, context.Canceled) {
		t.Errorf("Set(cancelled) = %v, want context.Canceled", err)
	}
	if err := o.Open(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Open(cancelled) = %v, want context.Canceled", err)
	}
	if len(p.ops) != 0 {
		t.Errorf("cancelled calls did %q, want nothing", p.ops)
	}
}

func TestInput(t *testing.T) {
	tests := []struct {
		name      string
		pull      Pull
		activeLow bool
		line      pgpio.Level
		wantIn    string
		want      bool
	}{
		{"pull up high", PullUp, false, pgpio.High, "In(PullUp, NoEdge)", true},
		{"pull down low", PullDown, false, pgpio.Low, "In(PullDown, NoEdge)", false},
		{"float", PullNone, false, pgpio.High, "In(Float, NoEdge)", true},
		{"unchanged pull, active low", "", true, pgpio.Low, "In(PullNoChange, NoEdge)", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &fakePin{level: tc.line}
			in := NewInput("door_switch", p, tc.pull, tc.activeLow, nil)
			if err := in.Open(t.Context()); err != nil {
				t.Fatalf("Open() = %v", err)
			}
			if want := []string{tc.wantIn}; !slices.Equal(p.ops, want) {
				t.Errorf("Open() did %q, want %q", p.ops, want)
			}
			got, err := in.Get(t.Context())
			if err != nil || got != tc.want {
				t.Errorf("Get() = %t, %v, want %t", got, err, tc.want)
			}
		})
	}
}

func TestInputBadPull(t *testing.T) {
	p := &fakePin{}
	in := NewInput("door_switch", p, "sideways", false, nil)
	if err := in.Open(t.Context()); err == nil {
		t.Fatal("Open(pull sideways) = nil, want an error")
	}
	if len(p.ops) != 0 {
		t.Errorf("Open(pull sideways) did %q, want nothing", p.ops)
	}
}

// readErrPin is a pin that says why a read failed, as chardev.Line does.
type readErrPin struct {
	fakePin
	err error
}

func (p *readErrPin) ReadLevel() (pgpio.Level, error) { return p.level, p.err }

// A read that fails reaches the caller, naming the device, rather than
// reading as low (periph's Read cannot say it failed): Open drives nothing.
func TestReadErrorsReachTheCaller(t *testing.T) {
	p := &readErrPin{err: errors.New("get value: EBADF")}
	o := NewOutput("heater_relay", p, false, nil)
	if err := o.Open(t.Context()); err == nil || !strings.Contains(err.Error(), "gpio heater_relay (GPIO17): open: read: get value: EBADF") {
		t.Errorf("Open() = %v", err)
	}
	if len(p.ops) != 0 {
		t.Errorf("Open() after a failed read did %q", p.ops)
	}
	if _, err := o.Get(t.Context()); err == nil {
		t.Error("Get() hid the read error")
	}
	if _, err := NewInput("door", p, "", false, nil).Get(t.Context()); err == nil {
		t.Error("Input.Get() hid the read error")
	}
	p.err = nil
	p.level = pgpio.High
	if on, err := o.Get(t.Context()); err != nil || !on {
		t.Errorf("Get() = %t, %v", on, err)
	}
}
