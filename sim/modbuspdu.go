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
	if s.silent || len(pdu) == 0 {
		return nil
	}
	fc := pdu[0]
	if s.exception != 0 {
		return []byte{fc | 0x80, s.exception}
	}
	s.w.advanceLocked()
	d := pdu[1:]
	var out []byte
	var code byte
	switch fc {
	case 1, 2:
		out, code = s.readBits(fc, d)
	case 3, 4:
		out, code = s.readRegisters(fc, d)
	case 5:
		out, code = s.writeCoil(fc, d)
	case 6:
		out, code = s.writeRegister(fc, d)
	case 15, 16:
		out, code = s.writeMultiple(fc, d)
	default:
		code = modbus.ExceptionIllegalFunction
	}
	if code != 0 {
		return []byte{fc | 0x80, code}
	}
	return out
}

// u16 reads the big-endian word at d[i:].
func u16(d []byte, i int) uint16 { return binary.BigEndian.Uint16(d[i:]) }

// readRequest decodes the start address and count of a read (FC 1-4); the
// count must be 1..most. code is the exception to answer, 0 when valid.
func readRequest(d []byte, most uint16) (addr, n uint16, code byte) {
	if len(d) != 4 {
		return 0, 0, modbus.ExceptionIllegalValue
	}
	addr, n = u16(d, 0), u16(d, 2)
	if n < 1 || n > most {
		return 0, 0, modbus.ExceptionIllegalValue
	}
	return addr, n, 0
}

// readBits answers FC 1 (coils) and FC 2 (discrete inputs).
func (s *ModbusSlave) readBits(fc byte, d []byte) ([]byte, byte) {
	addr, n, code := readRequest(d, manifests.MaxReadBits)
	if code != 0 {
		return nil, code
	}
	bits := s.coils
	if fc == 2 {
		bits = s.discrete
	}
	out := make([]byte, 2+(int(n)+7)/8)
	out[0], out[1] = fc, byte((int(n)+7)/8)
	return out, readRange(bits, addr, n, func(i int, v bool) {
		if v {
			out[2+i/8] |= 1 << (i % 8)
		}
	})
}

// readRegisters answers FC 3 (holding) and FC 4 (input registers).
func (s *ModbusSlave) readRegisters(fc byte, d []byte) ([]byte, byte) {
	addr, n, code := readRequest(d, manifests.MaxReadRegisters)
	if code != 0 {
		return nil, code
	}
	tab := s.holding
	if fc == 4 {
		tab = s.input
	}
	out := make([]byte, 2+2*int(n))
	out[0], out[1] = fc, byte(2*n)
	return out, readRange(tab, addr, n, func(i int, v uint16) {
		binary.BigEndian.PutUint16(out[2+2*i:], v)
	})
}

// readRange passes the n values of tab from addr to put, in order. It
// returns the exception for an address the device does not have, else 0.
func readRange[V any](tab map[uint16]V, addr, n uint16, put func(i int, v V)) byte {
	for i := range int(n) {
		v, ok := tab[addr+uint16(i)]
		if !ok || int(addr)+i > 0xFFFF {
			return modbus.ExceptionIllegalAddress
		}
		put(i, v)
	}
	return 0
}

// writeCoil answers FC 5: 0xFF00 sets the coil, 0 clears it.
func (s *ModbusSlave) writeCoil(fc byte, d []byte) ([]byte, byte) {
	if len(d) != 4 {
		return nil, modbus.ExceptionIllegalValue
	}
	addr, v := u16(d, 0), u16(d, 2)
	if v != 0xFF00 && v != 0 {
		return nil, modbus.ExceptionIllegalValue
	}
	if !s.writable[manifests.TableCoil][addr] {
		return nil, modbus.ExceptionIllegalAddress
	}
	s.coils[addr] = v == 0xFF00
	return append([]byte{fc}, d...), 0
}

// writeRegister answers FC 6.
func (s *ModbusSlave) writeRegister(fc byte, d []byte) ([]byte, byte) {
	if len(d) != 4 {
		return nil, modbus.ExceptionIllegalValue
	}
	addr := u16(d, 0)
	if !s.writable[manifests.TableHolding][addr] {
		return nil, modbus.ExceptionIllegalAddress
	}
	s.holding[addr] = u16(d, 2)
	return append([]byte{fc}, d...), 0
}

// writeMultiple answers FC 15 (coils) and FC 16 (holding registers). It
// writes nothing unless every address in the range is writable.
func (s *ModbusSlave) writeMultiple(fc byte, d []byte) ([]byte, byte) {
	if len(d) < 5 {
		return nil, modbus.ExceptionIllegalValue
	}
	addr, n, nb := u16(d, 0), int(u16(d, 2)), int(d[4])
	data := d[5:]
	want := 2 * n
	if fc == 15 {
		want = (n + 7) / 8
	}
	if n < 1 || nb != want || len(data) != nb || (fc == 16 && n > 123) || (fc == 15 && n > 1968) {
		return nil, modbus.ExceptionIllegalValue
	}
	table := manifests.TableHolding
	if fc == 15 {
		table = manifests.TableCoil
	}
	for i := range n {
		if !s.writable[table][addr+uint16(i)] || int(addr)+i > 0xFFFF {
			return nil, modbus.ExceptionIllegalAddress
		}
	}
	for i := range n {
		if fc == 15 {
			s.coils[addr+uint16(i)] = data[i/8]&(1<<(i%8)) != 0
		} else {
			s.holding[addr+uint16(i)] = binary.BigEndian.Uint16(data[2*i:])
		}
	}
	return []byte{fc, d[0], d[1], d[2], d[3]}, 0
}
