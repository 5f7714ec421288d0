package i2c

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/promcp/promcp-device/drivers"
)

// BME280 and BMP280 registers (Bosch BME280 datasheet section 5.3, BMP280
// datasheet section 4.3).
const (
	BMERegCalib1   = 0x88 // dig_T1 .. dig_P9, a reserved byte, dig_H1: 26 bytes
	BMERegChipID   = 0xD0
	BMERegReset    = 0xE0
	BMERegCalib2   = 0xE1 // dig_H2 .. dig_H6: 7 bytes (BME280 only)
	BMERegCtrlHum  = 0xF2
	BMERegStatus   = 0xF3
	BMERegCtrlMeas = 0xF4
	BMERegConfig   = 0xF5
	BMERegData     = 0xF7 // press_msb .. hum_lsb: 8 bytes (BMP280: 6)

	// BME280ChipID and BMP280ChipID are the chip id register's values.
	BME280ChipID = 0x60
	BMP280ChipID = 0x58

	// BMESkipped is the 20-bit output of a temperature or pressure
	// measurement that did not run (its reset value); BMEHumSkipped the
	// 16-bit humidity one.
	BMESkipped    = 0x80000
	BMEHumSkipped = 0x8000
)

// BMEMeasureTime is the longest a forced-mode measurement with every
// oversampling ×1 takes (datasheet 9.1: 1.25 + 2.3 + 2.875 + 2.875 ms).
const BMEMeasureTime = 10 * time.Millisecond

// BMECalibration is a BME280's or BMP280's trimming parameters, as read
// from its non-volatile memory.
type BMECalibration struct {
	T1                             uint16
	T2, T3                         int16
	P1                             uint16
	P2, P3, P4, P5, P6, P7, P8, P9 int16
	H1                             uint8
	H2                             int16
	H3                             uint8
	H4, H5                         int16
	H6                             int8
}

// ParseBMECalibration decodes the 26 bytes from 0x88 and, for a BME280,
// the 7 bytes from 0xE1 (h may be nil for a BMP280).
func ParseBMECalibration(tp, h []byte) (BMECalibration, error) {
	if len(tp) != 26 {
		return BMECalibration{}, fmt.Errorf("bme280 calibration: %d bytes from 0x88, want 26", len(tp))
	}
	le := binary.LittleEndian
	s := func(i int) int16 { return int16(le.Uint16(tp[i:])) }
	c := BMECalibration{
		T1: le.Uint16(tp[0:]), T2: s(2), T3: s(4),
		P1: le.Uint16(tp[6:]), P2: s(8), P3: s(10), P4: s(12), P5: s(14), P6: s(16), P7: s(18), P8: s(20), P9: s(22),
		H1: tp[25],
	}
	if h == nil {
		return c, nil
	}
	if len(h) != 7 {
		return BMECalibration{}, fmt.Errorf("bme280 calibration: %d bytes from 0xE1, want 7", len(h))
	}
	c.H2 = int16(le.Uint16(h[0:]))
	c.H3 = h[2]
	c.H4 = int16(int8(h[3]))<<4 | int16(h[4]&0x0F)
	c.H5 = int16(int8(h[5]))<<4 | int16(h[4]>>4)
	c.H6 = int8(h[6])
	return c, nil
}

// Compensate converts raw ADC outputs with the datasheet's fixed-point
// formulas (BME280 datasheet 4.2.3 and 8.2): temperature in 0.01 °C,
// pressure in Pa as unsigned Q24.8, humidity in %RH as unsigned Q22.10.
func (c BMECalibration) Compensate(adcT, adcP, adcH int32) (t int32, p uint32, h uint32) {
	tFine := c.tFine(adcT)
	t = (tFine*5 + 128) >> 8
	return t, c.pressure(adcP, tFine), c.humidity(adcH, tFine)
}

func (c BMECalibration) tFine(adcT int32) int32 {
	v1 := ((adcT>>3 - int32(c.T1)<<1) * int32(c.T2)) >> 11
	d := adcT>>4 - int32(c.T1)
	v2 := (((d * d) >> 12) * int32(c.T3)) >> 14
	return v1 + v2
}

