package i2c

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/promcp/promcp-device/drivers"
)

// SCD4x commands (Sensirion SCD4x datasheet, section 3.5), 16 bits, MSB
// first.
const (
	SCD4xStartPeriodic   = 0x21B1
	SCD4xReadMeasurement = 0xEC05
	SCD4xDataReady       = 0xE4B8
	SCD4xStopPeriodic    = 0x3F86
)

// SCD4x timings: a command's execution time before its response can be
// read, and the signal update interval of periodic measurement.
const (
	SCD4xCommandTime = time.Millisecond
	SCD4xPeriod      = 5 * time.Second
)

// ErrSCD4xNotReady is wrapped when the sensor has no measurement yet: the
// first comes SCD4xPeriod after periodic measurement starts.
var ErrSCD4xNotReady = errors.New("no measurement ready yet (the first comes 5 s after start)")

// CO2Reading is one SCD4x measurement.
type CO2Reading struct {
	PPM      float64
	Celsius  float64
	Humidity float64
	// Raw is the CO₂, temperature and humidity words, each with its CRC.
	Raw [9]byte
}

// SCD4xConvert converts the three words of read_measurement: CO₂ in ppm as
// is, T = -45 + 175·t/65535 °C, RH = 100·rh/65535 %.
func SCD4xConvert(co2, t, rh uint16) (ppm, celsius, humidity float64) {
	return float64(co2), -45 + 175*float64(t)/65535, 100 * float64(rh) / 65535
}

// SCD4x is a Sensirion SCD40 or SCD41 CO₂ sensor in periodic measurement.
// It is safe for concurrent use.
type SCD4x struct {
	bus   *Bus
	addr  uint16
	sleep SleepFunc
	turn  drivers.Turn
	// Guarded by turn: started says periodic measurement was started;
	// last is the latest measurement read (valid with have).
	started bool
	last    CO2Reading
	have    bool
}

// NewSCD4x returns the sensor at addr (0x62) on bus; it waits with sleep.
// It does no I/O.
func NewSCD4x(bus *Bus, addr uint16, sleep SleepFunc) *SCD4x {
	return &SCD4x{bus: bus, addr: addr, sleep: sleep, turn: drivers.NewTurn()}
}

// Sense returns the latest measurement. The first call starts periodic
// measurement; a sensor that refuses the start (it is already measuring,
// after a restart of the gateway) is asked for its data all the same. The
// first measurement comes one [SCD4xPeriod] after the start: until then
// Sense fails with ErrSCD4xNotReady rather than hold the bus for 5 s. A
// new measurement comes every 5 s: between two, Sense returns the last
// one read. Errors wrap
// drivers.ErrNACK, drivers.ErrTimeout, drivers.ErrCRC, ErrSCD4xNotReady or
// ctx's error.
func (d *SCD4x) Sense(ctx context.Context) (CO2Reading, error) {
	release, err := d.turn.Wait(ctx)
	if err != nil {
		return CO2Reading{}, fmt.Errorf("scd4x read: %w", err)
	}
	defer release()
	if !d.started {
		// A refusal is not an error yet: a sensor already measuring
		// refuses the start and answers data ready.
		_ = d.command(ctx, SCD4xStartPeriodic, nil)
		d.started = true
	}
	var ready [3]byte
	if err := d.command(ctx, SCD4xDataReady, ready[:]); err != nil {
		d.started = false
		return CO2Reading{}, fmt.Errorf("scd4x data ready: %w", err)
	}
	w, err := sensirionWords(ready[:], "data ready status")
	if err != nil {
		return CO2Reading{}, d.errorf("data ready", err)
	}
	if w[0]&0x07FF == 0 {
		if d.have {
			return d.last, nil
		}
		return CO2Reading{}, d.errorf("read", ErrSCD4xNotReady)
	}
	var r CO2Reading
	if err := d.command(ctx, SCD4xReadMeasurement, r.Raw[:]); err != nil {
		return CO2Reading{}, fmt.Errorf("scd4x read measurement: %w", err)
	}
	ws, err := sensirionWords(r.Raw[:], "co2", "temperature", "humidity")
	if err != nil {
		return CO2Reading{}, d.errorf("read measurement", err)
	}
	r.PPM, r.Celsius, r.Humidity = SCD4xConvert(ws[0], ws[1], ws[2])
	d.last, d.have = r, true
	return r, nil
}

// command sends cmd and, for a command with a response, waits
// [SCD4xCommandTime] and reads it into r.
func (d *SCD4x) command(ctx context.Context, cmd uint16, r []byte) error {
	if err := d.bus.Tx(ctx, d.addr, []byte{byte(cmd >> 8), byte(cmd)}, nil); err != nil {
		return err
	}
	if len(r) == 0 {
		return nil
	}
	if err := d.sleep(ctx, SCD4xCommandTime); err != nil {
		return drivers.Classify(err)
	}
	return d.bus.Tx(ctx, d.addr, nil, r)
}

func (d *SCD4x) errorf(op string, err error) error {
	return fmt.Errorf("scd4x %s: i2c %s addr %s: %w", op, d.bus.Name(), addrString(d.addr), err)
}
