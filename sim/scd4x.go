package sim

import (
	"fmt"
	"math"
	"time"

	"github.com/promcp/promcp-device/drivers/i2c"
	"github.com/promcp/promcp-device/manifests"
)

// scd4x is a simulated Sensirion SCD4x: idle until start_periodic_
// measurement, then a new measurement every 5 s of the world's clock;
// data_ready says whether one is unread. Guarded by World.mu.
type scd4x struct {
	a       *air
	started time.Time // zero: idle
	read    time.Time // the measurement last read (its time)
	out     []byte
}

func (d *scd4x) tx(now time.Time, fs *faultState, w, r []byte) error {
	if len(w) > 0 {
		if len(w) != 2 {
			return nack(fmt.Sprintf("scd4x: %d-byte write, want a 2-byte command", len(w)))
		}
		if err := d.command(now, fs, uint16(w[0])<<8|uint16(w[1])); err != nil {
			return err
		}
	}
	if len(r) > 0 {
		if d.out == nil {
			return nack("scd4x: read with no response pending")
		}
		fill(r, d.out)
		if fs.is(manifests.FaultCRC) && len(r) >= 3 {
			r[2] ^= 0x5A
		}
		d.out = nil
	}
	return nil
}

func (d *scd4x) command(now time.Time, fs *faultState, cmd uint16) error {
	d.out = nil
	latest, ok := d.latest(now)
	switch cmd {
	case i2c.SCD4xStartPeriodic:
		if !d.started.IsZero() {
			return nack("scd4x: start_periodic_measurement while measuring")
		}
		d.started, d.read = now, time.Time{}
	case i2c.SCD4xStopPeriodic:
		d.started = time.Time{}
	case i2c.SCD4xDataReady:
		status := uint16(0x8000)
		if ok && latest.After(d.read) {
			status |= 0x0006
		}
		d.out = i2c.SensirionWord(status)
	case i2c.SCD4xReadMeasurement:
		if !ok {
			return nack("scd4x: read_measurement with no measurement")
		}
		d.read = latest
		vs := d.a.read(now, fs)
		co2 := uint16(math.Round(max(min(vs[0], 65535), 0)))
		b := append(i2c.SensirionWord(co2), i2c.SensirionWord(i2c.RawTemperature(vs[1]))...)
		d.out = frozen(fs, append(b, i2c.SensirionWord(i2c.RawHumidity(vs[2]))...))
	default:
		if d.started.IsZero() {
			return nack(fmt.Sprintf("scd4x: unknown command 0x%04x", cmd))
		}
		return nack(fmt.Sprintf("scd4x: command 0x%04x during periodic measurement", cmd))
	}
	return nil
}

// latest is the time of the latest measurement, if one was made: every
// 5 s after the start.
func (d *scd4x) latest(now time.Time) (time.Time, bool) {
	if d.started.IsZero() || now.Sub(d.started) < i2c.SCD4xPeriod {
		return time.Time{}, false
	}
	n := now.Sub(d.started) / i2c.SCD4xPeriod
	return d.started.Add(n * i2c.SCD4xPeriod), true
}

// addSCD4x adds a simulated SCD4x; a zone may drive its temperature and
// humidity, sim.values.co2 its CO₂. It has been measuring for one period
// when the world begins (as after a restart of the gateway), so that a
// simulated gateway reads it at once; stop_periodic_measurement makes it
// a sensor just powered up.
func addSCD4x(w *World, d manifests.Device, bl *build) error {
	return addDeclared(w, d, bl, func(a *air) *scd4x { return &scd4x{a: a, started: bl.now.Add(-i2c.SCD4xPeriod)} })
}
