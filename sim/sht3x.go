package sim

import (
	"fmt"
	"hash/fnv"
	"time"

	"github.com/promcp/promcp-device/drivers/i2c"
	"github.com/promcp/promcp-device/manifests"
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
	// The serial-number query, with and without clock stretching: two
	// CRC-protected words, no setting changed and no measurement started.
	cmdSerialStretch = 0x3780
	cmdSerial        = 0x3682
)

// sht3x is a simulated Sensirion SHT3x in single-shot mode. Guarded by
// World.mu.
type sht3x struct {
	zone   *zone   // nil: constant t and rh
	t, rh  float64 // without a zone: DefaultTemperature and DefaultHumidity, or sim.values
	status uint16
	serial uint32 // the factory serial number
	out    []byte // what the next read returns; nil: nothing pending
}

// newSHT3x returns a simulated SHT3x whose serial number is derived from
// name, so that each simulated sensor has its own, the same every run.
func newSHT3x(name string) *sht3x {
	h := fnv.New32a()
	h.Write([]byte(name))
	return &sht3x{status: statusPowerUp, serial: h.Sum32(), t: DefaultTemperature, rh: DefaultHumidity}
}

func (d *sht3x) tx(now time.Time, fs *faultState, w, r []byte) error {
	if len(w) > 0 {
		if len(w) != 2 {
			d.status |= statusCmdFailed
			return nack(fmt.Sprintf("sht3x: %d-byte write, want a 2-byte command", len(w)))
		}
		cmd := uint16(w[0])<<8 | uint16(w[1])
		switch cmd {
		case 0x2400, 0x240B, 0x2416: // single shot, no clock stretching
			d.out = d.measure(now, fs)
			if len(r) > 0 {
				// The result is not ready before the stop condition.
				return nack("sht3x: read during measurement")
			}
		case 0x2C06, 0x2C0D, 0x2C10: // single shot, clock stretching
			d.out = d.measure(now, fs)
		case cmdReadStatus:
			d.out = word(d.status)
		case cmdSerial, cmdSerialStretch:
			d.out = append(word(uint16(d.serial>>16)), word(uint16(d.serial))...)
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
		if fs.is(manifests.FaultCRC) && n >= 3 {
			r[2] ^= 0x5A // the first word's checksum arrives corrupted
		}
		d.out = nil
	}
	return nil
}

// measure returns the 6 bytes of a measurement of the sensor's zone now,
// as the active fault (if any) distorts it.
func (d *sht3x) measure(now time.Time, fs *faultState) []byte {
	t, rh := d.t, d.rh
	if d.zone != nil {
		t, rh = d.zone.sample(now)
	}
	humidity := fs != nil && fs.f.Channel == "humidity"
	switch {
	case fs.is(manifests.FaultStuck):
		if !fs.frozenValid {
			fs.frozen = append(word(i2c.RawTemperature(t)), word(i2c.RawHumidity(rh))...)
			fs.frozenValid = true
		}
		return append([]byte(nil), fs.frozen...)
	case fs.is(manifests.FaultNoise) && humidity:
		rh += fs.spike()
	case fs.is(manifests.FaultNoise):
		s := fs.spike()
		t += s
		rh += 10 * s
	case fs.is(manifests.FaultImplausible):
		rawT, rawRH := i2c.RawTemperature(t), i2c.RawHumidity(rh)
		switch v := fs.f.Value; {
		case v == nil:
			rawT, rawRH = 0xFFFF, 0xFFFF // railed: 130 °C, 100 %RH
		case humidity:
			rawRH = i2c.RawHumidity(*v)
		default:
			rawT = i2c.RawTemperature(*v)
		}
		return append(word(rawT), word(rawRH)...)
	}
	return append(word(i2c.RawTemperature(t)), word(i2c.RawHumidity(rh))...)
}

// word encodes v as the chip sends it: MSB, LSB, CRC.
func word(v uint16) []byte {
	b := []byte{byte(v >> 8), byte(v)}
	return append(b, i2c.CRC8(b))
}

// addSHT3x adds a simulated SHT3x; a zone may drive its readings.
func addSHT3x(w *World, d manifests.Device, bl *build) error {
	return w.addI2C(d, func() (device, error) {
		s := newSHT3x(d.Name)
		if d.Sim != nil {
			if v, ok := d.Sim.Values["temperature"]; ok {
				s.t = v
			}
			if v, ok := d.Sim.Values["humidity"]; ok {
				s.rh = v
			}
		}
		bl.shts[d.Name] = s
		return s, nil
	})
}
