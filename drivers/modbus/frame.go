package modbus

import (
	"encoding/binary"
	"fmt"
	"io"
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

// streamFrameMax is the longest MBAP frame readStreamFrame reads into its
// buffer (header, the longest PDU, and room to spare).
const streamFrameMax = 7 + 255 + 2

// readStreamFrame reads one MBAP response from a TCP stream, usually with
// a single read: a stream delivers a short frame whole, and the MBAP header
// says how long it is. Bytes past the frame (there are none with one
// request in flight) are dropped. RTU frames on a stream are read by
// readRTUReply instead, which matches them to the request. It reads into
// scratch (the transport's, reused) and returns a copy of just the frame,
// which the caller may keep: the response's data is a reading's grounds.
func readStreamFrame(r io.Reader, scratch *[streamFrameMax]byte) ([]byte, error) {
	buf := scratch[:]
	n, err := io.ReadAtLeast(r, buf, 7)
	if err != nil {
		return nil, err
	}
	l := int(binary.BigEndian.Uint16(buf[4:6]))
	if l < 2 || l > 254 {
		return nil, fmt.Errorf("%w: MBAP length %d", ErrFrame, l)
	}
	need := 6 + l
	if n < need {
		if _, err := io.ReadFull(r, buf[n:need]); err != nil {
			return nil, err
		}
	}
	return append([]byte(nil), buf[:need]...), nil
}
