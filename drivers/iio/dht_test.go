package iio

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/promcp/promcp-device/drivers"
)

// The AM2302 datasheet's worked examples: 0x028C 0x015F 0xEE is 65.2 %RH
// and 35.1 °C; a temperature word 0x8065 is -10.1 °C.
func TestDHT22DatasheetFrames(t *testing.T) {
	c, rh, err := DHT22Decode([5]byte{0x02, 0x8C, 0x01, 0x5F, 0xEE})
	if err != nil || c != 35100 || rh != 65200 {
		t.Fatalf("got %d m°C, %d m%%, %v; want 35100, 65200", c, rh, err)
	}
	c, _, err = DHT22Decode([5]byte{0x02, 0x8C, 0x80, 0x65, byte(0x02 + 0x8C + 0x80 + 0x65 - 256)})
	if err != nil || c != -10100 {
		t.Fatalf("negative: %d, %v; want -10100", c, err)
	}
	if _, _, err := DHT22Decode([5]byte{0x02, 0x8C, 0x01, 0x5F, 0xEF}); !errors.Is(err, syscall.EIO) {
		t.Fatalf("bad checksum: %v, want EIO as the kernel says", err)
	}
	for _, v := range [][2]float64{{35.1, 65.2}, {-10.1, 0}, {22, 48.5}, {-0.4, 100}} {
		f := DHT22Encode(v[0], v[1])
		c, rh, err := DHT22Decode(f)
		if err != nil || c != int64(v[0]*1000+sign(v[0])*0.5) || rh != int64(v[1]*1000+0.5) {
			t.Errorf("encode %v: % x → %d, %d, %v", v, f, c, rh, err)
		}
	}
	if f := DHT22Encode(35.1, 65.2); f != [5]byte{0x02, 0x8C, 0x01, 0x5F, 0xEE} {
		t.Errorf("encode 35.1 °C 65.2 %%: % x, want the datasheet's 02 8c 01 5f ee", f)
	}
}

func sign(v float64) float64 {
	if v < 0 {
		return -1
	}
	return 1
}

// files is an FS of fixed contents or errors.
type files map[string]any

func (f files) ReadFile(_ context.Context, name string) ([]byte, error) {
	switch v := f[name].(type) {
	case string:
		return []byte(v), nil
	case error:
		return nil, v
	}
	return nil, fmt.Errorf("open %s: %w", name, syscall.ENOENT)
}

func (f files) WriteFile(context.Context, string, []byte) error { return syscall.EACCES }

func TestDHTReadsTheKernelFiles(t *testing.T) {
	fs := files{"iio:device0/in_temp_input": "35100\n", "iio:device0/in_humidityrelative_input": "65200\n"}
	s, err := NewDHT(fs, "iio:device0").Sense(context.Background())
	if err != nil || s.Celsius != 35.1 || s.Humidity != 65.2 || string(s.Raw) != "35100\n65200\n" {
		t.Fatalf("%+v, %v", s, err)
	}
}

// The kernel's EIO and ETIMEDOUT are errors of their class with a plain
// message, never a reading.
func TestDHTKernelErrors(t *testing.T) {
	for _, tc := range []struct {
		err   error
		class error
		text  string
	}{
		{&fsErr{syscall.EIO}, drivers.ErrCRC, "dht read iio:device0/in_temp_input: bad frame from the sensor (EIO: checksum mismatch or missed edges): checksum mismatch (read: input/output error)"},
		{&fsErr{syscall.ETIMEDOUT}, drivers.ErrTimeout, "dht read iio:device0/in_temp_input: timeout: read: connection timed out"},
	} {
		fs := files{"iio:device0/in_temp_input": tc.err, "iio:device0/in_humidityrelative_input": "65200\n"}
		s, err := NewDHT(fs, "iio:device0").Sense(context.Background())
		if !errors.Is(err, tc.class) || s.Raw != nil || s.Celsius != 0 {
			t.Errorf("%v: %+v, %v; want a %v error and no reading", tc.err, s, err, tc.class)
		}
		if err != nil && err.Error() != tc.text {
			t.Errorf("message %q\nwant    %q", err, tc.text)
		}
	}
	if _, err := NewDHT(files{}, "iio:device3").Sense(context.Background()); err == nil {
		t.Fatal("a missing device read")
	}
	fs := files{"iio:device0/in_temp_input": "n/a\n"}
	if _, err := NewDHT(fs, "iio:device0").Sense(context.Background()); !errors.Is(err, drivers.ErrDeviceError) {
		t.Fatalf("garbage: %v", err)
	}
}

// fsErr is how os.ReadFile reports an errno: a *PathError-like wrapper.
type fsErr struct{ errno syscall.Errno }

func (e *fsErr) Error() string { return "read: " + e.errno.Error() }
func (e *fsErr) Unwrap() error { return e.errno }
