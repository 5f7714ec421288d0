package i2c

import (
	"context"
	"fmt"

	"github.com/promcp/promcp-device/drivers/i2c/i2cconf"
)

// Registers is a generic register-map device: each named register is read by
// writing its one-byte address (the register pointer) and reading
// Type.Size() bytes in the same transaction, and written with one
// transaction carrying the address followed by the encoded value.
//
// The zero value is not usable; create one with [NewRegisters]. Registers is
// safe for concurrent use: every operation is a single bus transaction.
type Registers struct {
	bus  *Bus
	addr uint16
	regs map[string]i2cconf.Register
}

// NewRegisters returns the device at addr on bus with the register map regs
// (names are unique in a validated manifest; a later duplicate wins). It does
// no I/O.
func NewRegisters(bus *Bus, addr uint16, regs []i2cconf.Register) *Registers {
	m := make(map[string]i2cconf.Register, len(regs))
	for _, r := range regs {
		m[r.Name] = r
	}
	return &Registers{bus: bus, addr: addr, regs: m}
}

// Register returns the definition of the register called name.
func (d *Registers) Register(name string) (i2cconf.Register, bool) {
	r, ok := d.regs[name]
	return r, ok
}

// Read returns the engineering value of the register called name: the raw
// value decoded per its type and byte order, times Scale (0 counts as 1), plus
// Offset.
//
// An unknown name yields [ErrUnknownRegister] without bus traffic; bus errors
// are classified as [Bus.Tx] describes.
func (d *Registers) Read(ctx context.Context, name string) (float64, error) {
	reg, err := d.lookup("read", name)
	if err != nil {
		return 0, err
	}
	b := make([]byte, reg.Type.Size())
	if err := d.bus.Tx(ctx, d.addr, []byte{reg.Address}, b); err != nil {
		return 0, fmt.Errorf("register %s read: %w", name, err)
	}
	v, err := DecodeRegister(reg, b)
	if err != nil {
		return 0, d.errorf("read", name, "%w", err)
	}
	return v, nil
}

// Write sets the register called name to the engineering value v, encoded as
// round((v-Offset)/Scale) for integer types.
//
// Before any bus traffic, Write refuses an unknown name
// ([ErrUnknownRegister]), a register not declared writable ([ErrReadOnly]) and
// a value that does not fit the register's type ([ErrOutOfRange], with the
// register's range in engineering units).
func (d *Registers) Write(ctx context.Context, name string, v float64) error {
	reg, err := d.lookup("write", name)
	if err != nil {
		return err
	}
	if !reg.Writable {
		return d.errorf("write", name, "%w", ErrReadOnly)
	}
	b, err := EncodeRegister(reg, v)
	if err != nil {
		return d.errorf("write", name, "%w", err)
	}
	w := append([]byte{reg.Address}, b...)
	if err := d.bus.Tx(ctx, d.addr, w, nil); err != nil {
		return fmt.Errorf("register %s write: %w", name, err)
	}
	return nil
}

func (d *Registers) lookup(op, name string) (i2cconf.Register, error) {
	reg, ok := d.regs[name]
	if !ok {
		return i2cconf.Register{}, d.errorf(op, name, "%w", ErrUnknownRegister)
	}
	return reg, nil
}

// errorf formats errors that arise above the bus like the bus's own, prefixed
// with the register and the operation: "register dimmer write: i2c 1 addr
// 0x20: ...".
func (d *Registers) errorf(op, name, format string, args ...any) error {
	return fmt.Errorf("register %s %s: i2c %s addr %s: "+format, append([]any{name, op, d.bus.Name(), addrString(d.addr)}, args...)...)
}
