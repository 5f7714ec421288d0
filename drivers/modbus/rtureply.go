package modbus

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/promcp/promcp-device/drivers"
)

// RTU frames carry no transaction id: a reply that arrives late (after its
// request timed out) looks like the reply to whatever was sent next. The
// master therefore takes only a reply whose unit, function and length fit
// the request in flight (and, for writes, that echoes it), discards any
// other frame on the line, and drains the line after a timeout (see
// serialTransport.settle) so that a late reply is not waiting when the
// next request goes out.

// rtuExpect is the reply an RTU request allows.
type rtuExpect struct {
	req  []byte // the request ADU, CRC included
	unit byte
	fc   byte
	n    int // length of a normal (not exception) reply, CRC included
}

// expectRTU returns what a reply to the RTU request req must look like:
// reads of N bits carry ceil(N/8) data bytes, reads of N registers 2N
// (3+2N+2 bytes in all), single writes echo the request, multiple writes
// answer 8 bytes repeating address and quantity. ok is false for a request
// this package does not send (its reply cannot be matched).
func expectRTU(req []byte) (e rtuExpect, ok bool) {
	if len(req) < 8 {
		return e, false
	}
	e = rtuExpect{req: req, unit: req[0], fc: req[1]}
	qty := int(binary.BigEndian.Uint16(req[4:6]))
	switch e.fc {
	case 1, 2:
		e.n = 3 + (qty+7)/8 + 2
	case 3, 4:
		e.n = 3 + 2*qty + 2
	case 5, 6, 15, 16:
		e.n = 8
	default:
		return e, false
	}
	return e, e.n <= 3+255+2
}

// header reports whether frame starts as a reply to e would: same unit,
// and the function code or its exception.
func (e rtuExpect) header(frame []byte) bool {
	return len(frame) >= 2 && frame[0] == e.unit && (frame[1] == e.fc || frame[1] == e.fc|0x80)
}

// matches reports whether frame (CRC checked by the caller) is the reply
// to e's request: an exception to its function, or a normal reply of the
// length the request implies that, for writes, repeats what was written.
func (e rtuExpect) matches(frame []byte) bool {
	if !e.header(frame) {
		return false
	}
	if frame[1] == e.fc|0x80 {
		return len(frame) == 5
	}
	if len(frame) != e.n {
		return false
	}
	switch e.fc {
	case 5, 6:
		return bytes.Equal(frame, e.req[:8])
	case 15, 16:
		return bytes.Equal(frame[2:6], e.req[2:6])
	}
	return int(frame[2]) == e.n-5
}

// rtuFrameLen returns the length an RTU reply starting with head (2 bytes,
// or 3 when the function carries a byte count) has, judged by its function
// code alone; 0 for a function no reply has. more is true when the third
// byte is needed first.
func rtuFrameLen(head []byte) (n int, more bool) {
	switch fc := head[1]; {
	case fc&0x80 != 0:
		return 5, false
	case fc >= 1 && fc <= 4:
		if len(head) < 3 {
			return 0, true
		}
		return 3 + int(head[2]) + 2, false
	case fc == 5 || fc == 6 || fc == 15 || fc == 16:
		return 8, false
	}
	return 0, false
}

// rtuReader reads RTU frames from a byte stream, keeping what it read past
// the frame it returns.
type rtuReader struct {
	r   io.Reader
	buf []byte
	// Discarded counts the bytes read and thrown away: frames that were not
	// the reply, and noise.
	Discarded int
}

// fill reads until at least n bytes are buffered.
func (f *rtuReader) fill(n int) error {
	var chunk [64]byte
	for len(f.buf) < n {
		k, err := f.r.Read(chunk[:])
		f.buf = append(f.buf, chunk[:k]...)
		if err != nil && len(f.buf) < n {
			if err == io.EOF && len(f.buf) > 0 {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
	}
	return nil
}

func (f *rtuReader) drop(n int) {
	f.Discarded += n
	f.buf = f.buf[n:]
}

// readRTUReply reads from f until the reply to e's request has arrived,
// and returns it. Whole frames that are not that reply (a late reply to
// an earlier request, a reply of another unit, an echo) are discarded, and
// so are bytes that cannot start a reply (noise: the reader slides by one
// byte until a frame starts); reading goes on until the reader's deadline.
// A frame that starts as the reply would but fails its CRC is ErrCRC.
func readRTUReply(f *rtuReader, e rtuExpect) ([]byte, error) {
	for {
		if err := f.fill(2); err != nil {
			return nil, err
		}
		n, more := rtuFrameLen(f.buf)
		if more {
			if err := f.fill(3); err != nil {
				return nil, err
			}
			n, _ = rtuFrameLen(f.buf)
		}
		if n == 0 {
			f.drop(1) // no reply starts so: noise, or the middle of a frame
			continue
		}
		if err := f.fill(n); err != nil {
			return nil, err
		}
		frame := f.buf[:n]
		switch {
		case !CheckCRC(frame) && e.header(frame) && (frame[1] != e.fc || n == e.n):
			f.drop(n)
			return nil, fmt.Errorf("%w: RTU response % x", drivers.ErrCRC, frame)
		case !CheckCRC(frame):
			f.drop(1) // not a frame here: slide
		case e.matches(frame):
			out := bytes.Clone(frame)
			f.buf = f.buf[n:]
			return out, nil
		default:
			f.drop(n) // an intact frame, but not the reply to this request
		}
	}
}

// Pending returns how many bytes were read past the last frame returned.
func (f *rtuReader) Pending() int { return len(f.buf) }
