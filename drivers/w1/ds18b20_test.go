package w1

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/promcp/promcp-device/drivers"
	"github.com/promcp/promcp-device/drivers/sysfs"
)

// Frames as a Raspberry Pi's w1_slave shows them.
func TestParseW1SlaveKnownFrames(t *testing.T) {
	cases := []struct {
		name, file string
		want       float64
		err        error
	}{
		{"23.125", "72 01 4b 46 7f ff 0e 10 57 : crc=57 YES\n72 01 4b 46 7f ff 0e 10 57 t=23125\n", 23.125, nil},
		// Datasheet Table 1: -10.125 °C is 0xFF5E, -25.0625 °C 0xFE6F.
		{"-10.125", string(W1Slave([]byte{0x5e, 0xff, 0x4b, 0x46, 0x7f, 0xff, 0x02, 0x10, CRC8([]byte{0x5e, 0xff, 0x4b, 0x46, 0x7f, 0xff, 0x02, 0x10})})), -10.125, nil},
		{"-25.0625", string(W1Slave(Scratchpad(-25.0625))), -25.0625, nil},
		{"+125", string(W1Slave(Scratchpad(125))), 125, nil},
		// 9-bit resolution (config 0x1f): the low three bits are undefined.
		{"9 bit", string(W1Slave(fix([]byte{0x97, 0x01, 0x4b, 0x46, 0x1f, 0xff, 0x09, 0x10, 0}))), 25.0, nil},
		{"power-on", "50 05 4b 46 7f ff 0c 10 1c : crc=1c YES\n50 05 4b 46 7f ff 0c 10 1c t=85000\n", 0, ErrPowerOn},
		{"kernel crc NO", "72 01 4b 46 7f ff 0e 10 58 : crc=58 NO\n72 01 4b 46 7f ff 0e 10 58 t=23125\n", 0, drivers.ErrCRC},
		{"kernel YES but bad crc", "72 01 4b 46 7f ff 0e 10 58 : crc=58 YES\n72 01 4b 46 7f ff 0e 10 58 t=23125\n", 0, drivers.ErrCRC},
		{"all zero", "00 00 00 00 00 00 00 00 00 : crc=00 YES\n00 00 00 00 00 00 00 00 00 t=0\n", 0, drivers.ErrCRC},
		{"truncated", "72 01 4b 46 7f ff 0e 10 57 : crc=57 YES\n", 0, errAny},
		{"garbage", "zz 01 4b 46 7f ff 0e 10 57 : crc=57 YES\nx t=1\n", 0, errAny},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := ParseW1Slave([]byte(c.file))
			switch {
			case c.err == nil && err != nil:
				t.Fatalf("error %v", err)
			case c.err == errAny && err == nil, c.err != nil && c.err != errAny && !errors.Is(err, c.err):
				t.Fatalf("error %v, want %v", err, c.err)
			case c.err == nil && s.Celsius != c.want:
				t.Fatalf("%g °C, want %g", s.Celsius, c.want)
			}
		})
	}
}

var errAny = errors.New("any error")

func fix(sp []byte) []byte { sp[8] = CRC8(sp[:8]); return sp }

func TestCRC8KnownFrames(t *testing.T) {
	// The kernel's crc= of real frames.
	for _, c := range []struct {
		sp   []byte
		want byte
	}{{[]byte{0x72, 0x01, 0x4b, 0x46, 0x7f, 0xff, 0x0e, 0x10}, 0x57}, {[]byte{0x50, 0x05, 0x4b, 0x46, 0x7f, 0xff, 0x0c, 0x10}, 0x1c}} {
		if got := CRC8(c.sp); got != c.want {
			t.Errorf("CRC8(% x) = %02x, want %02x", c.sp, got, c.want)
		}
	}
	if got := W1Slave(Scratchpad(23.125)); string(got[:39]) != "72 01 4b 46 7f ff 0e 10 57 : crc=57 YES" {
		t.Errorf("simulated frame %q", got)
	}
}

// The driver against real files, as the kernel lays them out.
func TestSenseFromFiles(t *testing.T) {
	dir := t.TempDir()
	rom := "28-0316a2795aff"
	write := func(name, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(dir, rom), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, rom, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d := NewDS18B20(sysfs.Dir(dir), rom, 2)
	ctx := context.Background()
	if _, err := d.Sense(ctx); !errors.Is(err, drivers.ErrUnavailable) {
		t.Fatalf("missing sensor: %v, want unavailable", err)
	}
	write("w1_slave", string(W1Slave(Scratchpad(21.5))))
	if s, err := d.Sense(ctx); err != nil || s.Celsius != 21.5 || len(s.Scratchpad) != 9 {
		t.Fatalf("Sense = %+v, %v", s, err)
	}
	write("w1_slave", "72 01 4b 46 7f ff 0e 10 58 : crc=58 NO\n72 01 4b 46 7f ff 0e 10 58 t=23125\n")
	if _, err := d.Sense(ctx); !errors.Is(err, drivers.ErrCRC) {
		t.Fatalf("crc NO: %v", err)
	}
	// Linux 6.1's w1_therm, after its own retries, found by scripts/hil.
	write("w1_slave", "")
	if _, err := d.Sense(ctx); !errors.Is(err, drivers.ErrCRC) || !strings.Contains(err.Error(), "w1_slave is empty") {
		t.Fatalf("empty w1_slave: %v, want a CRC failure", err)
	}
	if err := os.Remove(filepath.Join(dir, rom, "w1_slave")); err != nil {
		t.Fatal(err)
	}
	write("temperature", "19875\n")
	if s, err := d.Sense(ctx); err != nil || s.Celsius != 19.875 {
		t.Fatalf("temperature file: %+v, %v", s, err)
	}
}

// A CRC failure is read again: a retry that succeeds gives the value.
func TestSenseRetriesCRC(t *testing.T) {
	fs := &flaky{bad: 2, good: W1Slave(Scratchpad(4.25))}
	if s, err := NewDS18B20(fs, "28-000000000001", 2).Sense(context.Background()); err != nil || s.Celsius != 4.25 || fs.reads != 3 {
		t.Fatalf("Sense = %+v, %v after %d reads", s, err, fs.reads)
	}
	fs = &flaky{bad: 3, good: W1Slave(Scratchpad(4.25))}
	if _, err := NewDS18B20(fs, "28-000000000001", 2).Sense(context.Background()); !errors.Is(err, drivers.ErrCRC) || fs.reads != 3 {
		t.Fatalf("err %v after %d reads", err, fs.reads)
	}
}

type flaky struct {
	bad, reads int
	good       []byte
}

func (f *flaky) ReadFile(_ context.Context, _ string) ([]byte, error) {
	f.reads++
	if f.reads <= f.bad {
		return []byte("ff ff ff ff ff ff ff ff ff : crc=ff NO\nff ff ff ff ff ff ff ff ff t=-62\n"), nil
	}
	return f.good, nil
}

func (f *flaky) WriteFile(context.Context, string, []byte) error { return errors.ErrUnsupported }
