// Package w1 reads 1-Wire devices through the Linux kernel's w1 driver
// (dtoverlay=w1-gpio on a Raspberry Pi): each slave is a directory named
// by its ROM id under /sys/bus/w1/devices, and reading its w1_slave file
// makes the kernel run a conversion and report the scratchpad.
//
// periph.io has a DS18B20 driver over its own onewire.Bus, but no bus that
// reaches the kernel's w1 master: on a Pi the kernel owns the GPIO line
// once w1-gpio is loaded, so this package reads the kernel's files.
package w1

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/promcp/promcp-device/drivers"
	"github.com/promcp/promcp-device/drivers/sysfs"
)

// PowerOnRaw is the DS18B20's temperature register at power-on, +85 °C
// (datasheet, Table 1): a scratchpad that still holds it means no
// conversion ran (a brown-out or a parasite-power wiring fault).
const PowerOnRaw = 0x0550

// ErrPowerOn is wrapped (with drivers.ErrDeviceError) by a read that
// returned the power-on value.
var ErrPowerOn = errors.New("power-on value 85 °C: no conversion ran (check the 3.3 V supply and the 4.7 kΩ pull-up)")

// Sample is one DS18B20 reading.
type Sample struct {
	// Celsius is the temperature from the scratchpad.
	Celsius float64
	// Scratchpad is the nine bytes the kernel reported (temperature LSB,
	// MSB, TH, TL, configuration, three reserved, CRC); nil when the
	// kernel's temperature file was read instead.
	Scratchpad []byte
}

// DS18B20 is one thermometer on a w1 bus.
type DS18B20 struct {
	fs      sysfs.FS
	rom     string
	retries int
}

// NewDS18B20 returns the sensor with ROM id rom ("28-0316a2795aff") in fs
// (the w1 devices directory). A CRC failure is read again up to retries
// times: the kernel runs a new conversion for every read.
func NewDS18B20(fs sysfs.FS, rom string, retries int) *DS18B20 {
	return &DS18B20{fs: fs, rom: rom, retries: retries}
}

// Sense reads the temperature. A missing sensor wraps
// drivers.ErrUnavailable, a CRC the kernel or this package rejects
// drivers.ErrCRC (after the retries), the power-on value ErrPowerOn and
// drivers.ErrDeviceError.
func (d *DS18B20) Sense(ctx context.Context) (Sample, error) {
	var err error
	for attempt := 0; attempt <= d.retries; attempt++ {
		var b []byte
		b, err = d.fs.ReadFile(ctx, d.rom+"/w1_slave")
		if errors.Is(err, drivers.ErrUnavailable) {
			if t, terr := d.fs.ReadFile(ctx, d.rom+"/temperature"); terr == nil {
				return ParseTemperature(t)
			}
			return Sample{}, fmt.Errorf("ds18b20 %s: not on the w1 bus (is dtoverlay=w1-gpio loaded and the sensor wired?): %w", d.rom, err)
		}
		if err != nil {
			return Sample{}, fmt.Errorf("ds18b20 %s: %w", d.rom, err)
		}
		var s Sample
		s, err = ParseW1Slave(b)
		if err == nil {
			return s, nil
		}
		if !errors.Is(err, drivers.ErrCRC) || ctx.Err() != nil {
			break
		}
	}
	return Sample{}, fmt.Errorf("ds18b20 %s: %w", d.rom, err)
}

