package modbus

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"github.com/promcp/promcp-device/drivers"
)

// FuzzReadResponse: the MBAP response readers never panic on bytes from a
// device (or line noise).
func FuzzReadResponse(f *testing.F) {
	f.Add([]byte{0, 1, 0, 0, 0, 5, 1, 3, 2, 0, 7})
	f.Add([]byte{0, 1, 0, 0, 0, 1, 1})
	f.Fuzz(func(t *testing.T, in []byte) {
		readMBAP(bytes.NewReader(in))
		var scratch [streamFrameMax]byte
		readStreamFrame(bytes.NewReader(in), &scratch)
	})
}

// rtuRequest builds the RTU request ADU of function fc to unit for qty
// items from addr (writes carry data: the value for 5 and 6, qty registers
// or bits for 15 and 16).
func rtuRequest(unit, fc byte, addr, qty uint16) []byte {
	req := []byte{unit, fc}
	req = binary.BigEndian.AppendUint16(req, addr)
	switch fc {
	case 15:
		req = binary.BigEndian.AppendUint16(req, qty)
		n := (int(qty) + 7) / 8
		req = append(append(req, byte(n)), make([]byte, n)...)
	case 16:
		req = binary.BigEndian.AppendUint16(req, qty)
		req = append(append(req, byte(2*qty)), make([]byte, 2*qty)...)
	default:
		req = binary.BigEndian.AppendUint16(req, qty)
	}
	return AppendCRC(req)
}

// FuzzReadRTUReply: whatever bytes arrive after a request, the RTU reply
// reader never panics, and a frame it accepts has a valid CRC, the
// request's unit, and its function (or that function's exception) with the
// length the request implies; a write's reply repeats what was written.
func FuzzReadRTUReply(f *testing.F) {
	f.Add(byte(1), byte(3), uint16(0), uint16(1), AppendCRC([]byte{1, 3, 2, 0, 7}))
	f.Add(byte(1), byte(3), uint16(0), uint16(1), append(AppendCRC([]byte{1, 3, 4, 0, 7, 0, 8}), AppendCRC([]byte{1, 3, 2, 0, 9})...))
	f.Add(byte(1), byte(4), uint16(0), uint16(2), append(AppendCRC([]byte{1, 3, 2, 0, 7}), AppendCRC([]byte{1, 4, 4, 0, 1, 0, 2})...))
	f.Add(byte(1), byte(3), uint16(0), uint16(1), AppendCRC([]byte{1, 0x83, 2}))
	f.Add(byte(2), byte(6), uint16(5), uint16(7), append([]byte{0xff, 0}, AppendCRC([]byte{2, 6, 0, 5, 0, 7})...))
	f.Add(byte(1), byte(16), uint16(0), uint16(2), AppendCRC([]byte{1, 16, 0, 0, 0, 2}))
	f.Add(byte(1), byte(1), uint16(0), uint16(9), AppendCRC([]byte{1, 1, 2, 0xff, 1}))
	f.Add(byte(1), byte(3), uint16(0), uint16(1), []byte{1, 3, 255})
	f.Fuzz(func(t *testing.T, unit, fc byte, addr, qty uint16, in []byte) {
		fc = []byte{1, 2, 3, 4, 5, 6, 15, 16}[fc%8]
		if fc == 15 || fc == 16 || fc <= 4 {
			qty = qty%120 + 1
		}
		req := rtuRequest(unit, fc, addr, qty)
		e, ok := expectRTU(req)
		if !ok {
			t.Fatalf("expectRTU(% x) refused a request this package sends", req)
		}
		rd := &rtuReader{r: bytes.NewReader(in)}
		frame, err := readRTUReply(rd, e)
		if err != nil {
			if !errors.Is(err, drivers.ErrCRC) && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("error %v: want ErrCRC or the end of input", err)
			}
			return
		}
		switch {
		case !CheckCRC(frame):
			t.Fatalf("accepted % x with a bad CRC", frame)
		case frame[0] != unit:
			t.Fatalf("accepted % x from unit %d for unit %d", frame, frame[0], unit)
		case frame[1] == fc|0x80:
			if len(frame) != 5 {
				t.Fatalf("accepted exception % x of %d bytes", frame, len(frame))
			}
		case frame[1] != fc || len(frame) != e.n:
			t.Fatalf("accepted % x for request % x (want function %d, %d bytes)", frame, req, fc, e.n)
		case (fc == 5 || fc == 6) && !bytes.Equal(frame, req):
			t.Fatalf("accepted % x as the echo of % x", frame, req)
		case (fc == 15 || fc == 16) && !bytes.Equal(frame[2:6], req[2:6]):
			t.Fatalf("accepted % x for a write of % x", frame, req[2:6])
		}
		if rd.Discarded+len(frame)+rd.Pending() > len(in) {
			t.Fatalf("read %d bytes of %d", rd.Discarded+len(frame)+rd.Pending(), len(in))
		}
	})
}

