package i2c

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/promcp/promcp-device/drivers"
)

// INA219 registers (TI INA219 datasheet SBOS448, section 8.6).
const (
	INARegConfig      = 0x00
	INARegShunt       = 0x01 // signed, LSB 10 µV
	INARegBus         = 0x02 // bits 15..3 the voltage (LSB 4 mV), bit 1 CNVR, bit 0 OVF
	INARegPower       = 0x03
	INARegCurrent     = 0x04
	INARegCalibration = 0x05
	// INAConfigDefault is the config register after reset: 32 V range,
	// PGA /8 (±320 mV), 12-bit ADCs, shunt and bus continuous.
	INAConfigDefault = 0x399F
	// INABusOVF is the bus register's math overflow flag.
	INABusOVF = 1
)

// INACalibration is the calibration of an INA219 for a shunt and a largest
// expected current (datasheet 8.5.1): Current_LSB = max/2^15 and
// Cal = trunc(0.04096 / (Current_LSB × R_shunt)); the current register is
// then shunt × Cal / 4096 and the power register current × bus / 5000, in
// units of CurrentLSB and 20 × CurrentLSB.
type INACalibration struct {
	Cal uint16
	// CurrentLSB is the amperes of one current register count, recomputed
	// from the truncated Cal so that the current read is exact.
	CurrentLSB float64
}

// NewINACalibration computes the calibration; it fails for a shunt or a
// current that is not positive, or a Cal that does not fit 15 bits.
func NewINACalibration(shuntOhms, maxCurrent float64) (INACalibration, error) {
	if !(shuntOhms > 0) || !(maxCurrent > 0) || math.IsInf(shuntOhms, 0) || math.IsInf(maxCurrent, 0) {
		return INACalibration{}, fmt.Errorf("ina219 calibration: shunt %g Ω and max current %g A (want both more than 0)", shuntOhms, maxCurrent)
	}
	lsb := maxCurrent / 32768
	cal := math.Trunc(0.04096 / (lsb * shuntOhms))
	if cal < 2 || cal > 0xFFFE {
		return INACalibration{}, fmt.Errorf("ina219 calibration: shunt %g Ω and max current %g A give Cal %g (want 2..65534; raise or lower max_current)", shuntOhms, maxCurrent, cal)
	}
	c := uint16(cal) &^ 1 // bit 0 is read-only, always 0
	return INACalibration{Cal: c, CurrentLSB: 0.04096 / (float64(c) * shuntOhms)}, nil
}

// PowerReading is one INA219 measurement.
type PowerReading struct {
	BusVolts   float64 // V
	ShuntMilli float64 // mV
	Amps       float64 // A
	Watts      float64 // W
	// Raw is the shunt, bus, power and current registers as read, MSB
	// first, in that order.
	Raw [8]byte
}

// INAConvert converts the four registers (shunt, bus, power, current).
func (c INACalibration) Convert(shunt, bus, power, current uint16) PowerReading {
	return PowerReading{
		ShuntMilli: float64(int16(shunt)) * 0.01,
		BusVolts:   float64(bus>>3) * 0.004,
		Amps:       float64(int16(current)) * c.CurrentLSB,
		Watts:      float64(power) * 20 * c.CurrentLSB,
	}
}

// ErrINAOverflow is wrapped when the bus register's OVF bit says the power
// or current calculation overflowed: the values are out of range.
var ErrINAOverflow = errors.New("math overflow (OVF): current or power out of range")

// INA219 is a TI INA219 current, voltage and power monitor. The
// calibration register is written before every measurement, so that a chip
// that lost it to a brown-out reports the right current at once. It is safe
// for concurrent use.
type INA219 struct {
	bus  *Bus
	addr uint16
	cal  INACalibration
	turn drivers.Turn
}

// NewINA219 returns the monitor at addr (0x40..0x4F) on bus. It does no I/O.
func NewINA219(bus *Bus, addr uint16, cal INACalibration) *INA219 {
	return &INA219{bus: bus, addr: addr, cal: cal, turn: drivers.NewTurn()}
}

// Sense reads the shunt, bus, power and current registers. Errors wrap
// drivers.ErrNACK, drivers.ErrTimeout, ErrINAOverflow or ctx's error.
func (d *INA219) Sense(ctx context.Context) (PowerReading, error) {
	release, err := d.turn.Wait(ctx)
	if err != nil {
		return PowerReading{}, fmt.Errorf("ina219 read: %w", err)
	}
	defer release()
	if err := d.bus.Tx(ctx, d.addr, []byte{INARegCalibration, byte(d.cal.Cal >> 8), byte(d.cal.Cal)}, nil); err != nil {
		return PowerReading{}, fmt.Errorf("ina219 calibrate: %w", err)
	}
	var raw [8]byte
	for i, reg := range []byte{INARegShunt, INARegBus, INARegPower, INARegCurrent} {
		if err := d.bus.Tx(ctx, d.addr, []byte{reg}, raw[2*i:2*i+2]); err != nil {
			return PowerReading{}, fmt.Errorf("ina219 read register 0x%02x: %w", reg, err)
		}
	}
	w := func(i int) uint16 { return uint16(raw[2*i])<<8 | uint16(raw[2*i+1]) }
	if w(1)&INABusOVF != 0 {
		return PowerReading{}, fmt.Errorf("ina219 read: i2c %s addr 0x%02x: %w", d.bus.Name(), d.addr, ErrINAOverflow)
	}
	r := d.cal.Convert(w(0), w(1), w(2), w(3))
	r.Raw = raw
	return r, nil
}
