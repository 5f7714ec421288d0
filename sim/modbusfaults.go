package sim

import (
	"encoding/binary"
	"math"
	"slices"
	"time"

	"github.com/promcp/promcp-device/drivers/modbus"
	"github.com/promcp/promcp-device/drivers/modbus/modbusconf"
	"github.com/promcp/promcp-device/manifests"
)

// answerLocked answers one request PDU with the device's active fault
// applied, at the bus: dropout and timeout leave the request unanswered
// (timeout after holding the line), nack answers a device-failure
// exception, crc garbles the RTU checksum, stuck repeats the first answer
// to each request, noise and implausible distort the fault's register in
// read responses, slow delays the answer. It returns the response (nil for
// none), whether to garble its CRC and how long to wait before answering.
// w.mu is held.
func (s *ModbusSlave) answerLocked(pdu []byte) (res []byte, garble bool, delay time.Duration) {
	fs := s.w.faultLocked(s.name, s.w.advanceLocked())
	delay = max(fs.delay(s.busTimeout()), s.lateLocked())
	switch {
	case fs.is(manifests.FaultDropout), fs.is(manifests.FaultTimeout):
		s.requests++
		return nil, false, delay
	case fs.is(manifests.FaultNACK) && len(pdu) > 0:
		s.requests++
		return []byte{pdu[0] | 0x80, modbus.ExceptionDeviceFailure}, s.garble, delay
	}
	res = s.handle(pdu)
	if fs.is(manifests.FaultStuck) && res != nil {
		if fs.frozenPDU == nil {
			fs.frozenPDU = map[string][]byte{}
		}
		if old, ok := fs.frozenPDU[string(pdu)]; ok {
			res = slices.Clone(old)
		} else {
			fs.frozenPDU[string(pdu)] = slices.Clone(res)
		}
	}
	if fs.is(manifests.FaultNoise) || fs.is(manifests.FaultImplausible) {
		s.distort(fs, pdu, res)
	}
	return res, s.garble || fs.is(manifests.FaultCRC), delay
}

// busTimeout is the timeout the manifest gives the slave's line.
func (s *ModbusSlave) busTimeout() time.Duration {
	if b, ok := s.w.modbusBus[s.w.slaveBus[s.name]]; ok && b.Timeout > 0 {
		return b.Timeout
	}
	return manifests.DefaultTimeout
}

// distort applies a value fault to a register read (function 3 or 4) that
// covers the fault's register (its channel, or the lowest-addressed numeric
// register of the table read): noise adds a spike to its engineering value,
// implausible replaces it (without a value: a railed reading, the type's
// largest).
func (s *ModbusSlave) distort(fs *faultState, req, res []byte) {
	if len(req) != 5 || len(res) < 2 || res[0] != req[0] || (req[0] != 3 && req[0] != 4) {
		return
	}
	table := modbusconf.TableHolding
	if req[0] == 4 {
		table = modbusconf.TableInput
	}
	start, n := binary.BigEndian.Uint16(req[1:]), binary.BigEndian.Uint16(req[3:])
	var reg *manifests.ModbusRegister
	for _, r := range s.regs {
		if r.Table != table || r.Type == modbusconf.DataBool || r.Type == modbusconf.DataString {
			continue
		}
		if fs.f.Channel != "" && r.Name != fs.f.Channel {
			continue
		}
		if reg == nil || r.Address < reg.Address {
			reg = &r
		}
	}
	if reg == nil {
		return
	}
	c := modbus.CodecOf(*reg)
	words := uint16(c.Words())
	if reg.Address < start || reg.Address+words > start+n || len(res) < 2+2*int(n) {
		return
	}
	wire := res[2+2*int(reg.Address-start) : 2+2*int(reg.Address-start+words)]
	raw, err := c.Decode(wire)
	if err != nil {
		return
	}
	v, ok := modbus.Engineering(raw, reg.Scale, reg.Offset).(float64)
	if !ok {
		return
	}
	if v, ok = fs.distorted(v); !ok {
		v = railed(*reg)
	}
	r, err := c.Raw(v, reg.Scale, reg.Offset)
	if err == nil {
		var b []byte
		if b, err = c.Encode(r); err == nil {
			copy(wire, b)
			return
		}
	}
	for i := range wire {
		wire[i] = 0xFF // does not fit: the register rails
	}
}

// railed is a register's largest engineering value: what a device whose
// input has railed reports.
func railed(r manifests.ModbusRegister) float64 {
	var raw float64
	switch r.Type {
	case modbusconf.DataFloat32:
		raw = math.MaxFloat32
	case modbusconf.DataFloat64:
		raw = math.MaxFloat32 // JSON carries it; MaxFloat64 scaled may not
	case modbusconf.DataInt16:
		raw = math.MaxInt16
	case modbusconf.DataInt32:
		raw = math.MaxInt32
	case modbusconf.DataUint16:
		raw = math.MaxUint16
	case modbusconf.DataUint32:
		raw = math.MaxUint32
	default:
		raw = math.MaxInt32
	}
	scale := r.Scale
	if scale == 0 {
		scale = 1
	}
	return raw*scale + r.Offset
}