func (c BMECalibration) pressure(adcP, tFine int32) uint32 {
	v1 := int64(tFine) - 128000
	v2 := v1 * v1 * int64(c.P6)
	v2 += (v1 * int64(c.P5)) << 17
	v2 += int64(c.P4) << 35
	v1 = (v1*v1*int64(c.P3))>>8 + (v1*int64(c.P2))<<12
	v1 = ((int64(1)<<47 + v1) * int64(c.P1)) >> 33
	if v1 == 0 {
		return 0 // avoid a division by zero
	}
	p := int64(1048576 - adcP)
	p = ((p<<31 - v2) * 3125) / v1
	v1 = (int64(c.P9) * (p >> 13) * (p >> 13)) >> 25
	v2 = (int64(c.P8) * p) >> 19
	p = (p+v1+v2)>>8 + int64(c.P7)<<4
	return uint32(p)
}

func (c BMECalibration) humidity(adcH, tFine int32) uint32 {
	v := tFine - 76800
	v = ((((adcH << 14) - (int32(c.H4) << 20) - (int32(c.H5) * v)) + 16384) >> 15) *
		(((((((v*int32(c.H6))>>10)*(((v*int32(c.H3))>>11)+32768))>>10)+2097152)*int32(c.H2) + 8192) >> 14)
	v -= ((((v >> 15) * (v >> 15)) >> 7) * int32(c.H1)) >> 4
	v = max(v, 0)
	v = min(v, 419430400)
	return uint32(v >> 12)
}

// EnvSample is one BME280 or BMP280 measurement.
type EnvSample struct {
	// Temperature in °C (resolution 0.01), Pressure in hPa (resolution
	// 1/25600), Humidity in %RH (resolution 1/1024; 0 on a BMP280).
	Temperature, Pressure, Humidity float64
	// Raw is the data registers as read from 0xF7: pressure, temperature
	// (20 bits each, MSB first) and, on a BME280, humidity (16 bits).
	Raw []byte
}

// BMERaw splits the data registers into the three ADC outputs.
func BMERaw(b []byte) (adcT, adcP, adcH int32) {
	adcP = int32(b[0])<<12 | int32(b[1])<<4 | int32(b[2])>>4
	adcT = int32(b[3])<<12 | int32(b[4])<<4 | int32(b[5])>>4
	adcH = BMEHumSkipped
	if len(b) >= 8 {
		adcH = int32(b[6])<<8 | int32(b[7])
	}
	return adcT, adcP, adcH
}

// ErrBMESkipped is wrapped when the chip returns the reset value of a data
// register: no measurement ran (the chip was reset, or is not configured).
var ErrBMESkipped = errors.New("measurement skipped (reset value in the data registers)")

// BME280 is a Bosch BME280 (temperature, pressure, humidity) or BMP280
// (temperature, pressure), used in forced mode with every oversampling ×1
// and the filter off (the datasheet's "weather monitoring" setting, 9.2.1).
//
// It is safe for concurrent use: operations run one at a time. The
// calibration is read once, on the first Sense, and kept.
type BME280 struct {
	bus      *Bus
	addr     uint16
	humidity bool // BME280: true; BMP280: false
	sleep    SleepFunc
	turn     drivers.Turn
	cal      *BMECalibration // nil until read; guarded by turn
}

// NewBME280 returns the sensor at addr (0x76, or 0x77 with SDO high) on bus;
// humidity says it is a BME280, not a BMP280. sleep nil waits on a timer.
// It does no I/O.
func NewBME280(bus *Bus, addr uint16, humidity bool, sleep SleepFunc) *BME280 {
	if sleep == nil {
		sleep = Sleep
	}
	return &BME280{bus: bus, addr: addr, humidity: humidity, sleep: sleep, turn: drivers.NewTurn()}
}

