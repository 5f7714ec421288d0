package sim

import (
	"encoding/binary"

	"github.com/promcp/promcp-device/drivers/modbus"
	"github.com/promcp/promcp-device/manifests"
)

// handle answers one request PDU (function code first) and returns the
// response PDU, or nil when the slave stays silent. w.mu is held.
func (s *ModbusSlave) handle(pdu []byte) []byte {
	s.requests++
	if s.silent {
		return nil
	}
	if len(pdu) == 0 {
		return nil
	}
	fc := pdu[0]
	exc := func(code byte) []byte { return []byte{fc | 0x80, code} }
	if s.exception != 0 {
		return exc(s.exception)
	}
	s.w.advanceLocked()
	d := pdu[1:]
	u16 := func(i int) uint16 { return binary.BigEndian.Uint16(d[i:]) }
	switch fc {
	case 1, 2:
		if len(d) != 4 {
			return exc(modbus.ExceptionIllegalValue)
		}
		addr, n := u16(0), u16(2)
		if n < 1 || n > manifests.MaxReadBits {
			return exc(modbus.ExceptionIllegalValue)
		}
		bits := s.coils
		if fc == 2 {
			bits = s.discrete
		}
		out := make([]byte, 2+(int(n)+7)/8)
		out[0], out[1] = fc, byte((int(n)+7)/8)
		for i := range int(n) {
			v, ok := bits[addr+uint16(i)]
			if !ok || int(addr)+i > 0xFFFF {
				return exc(modbus.ExceptionIllegalAddress)
			}
			if v {
				out[2+i/8] |= 1 << (i % 8)
			}
		}
		return out
	case 3, 4:
		if len(d) != 4 {
			return exc(modbus.ExceptionIllegalValue)
		}
		addr, n := u16(0), u16(2)
		if n < 1 || n > manifests.MaxReadRegisters {
			return exc(modbus.ExceptionIllegalValue)
		}
		tab := s.holding
		if fc == 4 {
			tab = s.input
		}
		out := make([]byte, 2+2*int(n))
		out[0], out[1] = fc, byte(2*n)
		for i := range int(n) {
			v, ok := tab[addr+uint16(i)]
			if !ok || int(addr)+i > 0xFFFF {
				return exc(modbus.ExceptionIllegalAddress)
			}
			binary.BigEndian.PutUint16(out[2+2*i:], v)
		}
		return out
	case 5:
		if len(d) != 4 {
			return exc(modbus.ExceptionIllegalValue)
		}
		addr, v := u16(0), u16(2)
		if v != 0xFF00 && v != 0 {
			return exc(modbus.ExceptionIllegalValue)
		}
		if !s.writable[manifests.TableCoil][addr] {
			return exc(modbus.ExceptionIllegalAddress)
		}
		s.coils[addr] = v == 0xFF00
		return append([]byte{fc}, d...)
	case 6:
		if len(d) != 4 {
			return exc(modbus.ExceptionIllegalValue)
		}
		addr := u16(0)
		if !s.writable[manifests.TableHolding][addr] {
			return exc(modbus.ExceptionIllegalAddress)
		}
		s.holding[addr] = u16(2)
		return append([]byte{fc}, d...)
	case 15, 16:
		if len(d) < 5 {
			return exc(modbus.ExceptionIllegalValue)
		}
		addr, n, nb := u16(0), int(u16(2)), int(d[4])
		data := d[5:]
		want := 2 * n
		if fc == 15 {
			want = (n + 7) / 8
		}
		if n < 1 || nb != want || len(data) != nb || (fc == 16 && n > 123) || (fc == 15 && n > 1968) {
			return exc(modbus.ExceptionIllegalValue)
		}
		table := manifests.TableHolding
		if fc == 15 {
			table = manifests.TableCoil
		}
		for i := range n {
			if !s.writable[table][addr+uint16(i)] || int(addr)+i > 0xFFFF {
				return exc(modbus.ExceptionIllegalAddress)
			}
		}
		for i := range n {
			if fc == 15 {
				s.coils[addr+uint16(i)] = data[i/8]&(1<<(i%8)) != 0
			} else {
				s.holding[addr+uint16(i)] = binary.BigEndian.Uint16(data[2*i:])
			}
		}
		return []byte{fc, d[0], d[1], d[2], d[3]}
	}
	return exc(modbus.ExceptionIllegalFunction)
}
