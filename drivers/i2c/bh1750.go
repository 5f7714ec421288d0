package i2c

import (
	"context"
	"fmt"
	"time"

	"github.com/promcp/promcp-device/drivers"
)

// BH1750 instructions (ROHM BH1750FVI datasheet, instruction set).
const (
	BH1750PowerOn = 0x01
	// BH1750ContinuousHigh is continuous high-resolution mode: 1 lx
	// resolution, a new measurement every 120 ms (180 ms at most).
	BH1750ContinuousHigh = 0x10
)

// BH1750MeasureTime is the longest a high-resolution measurement takes.
const BH1750MeasureTime = 180 * time.Millisecond

// BH1750Lux converts a high-resolution count to lux: count / 1.2
// (datasheet: MTreg at its default 69).
func BH1750Lux(raw uint16) float64 { return float64(raw) / 1.2 }

// LightReading is one BH1750 measurement.
type LightReading struct {
	Lux float64
	// Raw is the count as read, MSB first.
	Raw [2]byte
}

// BH1750 is a ROHM BH1750 ambient light sensor in continuous
// high-resolution mode. It is safe for concurrent use.
type BH1750 struct {
	bus   *Bus
	addr  uint16
	sleep SleepFunc
	turn  drivers.Turn
	// started: the sensor was put in continuous mode and has measured.
	// Guarded by turn.
	started bool
}

// NewBH1750 returns the sensor at addr (0x23, or 0x5C with ADDR high) on
// bus; it waits with sleep. It does no I/O.
func NewBH1750(bus *Bus, addr uint16, sleep SleepFunc) *BH1750 {
	return &BH1750{bus: bus, addr: addr, sleep: sleep, turn: drivers.NewTurn()}
}

// Sense reads the latest measurement. The first read (and the first after
// a failed one, in case the sensor lost its power) powers the sensor on,
// starts continuous high-resolution mode and waits [BH1750MeasureTime].
// Errors wrap drivers.ErrNACK or drivers.ErrTimeout, or ctx's error.
func (d *BH1750) Sense(ctx context.Context) (LightReading, error) {
	release, err := d.turn.Wait(ctx)
	if err != nil {
		return LightReading{}, fmt.Errorf("bh1750 read: %w", err)
	}
	defer release()
	if !d.started {
		for _, in := range []byte{BH1750PowerOn, BH1750ContinuousHigh} {
			if err := d.bus.Tx(ctx, d.addr, []byte{in}, nil); err != nil {
				return LightReading{}, fmt.Errorf("bh1750 start (instruction 0x%02x): %w", in, err)
			}
		}
		if err := d.sleep(ctx, BH1750MeasureTime); err != nil {
			return LightReading{}, fmt.Errorf("bh1750 start: waiting for the measurement: %w", drivers.Classify(err))
		}
		d.started = true
	}
	var r LightReading
	if err := d.bus.Tx(ctx, d.addr, nil, r.Raw[:]); err != nil {
		d.started = false
		return LightReading{}, fmt.Errorf("bh1750 read: %w", err)
	}
	r.Lux = BH1750Lux(uint16(r.Raw[0])<<8 | uint16(r.Raw[1]))
	return r, nil
}