func (d *BME280) name() string {
	if d.humidity {
		return "bme280"
	}
	return "bmp280"
}

// Sense runs one forced-mode measurement, waits [BMEMeasureTime] and reads
// it. Errors wrap drivers.ErrNACK, drivers.ErrTimeout, ErrBMESkipped or
// ctx's error.
func (d *BME280) Sense(ctx context.Context) (EnvSample, error) {
	release, err := d.turn.Wait(ctx)
	if err != nil {
		return EnvSample{}, fmt.Errorf("%s measure: %w", d.name(), err)
	}
	defer release()
	if d.cal == nil {
		cal, err := d.calibrate(ctx)
		if err != nil {
			return EnvSample{}, fmt.Errorf("%s calibration: %w", d.name(), err)
		}
		d.cal = &cal
	}
	var cmd []byte
	if d.humidity {
		cmd = append(cmd, BMERegCtrlHum, 0x01) // osrs_h ×1; applies at the next ctrl_meas write
	}
	cmd = append(cmd, BMERegConfig, 0x00, BMERegCtrlMeas, 0x01<<5|0x01<<2|0x01) // osrs_t ×1, osrs_p ×1, forced
	if err := d.bus.Tx(ctx, d.addr, cmd, nil); err != nil {
		return EnvSample{}, fmt.Errorf("%s measure: %w", d.name(), err)
	}
	if err := d.sleep(ctx, BMEMeasureTime); err != nil {
		return EnvSample{}, fmt.Errorf("%s measure: waiting: %w", d.name(), drivers.Classify(err))
	}
	n := 6
	if d.humidity {
		n = 8
	}
	raw := make([]byte, n)
	if err := d.bus.Tx(ctx, d.addr, []byte{BMERegData}, raw); err != nil {
		return EnvSample{}, fmt.Errorf("%s read: %w", d.name(), err)
	}
	s, err := d.cal.Sample(raw)
	if err != nil {
		return EnvSample{}, fmt.Errorf("%s read: i2c %s addr 0x%02x: %w", d.name(), d.bus.Name(), d.addr, err)
	}
	return s, nil
}

// Sample converts the data registers read from 0xF7 (6 bytes, or 8 with
// humidity).
func (c BMECalibration) Sample(raw []byte) (EnvSample, error) {
	adcT, adcP, adcH := BMERaw(raw)
	if adcT == BMESkipped || adcP == BMESkipped || (len(raw) >= 8 && adcH == BMEHumSkipped) {
		return EnvSample{}, ErrBMESkipped
	}
	t, p, h := c.Compensate(adcT, adcP, adcH)
	s := EnvSample{Temperature: float64(t) / 100, Pressure: float64(p) / 256 / 100, Raw: raw}
	if len(raw) >= 8 {
		s.Humidity = float64(h) / 1024
	}
	return s, nil
}

// calibrate checks the chip id and reads the trimming parameters.
func (d *BME280) calibrate(ctx context.Context) (BMECalibration, error) {
	id := make([]byte, 1)
	if err := d.bus.Tx(ctx, d.addr, []byte{BMERegChipID}, id); err != nil {
		return BMECalibration{}, err
	}
	want := byte(BMP280ChipID)
	if d.humidity {
		want = BME280ChipID
	}
	if id[0] != want {
		return BMECalibration{}, fmt.Errorf("i2c %s addr 0x%02x: chip id 0x%02x, want 0x%02x for a %s (0x60 is a BME280, 0x58 a BMP280)",
			d.bus.Name(), d.addr, id[0], want, d.name())
	}
	tp := make([]byte, 26)
	if err := d.bus.Tx(ctx, d.addr, []byte{BMERegCalib1}, tp); err != nil {
		return BMECalibration{}, err
	}
	var h []byte
	if d.humidity {
		h = make([]byte, 7)
		if err := d.bus.Tx(ctx, d.addr, []byte{BMERegCalib2}, h); err != nil {
			return BMECalibration{}, err
		}
	}
	return ParseBMECalibration(tp, h)
}
