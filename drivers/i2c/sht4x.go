package i2c

import (
	"context"
	"fmt"
	"time"

	"github.com/promcp/promcp-device/drivers"
)

// SHT4x commands (Sensirion SHT4x datasheet, section 4.5): one byte each.
const (
	// SHT4xMeasureHigh measures T and RH with high repeatability.
	SHT4xMeasureHigh = 0xFD
	// SHT4xSerial reads the serial number, two CRC-protected words.
	SHT4xSerial = 0x89
	// SHT4xSoftReset resets the sensor.
	SHT4xSoftReset = 0x94
)

// SHT4xMeasureTime is the longest a high-repeatability measurement takes
// (datasheet table 5: 8.3 ms), rounded up.
const SHT4xMeasureTime = 10 * time.Millisecond

// SHT4xSample is one SHT4x measurement.
type SHT4xSample struct {
	Celsius float64
	// Humidity is %RH, clamped to 0..100 as the datasheet says (the
	// conversion can give -6..119).
	Humidity float64
	// Raw is the temperature word, its CRC, the humidity word and its CRC.
	Raw [6]byte
}

// SHT4xCelsius converts a raw SHT4x temperature: -45 + 175·raw/65535 °C.
func SHT4xCelsius(raw uint16) float64 { return -45 + 175*float64(raw)/65535 }

// SHT4xHumidity converts a raw SHT4x humidity: -6 + 125·raw/65535 %RH,
// clamped to 0..100 (datasheet section 4.6).
func SHT4xHumidity(raw uint16) float64 {
	return min(max(-6+125*float64(raw)/65535, 0), 100)
}

// SHT4xRawHumidity is the inverse of [SHT4xHumidity] for 0..100 %RH.
func SHT4xRawHumidity(p float64) uint16 { return rawWord((p + 6) * 65535 / 125) }

// SHT4x is a Sensirion SHT40, SHT41 or SHT45 temperature and humidity
// sensor. It is safe for concurrent use: its operations run one at a time.
type SHT4x struct {
	bus   *Bus
	addr  uint16
	sleep SleepFunc
	turn  drivers.Turn
}

// NewSHT4x returns the sensor at addr (0x44; 0x45 or 0x46 for the -B and -C
// parts) on bus; it waits with sleep. It does no I/O.
func NewSHT4x(bus *Bus, addr uint16, sleep SleepFunc) *SHT4x {
	return &SHT4x{bus: bus, addr: addr, sleep: sleep, turn: drivers.NewTurn()}
}

// Sense sends the high-precision measurement command, waits
// [SHT4xMeasureTime] and reads the two words. Errors wrap drivers.ErrNACK,
// drivers.ErrTimeout or drivers.ErrCRC, or ctx's error.
func (d *SHT4x) Sense(ctx context.Context) (SHT4xSample, error) {
	release, err := d.turn.Wait(ctx)
	if err != nil {
		return SHT4xSample{}, fmt.Errorf("sht4x measure: %w", err)
	}
	defer release()
	if err := d.bus.Tx(ctx, d.addr, []byte{SHT4xMeasureHigh}, nil); err != nil {
		return SHT4xSample{}, fmt.Errorf("sht4x measure: %w", err)
	}
	if err := d.sleep(ctx, SHT4xMeasureTime); err != nil {
		return SHT4xSample{}, fmt.Errorf("sht4x measure: waiting for the measurement: %w", drivers.Classify(err))
	}
	var s SHT4xSample
	if err := d.bus.Tx(ctx, d.addr, nil, s.Raw[:]); err != nil {
		return SHT4xSample{}, fmt.Errorf("sht4x measure: %w", err)
	}
	ws, err := sensirionWords(s.Raw[:], "temperature", "humidity")
	if err != nil {
		return SHT4xSample{}, fmt.Errorf("sht4x measure: i2c %s addr %s: %w", d.bus.Name(), addrString(d.addr), err)
	}
	s.Celsius, s.Humidity = SHT4xCelsius(ws[0]), SHT4xHumidity(ws[1])
	return s, nil
}
