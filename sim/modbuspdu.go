package sim

import (
	"encoding/binary"

	"github.com/promcp/promcp-device/drivers/modbus"
	"github.com/promcp/promcp-device/drivers/modbus/modbusconf"
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
	case 1:
		out, code = readTable(fc, d, manifests.MaxReadBits, s.coils, bitBytes, putBit)
	case 2:
		out, code = readTable(fc, d, manifests.MaxReadBits, s.discrete, bitBytes, putBit)
	case 3:
		out, code = readTable(fc, d, manifests.MaxReadRegisters, s.holding, wordBytes, putWord)
	case 4:
		out, code = readTable(fc, d, manifests.MaxReadRegisters, s.input, wordBytes, putWord)
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

// readTable answers a read (FC 1-4) of 1..most values of tab: fc, the
// byte count, then the values, packed by put into size(n) bytes. code is
// the exception to answer, 0 when the request is valid and the device has
// every address in its range.
func readTable[V any](fc byte, d []byte, most uint16, tab map[uint16]V, size func(n int) int, put func(p []byte, i int, v V)) (out []byte, code byte) {
	if len(d) != 4 {
		return nil, modbus.ExceptionIllegalValue
	}
	addr, n := u16(d, 0), u16(d, 2)
	if n < 1 || n > most {
		return nil, modbus.ExceptionIllegalValue
	}
	out = make([]byte, 2+size(int(n)))
	out[0], out[1] = fc, byte(size(int(n)))
	for i := range int(n) {
		v, ok := tab[addr+uint16(i)]
		if !ok || int(addr)+i > 0xFFFF {
			return nil, modbus.ExceptionIllegalAddress
		}
		put(out[2:], i, v)
	}
	return out, 0
}

// bitBytes and putBit pack bits eight to a byte, the first in the low
// bit (FC 1, 2, 15).
func bitBytes(n int) int { return (n + 7) / 8 }

func putBit(p []byte, i int, on bool) {
	if on {
		p[i/8] |= 1 << (i % 8)
	}
}

// wordBytes and putWord pack registers two bytes each, big endian (FC 3,
// 4, 16).
func wordBytes(n int) int { return 2 * n }

func putWord(p []byte, i int, v uint16) { binary.BigEndian.PutUint16(p[2*i:], v) }

// writeCoil answers FC 5: 0xFF00 sets the coil, 0 clears it.
func (s *ModbusSlave) writeCoil(fc byte, d []byte) ([]byte, byte) {
	if len(d) != 4 {
		return nil, modbus.ExceptionIllegalValue
	}
	addr, v := u16(d, 0), u16(d, 2)
	if v != 0xFF00 && v != 0 {
		return nil, modbus.ExceptionIllegalValue
	}
	if !s.writable[modbusconf.TableCoil][addr] {
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
	if !s.writable[modbusconf.TableHolding][addr] {
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
	want := wordBytes(n)
	if fc == 15 {
		want = bitBytes(n)
	}
	if n < 1 || nb != want || len(data) != nb || (fc == 16 && n > 123) || (fc == 15 && n > 1968) {
		return nil, modbus.ExceptionIllegalValue
	}
	table := modbusconf.TableHolding
	if fc == 15 {
		table = modbusconf.TableCoil
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
