package sim

import (
	"fmt"
	"time"

	"github.com/promcp/promcp-device/drivers/i2c"
	"github.com/promcp/promcp-device/manifests"
)

// registers is a simulated register-map device: a 256-byte register file
// behind a pointer that auto-increments on every byte read or written.
// Writes to bytes of registers not declared writable are ignored, as a
// chip's read-only registers ignore them. Guarded by World.mu.
type registers struct {
	file     [256]byte
	readOnly [256]bool
	ptr      uint8
}

func newRegisters(d manifests.Device) (*registers, error) {
	r := &registers{}
	byName := make(map[string]manifests.Register, len(d.Registers))
	for _, reg := range d.Registers {
		byName[reg.Name] = reg
		if !reg.Writable {
			for i := range reg.Type.Size() {
				r.readOnly[uint8(int(reg.Address)+i)] = true
			}
		}
	}
	if d.Sim == nil {
		return r, nil
	}
	for name, v := range d.Sim.Values {
		reg, ok := byName[name]
		if !ok {
			return nil, fmt.Errorf("sim: device %s: initial value for unknown register %q", d.Name, name)
		}
		b, err := i2c.EncodeRegister(reg, v)
		if err != nil {
			return nil, fmt.Errorf("sim: device %s: initial value of register %s: %w", d.Name, name, err)
		}
		for i, x := range b {
			r.file[uint8(int(reg.Address)+i)] = x
		}
	}
	return r, nil
}

func (d *registers) tx(_ time.Time, w, r []byte) error {
	if len(w) > 0 {
		d.ptr = w[0]
		for _, x := range w[1:] {
			if !d.readOnly[d.ptr] {
				d.file[d.ptr] = x
			}
			d.ptr++
		}
	}
	for i := range r {
		r[i] = d.file[d.ptr]
		d.ptr++
	}
	return nil
}