// ParseW1Slave parses the kernel's w1_slave file of a DS18B20:
//
//	72 01 4b 46 7f ff 0e 10 57 : crc=57 YES
//	72 01 4b 46 7f ff 0e 10 57 t=23125
//
// It checks the CRC itself as well as the kernel's verdict, and converts
// the scratchpad at the resolution its configuration byte sets.
//
// An empty file is what Linux's w1_therm (since 5.10) returns when its own
// five reads of the scratchpad all failed, a CRC mismatch or no answer
// (it never prints "crc=.. NO" then): that is drivers.ErrCRC too.
func ParseW1Slave(b []byte) (Sample, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return Sample{}, fmt.Errorf("%w: w1_slave is empty: the kernel read no valid scratchpad (CRC failures or no answer from the sensor)", drivers.ErrCRC)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) < 2 {
		return Sample{}, fmt.Errorf("w1_slave: %d lines (want 2: the scratchpad with crc=, then t=)", len(lines))
	}
	head, verdict, ok := strings.Cut(lines[0], ": crc=")
	if !ok {
		return Sample{}, fmt.Errorf("w1_slave: first line %q has no \": crc=\"", lines[0])
	}
	sp, err := scratchpad(head)
	if err != nil {
		return Sample{}, err
	}
	if strings.HasSuffix(verdict, "NO") {
		return Sample{}, fmt.Errorf("%w: the kernel reports crc NO for % x", drivers.ErrCRC, sp)
	}
	if !strings.HasSuffix(verdict, "YES") {
		return Sample{}, fmt.Errorf("w1_slave: crc verdict %q (want YES or NO)", verdict)
	}
	if got := CRC8(sp[:8]); got != sp[8] {
		return Sample{}, fmt.Errorf("%w: scratchpad % x has crc %02x, computed %02x", drivers.ErrCRC, sp, sp[8], got)
	}
	if bytes.Equal(sp, make([]byte, 9)) {
		// All zeros has a valid CRC: the line read nothing but low bits.
		return Sample{}, fmt.Errorf("%w: all-zero scratchpad (a shorted data line or a sensor that left mid-read)", drivers.ErrCRC)
	}
	raw := int16(uint16(sp[1])<<8 | uint16(sp[0]))
	if raw == PowerOnRaw {
		return Sample{}, fmt.Errorf("%w: %w", drivers.ErrDeviceError, ErrPowerOn)
	}
	// 9..12-bit resolution: R1 R0 in bits 6..5 of the configuration
	// byte; the undefined low bits are masked (datasheet, Table 3).
	bits := 9 + int(sp[4]>>5&3)
	raw &^= int16(1<<(12-bits)) - 1
	// The t= line is the kernel's conversion of the same bytes at 12
	// bits whatever the configuration; the scratchpad is what the sensor said.
	s := Sample{Celsius: float64(raw) / 16, Scratchpad: sp}
	return s, nil
}

func scratchpad(head string) ([]byte, error) {
	f := strings.Fields(head)
	if len(f) != 9 {
		return nil, fmt.Errorf("w1_slave: %d scratchpad bytes %q (want 9)", len(f), head)
	}
	sp := make([]byte, 9)
	for i, h := range f {
		v, err := strconv.ParseUint(h, 16, 8)
		if err != nil {
			return nil, fmt.Errorf("w1_slave: scratchpad byte %d %q is not hex", i, h)
		}
		sp[i] = byte(v)
	}
	return sp, nil
}

// ParseTemperature parses the newer kernels' temperature file: the
// temperature in thousandths of a degree ("23125\n"). The kernel has
// checked the CRC; the power-on value is still refused.
func ParseTemperature(b []byte) (Sample, error) {
	milli, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return Sample{}, fmt.Errorf("temperature file %q is not an integer", strings.TrimSpace(string(b)))
	}
	if milli == 85000 {
		return Sample{}, fmt.Errorf("%w: %w", drivers.ErrDeviceError, ErrPowerOn)
	}
	return Sample{Celsius: float64(milli) / 1000}, nil
}

// CRC8 is the Dallas/Maxim 1-Wire CRC (x^8 + x^5 + x^4 + 1, reflected).
func CRC8(b []byte) byte {
	var crc byte
	for _, v := range b {
		for range 8 {
			mix := (crc ^ v) & 1
			crc >>= 1
			if mix != 0 {
				crc ^= 0x8c
			}
			v >>= 1
		}
	}
	return crc
}

// Scratchpad returns the nine bytes a DS18B20 at 12-bit resolution holds
// for celsius (rounded to 1/16 °C), with its CRC: the simulator's answer.
func Scratchpad(celsius float64) []byte {
	raw := int16(celsius*16 + copysignHalf(celsius))
	sp := []byte{byte(raw), byte(uint16(raw) >> 8), 0x4b, 0x46, 0x7f, 0xff, 0x10 - byte(raw)&0x0f, 0x10, 0}
	sp[8] = CRC8(sp[:8])
	return sp
}

func copysignHalf(f float64) float64 {
	if f < 0 {
		return -0.5
	}
	return 0.5
}

// W1Slave formats a scratchpad as the kernel's w1_slave file, with the
// kernel's verdict on its CRC and its t= line.
func W1Slave(sp []byte) []byte {
	hexs := fmt.Sprintf("% x", sp)
	verdict := "NO"
	if CRC8(sp[:8]) == sp[8] {
		verdict = "YES"
	}
	raw := int16(uint16(sp[1])<<8 | uint16(sp[0]))
	return fmt.Appendf(nil, "%s : crc=%02x %s\n%s t=%d\n", hexs, sp[8], verdict, hexs, int(raw)*1000/16)
}