// TestRTUReplyMatching: the reply to the request in flight is taken; a
// late reply to another request, another unit's reply or noise before it
// is discarded; nothing else is taken for it.
func TestRTUReplyMatching(t *testing.T) {
	read1 := rtuRequest(1, 3, 10, 1) // holding 10, one register
	reply := AppendCRC([]byte{1, 3, 2, 0, 42})
	for _, tc := range []struct {
		name      string
		req       []byte
		in        []byte
		want      []byte // nil: no reply accepted
		discarded int
	}{
		{"reply", read1, reply, reply, 0},
		{"exception", read1, AppendCRC([]byte{1, 0x83, 2}), AppendCRC([]byte{1, 0x83, 2}), 0},
		{"late read of two first", read1, cat(AppendCRC([]byte{1, 3, 4, 0, 1, 0, 2}), reply), reply, 9},
		{"late input read first", read1, cat(AppendCRC([]byte{1, 4, 2, 0, 1}), reply), reply, 7},
		{"other unit first", read1, cat(AppendCRC([]byte{2, 3, 2, 0, 1}), reply), reply, 7},
		{"late write echo first", read1, cat(AppendCRC([]byte{1, 6, 0, 3, 0, 1}), reply), reply, 8},
		{"noise first", read1, cat([]byte{0x00, 0xff, 0x13}, reply), reply, 3},
		{"only a late read of two", read1, AppendCRC([]byte{1, 3, 4, 0, 1, 0, 2}), nil, 9},
		{"write echo of another value", rtuRequest(1, 6, 3, 7), AppendCRC([]byte{1, 6, 0, 3, 0, 8}), nil, 8},
		{"write echo", rtuRequest(1, 6, 3, 7), rtuRequest(1, 6, 3, 7), rtuRequest(1, 6, 3, 7), 0},
		{"write multiple of another address", rtuRequest(1, 16, 3, 2), AppendCRC([]byte{1, 16, 0, 4, 0, 2}), nil, 8},
		{"write multiple", rtuRequest(1, 16, 3, 2), AppendCRC([]byte{1, 16, 0, 3, 0, 2}), AppendCRC([]byte{1, 16, 0, 3, 0, 2}), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := expectRTU(tc.req)
			rd := &rtuReader{r: bytes.NewReader(tc.in)}
			got, err := readRTUReply(rd, e)
			if tc.want == nil {
				if err == nil {
					t.Fatalf("accepted % x for request % x", got, tc.req)
				}
			} else if err != nil || !bytes.Equal(got, tc.want) {
				t.Fatalf("readRTUReply = % x, %v; want % x", got, err, tc.want)
			}
			if rd.Discarded != tc.discarded {
				t.Errorf("discarded %d bytes, want %d", rd.Discarded, tc.discarded)
			}
		})
	}
}

func cat(b ...[]byte) []byte { return bytes.Join(b, nil) }

func TestCRC(t *testing.T) {
	// Read holding register 0 of unit 1: a frame every Modbus tool prints.
	got := AppendCRC([]byte{0x01, 0x03, 0x00, 0x00, 0x00, 0x01})
	if want := []byte{0x01, 0x03, 0x00, 0x00, 0x00, 0x01, 0x84, 0x0A}; !bytes.Equal(got, want) {
		t.Fatalf("AppendCRC = % x, want % x", got, want)
	}
	e, _ := expectRTU(got)
	if _, err := readRTUReply(&rtuReader{r: bytes.NewReader(AppendCRC([]byte{1, 3, 2, 0, 7})[:6])}, e); err == nil {
		t.Fatal("a truncated frame was accepted")
	}
	garbled := AppendCRC([]byte{1, 3, 2, 0, 7})
	garbled[6] ^= 0xFF
	if _, err := readRTUReply(&rtuReader{r: bytes.NewReader(garbled)}, e); !errors.Is(err, drivers.ErrCRC) {
		t.Fatalf("garbled frame: %v, want ErrCRC", err)
	}
}
