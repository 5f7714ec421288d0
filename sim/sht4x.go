package sim

import (
	"fmt"
	"time"

	"github.com/promcp/promcp-device/drivers/i2c"
	"github.com/promcp/promcp-device/manifests"
)

// sht4x is a simulated Sensirion SHT4x: a one-byte command, then six bytes
// (temperature and humidity words with their CRCs). Guarded by World.mu.
type sht4x struct {
	a   *air
	out []byte // what the next read returns; nil: nothing pending
}

func (d *sht4x) tx(now time.Time, fs *faultState, w, r []byte) error {
	if len(w) > 0 {
		if len(w) != 1 {
			return nack(fmt.Sprintf("sht4x: %d-byte write, want a 1-byte command", len(w)))
		}
		switch w[0] {
		case 0xFD, 0xF6, 0xE0: // high, medium, low repeatability
			vs := d.a.read(now, fs)
			b := append(i2c.SensirionWord(i2c.RawTemperature(vs[0])), i2c.SensirionWord(i2c.SHT4xRawHumidity(vs[1]))...)
			d.out = frozen(fs, b)
			if len(r) > 0 {
				return nack("sht4x: read during measurement")
			}
		case i2c.SHT4xSerial:
			d.out = append(i2c.SensirionWord(0x0F4A), i2c.SensirionWord(0x3B21)...)
		case i2c.SHT4xSoftReset:
			d.out = nil
		default:
			return nack(fmt.Sprintf("sht4x: unknown command 0x%02x", w[0]))
		}
	}
	if len(r) > 0 {
		if d.out == nil {
			return nack("sht4x: read with no measurement pending")
		}
		fill(r, d.out)
		if fs.is(manifests.FaultCRC) && len(r) >= 3 {
			r[2] ^= 0x5A
		}
		d.out = nil
	}
	return nil
}

// fill copies out into r; the line floats high past the data.
func fill(r, out []byte) {
	n := copy(r, out)
	for i := n; i < len(r); i++ {
		r[i] = 0xFF
	}
}

// addSHT4x adds a simulated SHT4x; a zone may drive its readings.
func addSHT4x(w *World, d manifests.Device, bl *build) error {
	return addDeclared(w, d, bl, func(a *air) *sht4x { return &sht4x{a: a} })
}
