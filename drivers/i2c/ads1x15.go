package i2c

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/promcp/promcp-device/drivers"
)

// ADS1015 and ADS1115 registers and config bits (TI ADS111x datasheet
// SBAS444 section 9.6, ADS101x SBAS473 section 8.6; the layout is the same).
const (
	ADSRegConversion = 0x00
	ADSRegConfig     = 0x01

	ADSConfigOS       = 1 << 15 // write: start a single conversion; read: 1 when idle
	ADSConfigMuxShift = 12      // MUX[14:12]
	ADSConfigPGAShift = 9       // PGA[11:9]
	ADSConfigMode     = 1 << 8  // 1: single-shot (power-down) mode
	ADSConfigDRShift  = 5       // DR[7:5]
	ADSConfigCompQue  = 0x3     // COMP_QUE[1:0] = 11: comparator off
	// ADSConfigDefault is the config register after reset.
	ADSConfigDefault = 0x8583
)

// ADSInput is an input multiplexer setting (MUX[14:12]).
type ADSInput uint8

// Multiplexer settings: differential pairs, then single-ended against GND.
const (
	ADSDiff01 ADSInput = iota // AIN0 - AIN1
	ADSDiff03                 // AIN0 - AIN3
	ADSDiff13                 // AIN1 - AIN3
	ADSDiff23                 // AIN2 - AIN3
	ADSAIN0                   // AIN0 - GND
	ADSAIN1
	ADSAIN2
	ADSAIN3
)

// ADSFullScale lists the programmable gain amplifier's full-scale ranges in
// volts by PGA[11:9] (101, 110 and 111 are all ±0.256 V).
var adsFullScale = [8]float64{6.144, 4.096, 2.048, 1.024, 0.512, 0.256, 0.256, 0.256}

// ADSFullScale returns the full-scale range of a PGA setting, in volts.
func ADSFullScale(pga uint8) float64 { return adsFullScale[pga&7] }

// ADSPGA returns the PGA setting for a full-scale range in volts, and false
// when fs is not one of 6.144, 4.096, 2.048, 1.024, 0.512 or 0.256.
func ADSPGA(fs float64) (uint8, bool) {
	for i, v := range adsFullScale[:6] {
		if v == fs {
			return uint8(i), true
		}
	}
	return 0, false
}

// ADSConfig is the config register that starts one single-shot conversion
// of in at pga, at 128 SPS on an ADS1115 or 1600 SPS on an ADS1015 (DR=100,
// the reset rate), comparator off.
func ADSConfig(in ADSInput, pga uint8) uint16 {
	return ADSConfigOS | uint16(in&7)<<ADSConfigMuxShift | uint16(pga&7)<<ADSConfigPGAShift |
		ADSConfigMode | 4<<ADSConfigDRShift | ADSConfigCompQue
}

// ADSVolts converts the conversion register: an ADS1115 result is a 16-bit
// two's complement code, LSB = FS/32768; an ADS1015 result is 12 bits
// left-justified, LSB = FS/2048.
func ADSVolts(conv uint16, pga uint8, twelveBit bool) float64 {
	fs := ADSFullScale(pga)
	if twelveBit {
		return float64(int16(conv)>>4) * fs / 2048
	}
	return float64(int16(conv)) * fs / 32768
}

// ADSCode is the inverse of ADSVolts: the conversion register that
// represents v, saturated at the full-scale codes as the chip saturates.
func ADSCode(v float64, pga uint8, twelveBit bool) uint16 {
	fs := ADSFullScale(pga)
	span, shift := 32768.0, 0
	if twelveBit {
		span, shift = 2048, 4
	}
	code := v / fs * span
	switch {
	case code >= span-1:
		code = span - 1
	case code <= -span:
		code = -span
	}
	c := int16(roundHalfAway(code))
	return uint16(c << shift)
}

func roundHalfAway(x float64) float64 {
	if x < 0 {
		return -float64(int64(-x + 0.5))
	}
	return float64(int64(x + 0.5))
}

// ADS1x15ConversionTime is the longest a single conversion takes at the
// rate ADSConfig sets (1/128 s on an ADS1115, 1/1600 s on an ADS1015), with
// the datasheet's 10 % oscillator tolerance and the wake-up time.
func ADS1x15ConversionTime(twelveBit bool) time.Duration {
	if twelveBit {
		return 800 * time.Microsecond
	}
	return 9 * time.Millisecond
}

// ErrADSBusy is wrapped when the conversion has not finished (OS bit 0)
// after its conversion time.
var ErrADSBusy = errors.New("conversion not finished after its conversion time")

// ADS1x15 is a TI ADS1015 (12 bits) or ADS1115 (16 bits) analog-to-digital
// converter used in single-shot mode. It is safe for concurrent use:
// conversions run one at a time.
type ADS1x15 struct {
	bus       *Bus
	addr      uint16
	twelveBit bool
	sleep     SleepFunc
	turn      drivers.Turn
}

// NewADS1x15 returns the converter at addr (0x48..0x4B) on bus; twelveBit
// says it is an ADS1015. sleep nil waits on a timer. It does no I/O.
func NewADS1x15(bus *Bus, addr uint16, twelveBit bool, sleep SleepFunc) *ADS1x15 {
	if sleep == nil {
		sleep = Sleep
	}
	return &ADS1x15{bus: bus, addr: addr, twelveBit: twelveBit, sleep: sleep, turn: drivers.NewTurn()}
}

func (d *ADS1x15) name() string {
	if d.twelveBit {
		return "ads1015"
	}
	return "ads1115"
}

// Read converts in once at pga and returns the volts and the conversion
// register as read (MSB first). Errors wrap drivers.ErrNACK,
// drivers.ErrTimeout, ErrADSBusy or ctx's error.
func (d *ADS1x15) Read(ctx context.Context, in ADSInput, pga uint8) (float64, [2]byte, error) {
	var raw [2]byte
	release, err := d.turn.Wait(ctx)
	if err != nil {
		return 0, raw, fmt.Errorf("%s convert: %w", d.name(), err)
	}
	defer release()
	cfg := ADSConfig(in, pga)
	if err := d.bus.Tx(ctx, d.addr, []byte{ADSRegConfig, byte(cfg >> 8), byte(cfg)}, nil); err != nil {
		return 0, raw, fmt.Errorf("%s start conversion: %w", d.name(), err)
	}
	if err := d.sleep(ctx, ADS1x15ConversionTime(d.twelveBit)); err != nil {
		return 0, raw, fmt.Errorf("%s convert: waiting: %w", d.name(), drivers.Classify(err))
	}
	var st [2]byte
	if err := d.bus.Tx(ctx, d.addr, []byte{ADSRegConfig}, st[:]); err != nil {
		return 0, raw, fmt.Errorf("%s status: %w", d.name(), err)
	}
	if st[0]&0x80 == 0 {
		return 0, raw, fmt.Errorf("%s convert: i2c %s addr 0x%02x: config 0x%02x%02x: %w", d.name(), d.bus.Name(), d.addr, st[0], st[1], ErrADSBusy)
	}
	if err := d.bus.Tx(ctx, d.addr, []byte{ADSRegConversion}, raw[:]); err != nil {
		return 0, raw, fmt.Errorf("%s read conversion: %w", d.name(), err)
	}
	return ADSVolts(uint16(raw[0])<<8|uint16(raw[1]), pga, d.twelveBit), raw, nil
}
