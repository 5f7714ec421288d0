package sim

import (
	"fmt"
	"time"

	"github.com/promcp/promcp-device/drivers/i2c"
)

// SHT3x status register bits (datasheet table 17).
const (
	statusAlert      = 1 << 15
	statusHeater     = 1 << 13
	statusRHAlert    = 1 << 11
	statusTAlert     = 1 << 10
	statusReset      = 1 << 4
	statusCmdFailed  = 1 << 1
	statusPowerUp    = statusAlert | statusReset
	statusClearable  = statusAlert | statusRHAlert | statusTAlert | statusReset
	cmdClearStatus   = 0x3041
	cmdReadStatus    = 0xF32D
	cmdSoftReset     = 0x30A2
	cmdHeaterEnable  = 0x306D
	cmdHeaterDisable = 0x3066
)

// sht3x is a simulated Sensirion SHT3x in single-shot mode. Guarded by
// World.mu.
type sht3x struct {
	zone   *zone // nil: constant DefaultTemperature and DefaultHumidity
	status uint16
	out    []byte // what the next read returns; nil: nothing pending
}

func newSHT3x() *sht3x {
	return &sht3x{status: statusPowerUp}
}

func (d *sht3x) tx(now time.Time, w, r []byte) error {
	if len(w) > 0 {
		if len(w) != 2 {
			d.status |= statusCmdFailed
			return nack(fmt.Sprintf("sht3x: %d-byte write, want a 2-byte command", len(w)))
		}
		cmd := uint16(w[0])<<8 | uint16(w[1])
		switch cmd {
		case 0x2400, 0x240B, 0x2416: // single shot, no clock stretching
			d.out = d.measure(now)
			if len(r) > 0 {
				// The result is not ready before the stop condition.
				return nack("sht3x: read during measurement")
			}
		case 0x2C06, 0x2C0D, 0x2C10: // single shot, clock stretching
			d.out = d.measure(now)
		case cmdReadStatus:
			d.out = word(d.status)
		case cmdClearStatus:
			d.status &^= statusClearable
			d.out = nil
		case cmdSoftReset:
			d.status = statusReset
			d.out = nil
		case cmdHeaterEnable:
			d.status |= statusHeater
		case cmdHeaterDisable:
			d.status &^= statusHeater
		default:
			d.status |= statusCmdFailed
			return nack(fmt.Sprintf("sht3x: unknown command 0x%04x", cmd))
		}
		d.status &^= statusCmdFailed
	}
	if len(r) > 0 {
		if d.out == nil {
			return nack("sht3x: read with no measurement pending")
		}
		n := copy(r, d.out)
		for i := n; i < len(r); i++ {
			r[i] = 0xFF // the line floats high past the data
		}
		d.out = nil
	}
	return nil
}

// measure returns the 6 bytes of a measurement of the sensor's zone now.
func (d *sht3x) measure(now time.Time) []byte {
	t, rh := DefaultTemperature, DefaultHumidity
	if d.zone != nil {
		t, rh = d.zone.sample(now)
	}
	return append(word(i2c.RawTemperature(t)), word(i2c.RawHumidity(rh))...)
}

// word encodes v as the chip sends it: MSB, LSB, CRC.
func word(v uint16) []byte {
	b := []byte{byte(v >> 8), byte(v)}
	return append(b, i2c.CRC8(b))
}
