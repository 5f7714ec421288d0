package i2c

import (
	"context"
	"fmt"
	"math"
	"time"

	"periph.io/x/conn/v3/physic"

	"github.com/promcp/promcp-device/drivers"
)

// SHT3x commands (datasheet section 4), as sent on the wire, MSB first.
var (
	cmdMeasureHigh = []byte{0x24, 0x00} // single shot, high repeatability, no clock stretching
	cmdReadStatus  = []byte{0xF3, 0x2D}
	cmdSoftReset   = []byte{0x30, 0xA2}
)

// SHT3x timings (datasheet table 4 and section 4.9), maxima.
const (
	// SHT3xMeasureTime is the longest a high-repeatability measurement takes.
	SHT3xMeasureTime = 15 * time.Millisecond
	// SHT3xResetTime is the longest a soft reset takes.
	SHT3xResetTime = 1500 * time.Microsecond
)

// Sample is one SHT3x measurement.
type Sample struct {
	Temperature physic.Temperature
	Humidity    physic.RelativeHumidity
	// Raw is the measurement as the sensor sent it: the temperature word,
	// its CRC, the humidity word and its CRC.
	Raw [6]byte
}

// SleepFunc waits for d or until ctx is done, whichever comes first, and
// returns ctx's error in the latter case.
type SleepFunc func(ctx context.Context, d time.Duration) error

// SHT3xOption configures an [SHT3x].
type SHT3xOption func(*SHT3x)

// WithSleep makes the driver wait with sleep instead of a timer, for
// example to advance a simulator's manual clock, or not to wait in tests.
func WithSleep(sleep SleepFunc) SHT3xOption {
	return func(d *SHT3x) { d.sleep = sleep }
}

// SHT3x is a Sensirion SHT30, SHT31 or SHT35 temperature and humidity sensor,
// used in single-shot mode with high repeatability and clock stretching
// disabled.
//
// The zero value is not usable; create one with [NewSHT3x]. An SHT3x is safe
// for concurrent use: its operations run one at a time.
type SHT3x struct {
	bus   *Bus
	addr  uint16
	sleep SleepFunc
	// turn serializes operations: a second command during a measurement
	// would be NACKed by the chip.
	turn drivers.Turn
}

// NewSHT3x returns the sensor at addr (0x44, or 0x45 with ADDR high) on bus.
// It does no I/O.
func NewSHT3x(bus *Bus, addr uint16, opts ...SHT3xOption) *SHT3x {
	d := &SHT3x{bus: bus, addr: addr, sleep: Sleep, turn: drivers.NewTurn()}
	for _, o := range opts {
		o(d)
	}
	return d
}

// Sense triggers a measurement, waits [SHT3xMeasureTime] and reads it.
// Temperature ranges from -45 to 130 °C and humidity from 0 to 100 %RH.
//
// Errors wrap drivers.ErrNACK (sensor absent or busy), drivers.ErrTimeout or
// drivers.ErrCRC, or ctx's error.
func (d *SHT3x) Sense(ctx context.Context) (Sample, error) {
	const op = "measure"
	release, err := d.lock(ctx, op)
	if err != nil {
		return Sample{}, err
	}
	defer release()
	if err := d.bus.Tx(ctx, d.addr, cmdMeasureHigh, nil); err != nil {
		return Sample{}, fmt.Errorf("sht3x %s: %w", op, err)
	}
	if err := d.sleep(ctx, SHT3xMeasureTime); err != nil {
		return Sample{}, d.errorf(op, "waiting for the measurement: %w", drivers.Classify(err))
	}
	var b [6]byte
	if err := d.bus.Tx(ctx, d.addr, nil, b[:]); err != nil {
		return Sample{}, fmt.Errorf("sht3x %s: %w", op, err)
	}
	st, err := d.word(op, "temperature", b[0:3])
	if err != nil {
		return Sample{}, err
	}
	srh, err := d.word(op, "humidity", b[3:6])
	if err != nil {
		return Sample{}, err
	}
	return Sample{Temperature: Temperature(st), Humidity: Humidity(srh), Raw: b}, nil
}

// Status is the SHT3x status register (datasheet table 17).
type Status uint16

// Status bits.
const (
	StatusAlertPending   Status = 1 << 15 // at least one pending alert
	StatusHeaterOn       Status = 1 << 13 // the internal heater is on
	StatusRHAlert        Status = 1 << 11 // humidity tracking alert
	StatusTAlert         Status = 1 << 10 // temperature tracking alert
	StatusReset          Status = 1 << 4  // reset detected since the last clear
	StatusCommandFailed  Status = 1 << 1  // the last command was not processed
	StatusWriteCRCFailed Status = 1 << 0  // the last write's checksum was wrong
)

