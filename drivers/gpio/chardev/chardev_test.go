package chardev

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"unsafe"

	pgpio "periph.io/x/conn/v3/gpio"
)

// fakeChip is one GPIO line as the kernel keeps it: its direction, bias and
// the value it drives (an output) or sees (an input, from pull). It records
// the ioctls made.
type fakeChip struct {
	dir    string // "in" or "out"
	bias   string
	driven bool // the output value
	pulled bool // what an input sees
	ops    []string
	fail   error // returned by every ioctl when set
}

const fakeChipFD, fakeReqFD = 3, 4

func (c *fakeChip) open(path string) (int, error) {
	if path != "/dev/gpiochip0" {
		return -1, &os.PathError{Op: "open", Path: path, Err: os.ErrNotExist}
	}
	return fakeChipFD, nil
}

func (c *fakeChip) close(int) error { return nil }

func (c *fakeChip) file(int, string) (*os.File, error) { return nil, errors.ErrUnsupported }

func (c *fakeChip) apply(cfg lineConfig) {
	switch {
	case cfg.flags&flagOutput != 0:
		c.dir, c.bias = "out", ""
		c.driven = cfg.numAttrs == 1 && cfg.attrs[0].attr.id == attrIDValues && cfg.attrs[0].attr.value&1 == 1
	case cfg.flags&flagInput != 0:
		c.dir = "in"
		switch {
		case cfg.flags&flagBiasPullUp != 0:
			c.bias, c.pulled = "pull-up", true
		case cfg.flags&flagBiasPullDown != 0:
			c.bias, c.pulled = "pull-down", false
		}
	}
}

func (c *fakeChip) ioctl(fd int, req uintptr, arg any) error {
	if c.fail != nil {
		return c.fail
	}
	switch req {
	case ioctlGetLine:
		r := arg.(*lineRequest)
		c.ops = append(c.ops, "request")
		if fd != fakeChipFD || r.numLines != 1 || r.offsets[0] != 17 {
			return errors.New("bad request")
		}
		c.apply(r.config)
		r.fd = fakeReqFD
	case ioctlSetConfig:
		c.ops = append(c.ops, "config")
		c.apply(*arg.(*lineConfig))
	case ioctlSetValues:
		c.ops = append(c.ops, "set")
		if c.dir != "out" {
			return errors.New("EPERM")
		}
		c.driven = arg.(*lineValues).bits&1 == 1
	case ioctlGetValues:
		c.ops = append(c.ops, "get")
		v := arg.(*lineValues)
		v.bits = 0
		if (c.dir == "out" && c.driven) || (c.dir == "in" && c.pulled) {
			v.bits = 1
		}
	default:
		return errors.New("unknown ioctl")
	}
	if fd != fakeChipFD && fd != fakeReqFD {
		return errors.New("EBADF")
	}
	return nil
}

// TestUAPILayout checks the structures and ioctl numbers against
// include/uapi/linux/gpio.h (the same on every architecture).
func TestUAPILayout(t *testing.T) {
	sizes := map[string][2]uintptr{
		"gpio_v2_line_request": {unsafe.Sizeof(lineRequest{}), 592},
		"gpio_v2_line_config":  {unsafe.Sizeof(lineConfig{}), 272},
		"gpio_v2_line_values":  {unsafe.Sizeof(lineValues{}), 16},
	}
	for name, s := range sizes {
		if s[0] != s[1] {
			t.Errorf("sizeof(%s) = %d, want %d", name, s[0], s[1])
		}
	}
	if off := unsafe.Offsetof(lineRequest{}.fd); off != 588 {
		t.Errorf("gpio_v2_line_request.fd at %d, want 588", off)
	}
	ioctls := map[string][2]uintptr{
		"GPIO_V2_GET_LINE_IOCTL":        {ioctlGetLine, 0xC250B407},
		"GPIO_V2_LINE_SET_CONFIG_IOCTL": {ioctlSetConfig, 0xC110B40D},
		"GPIO_V2_LINE_GET_VALUES_IOCTL": {ioctlGetValues, 0xC010B40E},
		"GPIO_V2_LINE_SET_VALUES_IOCTL": {ioctlSetValues, 0xC010B40F},
	}
	for name, n := range ioctls {
		if n[0] != n[1] {
			t.Errorf("%s = %#x, want %#x", name, n[0], n[1])
		}
	}
}

