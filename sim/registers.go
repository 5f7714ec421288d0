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
	regs     []manifests.Register
}

func newRegisters(d manifests.Device) (*registers, error) {
	r := &registers{regs: d.Registers}
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

func (d *registers) tx(_ time.Time, fs *faultState, w, r []byte) error {
	if len(w) > 0 {
		d.ptr = w[0]
		for _, x := range w[1:] {
			if !d.readOnly[d.ptr] {
				d.file[d.ptr] = x
			}
			d.ptr++
		}
	}
	if len(r) == 0 {
		return nil
	}
	file := &d.file
	if fs.is(manifests.FaultStuck) {
		// Writes still land; reads return the file as it was.
		if !fs.frozenValid {
			fs.frozen, fs.frozenValid = append([]byte(nil), d.file[:]...), true
		}
		file = (*[256]byte)(fs.frozen)
	}
	start := d.ptr
	for i := range r {
		r[i] = file[d.ptr]
		d.ptr++
	}
	if fs.is(manifests.FaultNoise) || fs.is(manifests.FaultImplausible) {
		d.distort(fs, start, r)
	}
	return nil
}

// distort applies a value fault to a read that starts at the fault's
// register: noise adds a spike to its engineering value, implausible
// replaces it (without a value: all ones, a railed reading).
func (d *registers) distort(fs *faultState, start uint8, r []byte) {
	reg := d.regs[0]
	for _, x := range d.regs {
		if x.Name == fs.f.Channel {
			reg = x
		}
	}
	n := reg.Type.Size()
	if reg.Address != start || len(r) < n {
		return
	}
	v, err := i2c.DecodeRegister(reg, r[:n])
	if err != nil {
		return
	}
	v, ok := fs.distorted(v)
	if !ok {
		for i := range n {
			r[i] = 0xFF
		}
		return
	}
	if b, err := i2c.EncodeRegister(reg, v); err == nil {
		copy(r, b)
	} else {
		for i := range n {
			r[i] = 0xFF // does not fit: the register rails
		}
	}
}

// addRegisters adds a simulated register-map device.
func addRegisters(w *World, d manifests.Device, _ *build) error {
	return w.addI2C(d, func() (device, error) { return newRegisters(d) })
}
