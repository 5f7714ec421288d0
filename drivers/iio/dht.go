// Package iio reads sensors through the kernel's Industrial I/O drivers,
// whose attribute files live under /sys/bus/iio/devices: the DHT11/DHT22
// through the dht11 driver, which times the single-wire protocol in the
// kernel as Go on a Pi cannot.
package iio

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"

	"github.com/promcp/promcp-device/drivers"
	"github.com/promcp/promcp-device/drivers/sysfs"
)

// The dht11 driver's attribute files, in thousandths: milli-°C and
// milli-%RH.
const (
	TempFile     = "in_temp_input"
	HumidityFile = "in_humidityrelative_input"
)

// ErrBadFrame is wrapped when the kernel could not decode the sensor's
// frame (EIO: a checksum mismatch or missed edges, common on a DHT22: the
// next read usually succeeds). It wraps drivers.ErrCRC.
var ErrBadFrame = fmt.Errorf("bad frame from the sensor (EIO: checksum mismatch or missed edges): %w", drivers.ErrCRC)

// DHTSample is one reading of a DHT22.
type DHTSample struct {
	Celsius  float64
	Humidity float64
	// Raw is the two files as read: temperature, then humidity.
	Raw []byte
}

// DHT is a DHT11 or DHT22 behind the kernel's dht11 driver, at IIO device
// dev ("iio:device0") of fs (the IIO devices directory).
type DHT struct {
	fs  sysfs.FS
	dev string
}

// NewDHT returns the sensor; it does no I/O.
func NewDHT(fs sysfs.FS, dev string) *DHT { return &DHT{fs: fs, dev: dev} }

// Sense reads the temperature and humidity files. The kernel reads the
// sensor when its cached reading is older than 2 s. Errors: ErrBadFrame
// for EIO, drivers.ErrTimeout for ETIMEDOUT (the sensor never answered),
// drivers.ErrUnavailable for a missing device; never a value with an
// error.
func (d *DHT) Sense(ctx context.Context) (DHTSample, error) {
	t, rawT, err := d.read(ctx, TempFile)
	if err != nil {
		return DHTSample{}, err
	}
	h, rawH, err := d.read(ctx, HumidityFile)
	if err != nil {
		return DHTSample{}, err
	}
	return DHTSample{Celsius: float64(t) / 1000, Humidity: float64(h) / 1000, Raw: append(rawT, rawH...)}, nil
}

func (d *DHT) read(ctx context.Context, file string) (int64, []byte, error) {
	name := d.dev + "/" + file
	b, err := d.fs.ReadFile(ctx, name)
	if err != nil {
		if errors.Is(err, syscall.EIO) {
			err = fmt.Errorf("%w (%w)", ErrBadFrame, err)
		}
		return 0, nil, fmt.Errorf("dht read %s: %w", name, drivers.Classify(err))
	}
	v, perr := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if perr != nil {
		return 0, nil, fmt.Errorf("dht read %s: %q is not a number: %w", name, b, drivers.ErrDeviceError)
	}
	return v, b, nil
}

// DHT22Decode decodes a DHT22's 40-bit frame as the kernel's dht11 driver
// does (AM2302 datasheet, section 7): humidity and temperature in tenths,
// the temperature's top bit its sign, the fifth byte the low byte of the
// sum of the first four. It returns the files' values: milli-°C and
// milli-%RH.
func DHT22Decode(f [5]byte) (milliC, milliRH int64, err error) {
	if f[0]+f[1]+f[2]+f[3] != f[4] {
		return 0, 0, fmt.Errorf("checksum 0x%02x, want 0x%02x: %w", f[4], f[0]+f[1]+f[2]+f[3], syscall.EIO)
	}
	rh := int64(f[0])<<8 | int64(f[1])
	t := int64(f[2]&0x7F)<<8 | int64(f[3])
	if f[2]&0x80 != 0 {
		t = -t
	}
	return t * 100, rh * 100, nil
}

// DHT22Encode is the frame a DHT22 sends for celsius and humidity, in
// tenths, rounded and clamped to what the frame holds (±3276.7 °C,
// 0..6553.5 %): a failing sensor sends values past its range with a good
// checksum.
func DHT22Encode(celsius, humidity float64) [5]byte {
	t := int64(roundTenths(min(max(celsius, -3276.7), 3276.7)))
	rh := int64(roundTenths(min(max(humidity, 0), 6553.5)))
	var f [5]byte
	f[0], f[1] = byte(rh>>8), byte(rh)
	at := t
	if t < 0 {
		at = -t
	}
	f[2], f[3] = byte(at>>8)&0x7F, byte(at)
	if t < 0 {
		f[2] |= 0x80
	}
	f[4] = f[0] + f[1] + f[2] + f[3]
	return f
}

func roundTenths(v float64) float64 {
	if v < 0 {
		return -float64(int64(-v*10 + 0.5))
	}
	return float64(int64(v*10 + 0.5))
}