// TestReadOutputKeepsItAnOutput is the relay read-back bug: reading an
// output must return the value it drives and leave it an output, with no
// new request or configuration (periph's gpioioctl re-requested it as a
// pulled-up input, so it read high and stopped driving).
func TestReadOutputKeepsItAnOutput(t *testing.T) {
	chip := &fakeChip{}
	l := newLine("/dev/gpiochip0", 17, "GPIO17", "test", nil, chip)
	for _, level := range []pgpio.Level{pgpio.Low, pgpio.High, pgpio.Low} {
		if err := l.Out(level); err != nil {
			t.Fatal(err)
		}
		got, err := l.ReadLevel()
		if err != nil {
			t.Fatal(err)
		}
		if got != level || l.Read() != level {
			t.Errorf("after Out(%s), read %s", level, got)
		}
		if chip.dir != "out" || chip.bias != "" {
			t.Errorf("after reading, the line is %q %q, want an output", chip.dir, chip.bias)
		}
	}
	want := []string{"request", "get", "get", "set", "get", "get", "set", "get", "get"}
	if !slices.Equal(chip.ops, want) {
		t.Errorf("ioctls %v, want %v", chip.ops, want)
	}
}

// TestFirstReadRequestsAsIs: reading a line before anything configured it
// (Output.Open reads first) requests it without a direction, so a relay
// that is on stays on and driven.
func TestFirstReadRequestsAsIs(t *testing.T) {
	chip := &fakeChip{dir: "out", driven: true}
	l := newLine("/dev/gpiochip0", 17, "GPIO17", "test", nil, chip)
	if l.Read() != pgpio.High {
		t.Error("the first read of a driven-high output is not high")
	}
	if err := l.Out(l.Read()); err != nil {
		t.Fatal(err)
	}
	if chip.dir != "out" || !chip.driven {
		t.Errorf("after read and Out(read), the line is %s driving %t", chip.dir, chip.driven)
	}
	if want := []string{"request", "get", "get", "config"}; !slices.Equal(chip.ops, want) {
		t.Errorf("ioctls %v, want %v", chip.ops, want)
	}
}

func TestInputPulls(t *testing.T) {
	chip := &fakeChip{}
	l := newLine("/dev/gpiochip0", 17, "GPIO17", "test", nil, chip)
	if err := l.In(pgpio.PullUp, pgpio.NoEdge); err != nil {
		t.Fatal(err)
	}
	if l.Read() != pgpio.High || chip.bias != "pull-up" || l.Pull() != pgpio.PullUp {
		t.Errorf("pulled up input: bias %q, pull %s", chip.bias, l.Pull())
	}
	if err := l.In(pgpio.PullDown, pgpio.BothEdges); err != nil {
		t.Fatal(err)
	}
	if l.Read() != pgpio.Low || chip.bias != "pull-down" {
		t.Errorf("pulled down input: bias %q", chip.bias)
	}
	if err := l.In(pgpio.Pull(99), pgpio.NoEdge); err == nil {
		t.Error("an unknown pull was accepted")
	}
}

func TestErrorsNameTheLine(t *testing.T) {
	l := newLine("/dev/gpiochip9", 17, "GPIO17", "test", nil, &fakeChip{})
	if _, err := l.ReadLevel(); err == nil || !strings.Contains(err.Error(), "GPIO17") || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing chip: %v", err)
	}
	if l.Read() != pgpio.Low {
		t.Error("an unreadable line is not low")
	}
	chip := &fakeChip{fail: errors.New("EBUSY")}
	l = newLine("/dev/gpiochip0", 17, "GPIO17", "test", nil, chip)
	if err := l.Out(pgpio.High); err == nil || !strings.Contains(err.Error(), "request line 17 of /dev/gpiochip0") {
		t.Errorf("busy line: %v", err)
	}
	if l.WaitForEdge(0) {
		t.Error("an edge came on a line without edge detection")
	}
}
