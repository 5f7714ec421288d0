package modbus

import (
	"context"
	"fmt"
	"slices"

	"github.com/promcp/promcp-device/drivers/modbus/modbusconf"
)

// Point is one named value of a device's register map, bound to the span
// of registers it is read with. Reading any point of a span reads the whole
// span in one transaction, and concurrent reads of points in the same span
// share it.
type Point struct {
	unit  *Unit
	reg   modbusconf.Register
	codec Codec
	span  span
}

// span is a run of registers (or bits) of one table read together.
type span struct {
	table        modbusconf.Table
	start, count uint16
}

// Points plans the reads of a register map: registers of one table that
// are contiguous or overlap are read together as long as the run stays
// within maxSpan registers (bits, for coil and discrete); maxSpan <= 1
// reads each register alone. It returns the points by register name.
func (u *Unit) Points(regs []modbusconf.Register, maxSpan int) map[string]*Point {
	points := make(map[string]*Point, len(regs))
	byTable := map[modbusconf.Table][]modbusconf.Register{}
	for _, r := range regs {
		byTable[r.Table] = append(byTable[r.Table], r)
	}
	for table, rs := range byTable {
		slices.SortStableFunc(rs, func(a, b modbusconf.Register) int { return int(a.Address) - int(b.Address) })
		var cur []modbusconf.Register
		var s span
		flush := func() {
			for _, r := range cur {
				points[r.Name] = &Point{unit: u, reg: r, codec: CodecOf(r), span: s}
			}
			cur = cur[:0]
		}
		for _, r := range rs {
			w := words(r)
			end := int(s.start) + int(s.count)
			if len(cur) > 0 && int(r.Address) <= end && max(end, int(r.Address)+w)-int(s.start) <= maxSpan {
				s.count = uint16(max(end, int(r.Address)+w) - int(s.start))
				cur = append(cur, r)
				continue
			}
			flush()
			s = span{table: table, start: r.Address, count: uint16(w)}
			cur = append(cur, r)
		}
		flush()
	}
	return points
}

func words(r modbusconf.Register) int {
	if r.Table.IsBits() {
		return 1
	}
	return r.Words()
}

// Register returns the point's manifest register.
func (p *Point) Register() modbusconf.Register { return p.reg }

// Span returns the first address and the count of the registers (or bits)
// read to get this point.
func (p *Point) Span() (start, count uint16) { return p.span.start, p.span.count }

// Read reads the point and returns its engineering value: float64 for
// numbers (raw*scale + offset), bool, or string.
func (p *Point) Read(ctx context.Context) (any, error) {
	s := p.span
	if s.table.IsBits() {
		bits, err := p.unit.ReadBits(ctx, s.table, s.start, s.count)
		if err != nil {
			return nil, err
		}
		return bits[p.reg.Address-s.start], nil
	}
	b, err := p.unit.ReadRegisters(ctx, s.table, s.start, s.count)
	if err != nil {
		return nil, err
	}
	off := 2 * int(p.reg.Address-s.start)
	raw, err := p.codec.Decode(b[off : off+2*p.codec.Words()])
	if err != nil {
		return nil, fmt.Errorf("modbus unit %d register %s: %w", p.unit.id, p.reg.Name, err)
	}
	return Engineering(raw, p.reg.Scale, p.reg.Offset), nil
}

// Write writes an engineering value (float64 or bool) to the point: a coil
// with function 5, a holding register with the same codec reads use
// (function 6 for one register, 16 for more). A value that does not fit
// the register fails with ErrOutOfRange before anything is sent.
func (p *Point) Write(ctx context.Context, v any) error {
	if !p.reg.Writable {
		return fmt.Errorf("modbus unit %d register %s is not writable", p.unit.id, p.reg.Name)
	}
	switch p.reg.Table {
	case modbusconf.TableCoil:
		on, ok := v.(bool)
		if !ok {
			return fmt.Errorf("modbus unit %d coil %s: %w: %v (%T), want a bool", p.unit.id, p.reg.Name, ErrOutOfRange, v, v)
		}
		return p.unit.WriteCoil(ctx, p.reg.Address, on)
	case modbusconf.TableHolding:
		raw, err := p.codec.Raw(v, p.reg.Scale, p.reg.Offset)
		if err != nil {
			return fmt.Errorf("modbus unit %d register %s: %w", p.unit.id, p.reg.Name, err)
		}
		wire, err := p.codec.Encode(raw)
		if err != nil {
			return fmt.Errorf("modbus unit %d register %s: %w", p.unit.id, p.reg.Name, err)
		}
		return p.unit.WriteRegisters(ctx, p.reg.Address, wire)
	}
	return fmt.Errorf("modbus unit %d register %s: the %s table is read-only", p.unit.id, p.reg.Name, p.reg.Table)
}
