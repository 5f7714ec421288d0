package sim

import (
	"fmt"
	"math"
	"time"

	"github.com/promcp/promcp-device/drivers/i2c"
	"github.com/promcp/promcp-device/manifests"
)

// bh1750 is a simulated ROHM BH1750: powered down until 0x01, measuring
// once a mode is set; a read returns the count (lux × 1.2). Guarded by
// World.mu.
type bh1750 struct {
	a       *air
	powered bool
	mode    byte // 0: none set
}

func (d *bh1750) tx(now time.Time, fs *faultState, w, r []byte) error {
	for _, in := range w {
		switch {
		case in == 0x00:
			d.powered, d.mode = false, 0
		case in == i2c.BH1750PowerOn:
			d.powered = true
		case in == 0x07: // reset: clears the data register
		case in == 0x10 || in == 0x11 || in == 0x13 || in == 0x20 || in == 0x21 || in == 0x23:
			if !d.powered && in < 0x20 {
				return nack(fmt.Sprintf("bh1750: mode 0x%02x while powered down", in))
			}
			d.powered, d.mode = true, in
		default:
			return nack(fmt.Sprintf("bh1750: unknown instruction 0x%02x", in))
		}
	}
	if len(r) > 0 {
		if d.mode == 0 {
			// The real chip answers a read in any mode with its data
			// register: zero until it has measured (i2cdetect sees it).
			fill(r, []byte{0, 0})
			return nil
		}
		count := math.Round(max(min(d.a.read(now, fs)[0]*1.2, 65535), 0))
		fill(r, frozen(fs, []byte{byte(uint16(count) >> 8), byte(uint16(count))}))
	}
	return nil
}

// addBH1750 adds a simulated BH1750; sim.values.illuminance sets its light.
func addBH1750(w *World, d manifests.Device, bl *build) error {
	return addDeclared(w, d, bl, func(a *air) *bh1750 { return &bh1750{a: a} })
}