// ReadStatus reads the status register (command 0xF32D).
func (d *SHT3x) ReadStatus(ctx context.Context) (Status, error) {
	const op = "read status"
	release, err := d.lock(ctx, op)
	if err != nil {
		return 0, err
	}
	defer release()
	if err := d.bus.Tx(ctx, d.addr, cmdReadStatus, nil); err != nil {
		return 0, fmt.Errorf("sht3x %s: %w", op, err)
	}
	var b [3]byte
	if err := d.bus.Tx(ctx, d.addr, nil, b[:]); err != nil {
		return 0, fmt.Errorf("sht3x %s: %w", op, err)
	}
	s, err := d.word(op, "status", b[:])
	return Status(s), err
}

// SoftReset resets the sensor (command 0x30A2) and waits [SHT3xResetTime]
// for it to come back.
func (d *SHT3x) SoftReset(ctx context.Context) error {
	const op = "soft reset"
	release, err := d.lock(ctx, op)
	if err != nil {
		return err
	}
	defer release()
	if err := d.bus.Tx(ctx, d.addr, cmdSoftReset, nil); err != nil {
		return fmt.Errorf("sht3x %s: %w", op, err)
	}
	if err := d.sleep(ctx, SHT3xResetTime); err != nil {
		return d.errorf(op, "waiting for the reset: %w", drivers.Classify(err))
	}
	return nil
}

// lock waits for the sensor's turn for op.
func (d *SHT3x) lock(ctx context.Context, op string) (release func(), err error) {
	release, err = d.turn.Wait(ctx)
	if err != nil {
		return nil, d.errorf(op, "waiting for the sensor: %w", err)
	}
	return release, nil
}

// word checks and returns a big-endian word followed by its CRC.
func (d *SHT3x) word(op, what string, b []byte) (uint16, error) {
	if got, want := b[2], CRC8(b[:2]); got != want {
		return 0, d.errorf(op, "%s: %w: crc 0x%02x, want 0x%02x", what, drivers.ErrCRC, got, want)
	}
	return uint16(b[0])<<8 | uint16(b[1]), nil
}

// errorf formats an error as the bus does, prefixed with the operation:
// "sht3x measure: i2c 1 addr 0x44: ...".
func (d *SHT3x) errorf(op, format string, args ...any) error {
	return fmt.Errorf("sht3x %s: i2c %s addr %s: "+format, append([]any{op, d.bus.Name(), addrString(d.addr)}, args...)...)
}

// CRC8 is the Sensirion checksum: CRC-8 with polynomial 0x31, initial value
// 0xFF, no reflection and no final XOR. CRC8([]byte{0xBE, 0xEF}) is 0x92.
func CRC8(b []byte) byte {
	crc := byte(0xFF)
	for _, x := range b {
		crc ^= x
		for range 8 {
			if crc&0x80 != 0 {
				crc = crc<<1 ^ 0x31
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// Celsius converts a raw SHT3x temperature to °C: -45 + 175*raw/65535.
func Celsius(raw uint16) float64 {
	return -45 + 175*float64(raw)/65535
}

// Percent converts a raw SHT3x humidity to %RH: 100*raw/65535.
func Percent(raw uint16) float64 {
	return 100 * float64(raw) / 65535
}

// Temperature converts a raw SHT3x temperature to a physic.Temperature,
// rounded to the nearest nanokelvin.
func Temperature(raw uint16) physic.Temperature {
	// -45 °C + 175 K * raw / 65535, in integer nanokelvin.
	nk := int64(raw) * int64(175*physic.Kelvin)
	return physic.ZeroCelsius - 45*physic.Kelvin + physic.Temperature((nk+65535/2)/65535)
}

// Humidity converts a raw SHT3x humidity to a physic.RelativeHumidity,
// rounded to the nearest unit (a tenth of a micro-percent).
func Humidity(raw uint16) physic.RelativeHumidity {
	v := int64(raw) * int64(100*physic.PercentRH)
	return physic.RelativeHumidity((v + 65535/2) / 65535)
}

// RawTemperature is the inverse of [Celsius]: the raw word that encodes c,
// rounded and clamped to -45..130 °C.
func RawTemperature(c float64) uint16 {
	return rawWord((c + 45) * 65535 / 175)
}

// RawHumidity is the inverse of [Percent]: the raw word that encodes p,
// rounded and clamped to 0..100 %RH.
func RawHumidity(p float64) uint16 {
	return rawWord(p * 65535 / 100)
}

func rawWord(v float64) uint16 {
	switch {
	case math.IsNaN(v) || v <= 0:
		return 0
	case v >= 65535:
		return 65535
	}
	return uint16(math.Round(v))
}

// Sleep waits for d or until ctx is done; it is the [SHT3x]'s default
// [SleepFunc].
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
