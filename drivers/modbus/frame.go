package modbus

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/promcp/promcp-device/drivers"
)

// CRC16 returns the Modbus RTU checksum of b (CRC-16/MODBUS: polynomial
// 0xA001 reflected, initial value 0xFFFF). On the wire it is sent low byte
// first.
func CRC16(b []byte) uint16 {
	crc := uint16(0xFFFF)
	for _, x := range b {
		crc ^= uint16(x)
		for range 8 {
			if crc&1 != 0 {
				crc = crc>>1 ^ 0xA001
			} else {
				crc >>= 1
			}
		}
	}
	return crc
}

// AppendCRC appends the RTU checksum of frame to it.
func AppendCRC(frame []byte) []byte {
	crc := CRC16(frame)
	return append(frame, byte(crc), byte(crc>>8))
}

// CheckCRC reports whether an RTU frame (checksum included) is intact.
func CheckCRC(frame []byte) bool {
	if len(frame) < 4 {
		return false
	}
	n := len(frame) - 2
	return CRC16(frame[:n]) == binary.LittleEndian.Uint16(frame[n:])
}

// readRTUResponse reads one RTU response from r: its length follows from
// the function code (an exception is 5 bytes; reads carry a byte count;
// single and multiple writes echo 8 bytes). It checks the CRC.
func readRTUResponse(r io.Reader) ([]byte, error) {
	buf := make([]byte, 2, 3+255+2) // the longest frame a byte count allows
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	var rest int
	switch fc := buf[1]; {
	case fc&0x80 != 0:
		rest = 3
	case fc >= 1 && fc <= 4:
		buf = buf[:3]
		if _, err := io.ReadFull(r, buf[2:3]); err != nil {
			return nil, err
		}
		rest = int(buf[2]) + 2
	case fc == 5 || fc == 6 || fc == 15 || fc == 16:
		rest = 6
	default:
		return nil, fmt.Errorf("%w: unexpected function code %d in an RTU response", ErrFrame, fc)
	}
	n := len(buf)
	buf = buf[:n+rest]
	if _, err := io.ReadFull(r, buf[n:]); err != nil {
		return nil, err
	}
	if !CheckCRC(buf) {
		return nil, fmt.Errorf("%w: RTU response % x", drivers.ErrCRC, buf)
	}
	return buf, nil
}

// readMBAP reads one Modbus TCP frame (7-byte MBAP header, then the PDU).
func readMBAP(r io.Reader) ([]byte, error) {
	buf := make([]byte, 7, 260)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	n := int(binary.BigEndian.Uint16(buf[4:6]))
	if n < 2 || n > 254 {
		return nil, fmt.Errorf("%w: MBAP length %d", ErrFrame, n)
	}
	buf = buf[:7+n-1]
	if _, err := io.ReadFull(r, buf[7:]); err != nil {
		return nil, err
	}
	return buf, nil
}

// readStreamFrame reads one response from a TCP stream, usually with a
// single read: a stream delivers a short frame whole, and the frame's
// header says how long it is. rtu selects RTU framing (CRC checked) over
// MBAP. Bytes past the frame (there are none with one request in flight)
// are dropped.
func readStreamFrame(r io.Reader, rtu bool) ([]byte, error) {
	buf := make([]byte, 7+255+2)
	least := 7
	if rtu {
		least = 5 // the shortest RTU response, an exception
	}
	n, err := io.ReadAtLeast(r, buf, least)
	if err != nil {
		return nil, err
	}
	var need int
	if rtu {
		switch fc := buf[1]; {
		case fc&0x80 != 0:
			need = 5
		case fc >= 1 && fc <= 4:
			need = 3 + int(buf[2]) + 2
		case fc == 5 || fc == 6 || fc == 15 || fc == 16:
			need = 8
		default:
			return nil, fmt.Errorf("%w: unexpected function code %d in an RTU response", ErrFrame, fc)
		}
	} else {
		l := int(binary.BigEndian.Uint16(buf[4:6]))
		if l < 2 || l > 254 {
			return nil, fmt.Errorf("%w: MBAP length %d", ErrFrame, l)
		}
		need = 6 + l
	}
	if n < need {
		if _, err := io.ReadFull(r, buf[n:need]); err != nil {
			return nil, err
		}
	}
	buf = buf[:need]
	if rtu && !CheckCRC(buf) {
		return nil, fmt.Errorf("%w: RTU response % x", drivers.ErrCRC, buf)
	}
	return buf, nil
}
