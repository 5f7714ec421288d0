package modbus

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/drivers"
)

// transport carries one request at a time for goburrow's client. The Line
// calls settle and prepare (under its turn, with the caller's ctx) before
// each transaction, then goburrow calls Send; after a failure the Line
// calls reset so the next transaction starts clean.
type transport interface {
	// settle readies the line for the next request, to unit, before its
	// time starts counting: on RTU it drains what a failed or untidy
	// transaction left on the line and keeps the inter-frame silence.
	settle(ctx context.Context, unit uint8) error
	// prepare readies the transport for one transaction that must end by
	// deadline: connects if needed.
	prepare(ctx context.Context, deadline time.Time) error
	// Send writes one request ADU and reads its response.
	Send(adu []byte) ([]byte, error)
	// abort makes a Send in progress return as soon as it can.
	abort()
	// reset drops whatever state a failed transaction left (a connection,
	// stale input).
	reset()
	// discards returns the bytes read and thrown away (frames that were not
	// the reply in flight, late replies drained) since it was last called.
	discards() uint64
	Close() error
}

// Dialer connects to a Modbus TCP or RTU-over-TCP endpoint. net.Dialer's
// DialContext with the network bound fits; so does the simulator's.
type Dialer func(ctx context.Context) (net.Conn, error)

// streamTransport speaks MBAP or RTU on a TCP connection that it dials on
// demand and redials after the peer drops it.
type streamTransport struct {
	dial  Dialer
	rtu   bool // RTU frames instead of MBAP
	conn  net.Conn
	fresh bool      // conn was dialled for the armed transaction
	ready time.Time // deadline of the armed transaction
	// ctx is the armed transaction's caller's, for redial; set by prepare
	// for that one transaction (kept, not used, until the next).
	ctx context.Context
	// stray counts bytes discarded on an RTU stream.
	stray uint64
	// frame is where an MBAP response is read (one transaction at a time).
	frame [streamFrameMax]byte
}

func (t *streamTransport) settle(context.Context, uint8) error { return nil }

func (t *streamTransport) discards() uint64 {
	n := t.stray
	t.stray = 0
	return n
}

func (t *streamTransport) prepare(ctx context.Context, deadline time.Time) error {
	t.ready, t.ctx = deadline, ctx
	if t.conn == nil {
		return t.redial()
	}
	t.fresh = false
	return t.conn.SetDeadline(deadline)
}

// redial connects within the armed transaction, under its caller's ctx
// and deadline.
func (t *streamTransport) redial() error {
	dctx, cancel := context.WithDeadline(t.ctx, t.ready)
	defer cancel()
	c, err := t.dial(dctx)
	if err != nil {
		return fmt.Errorf("%w: dial: %w", errPeer, err)
	}
	t.conn, t.fresh = c, true
	return c.SetDeadline(t.ready)
}

// Send sends adu and reads the response. When a connection kept from an
// earlier transaction turns out to be closed by the peer (an idle device
// or NAT dropping it), Send redials once and sends again: the request
// never reached a live connection.
func (t *streamTransport) Send(adu []byte) ([]byte, error) {
	if t.conn == nil {
		return nil, fmt.Errorf("%w: not connected", errPeer)
	}
	res, err := t.roundTrip(adu)
	if err != nil && !t.fresh && errors.Is(err, errPeer) {
		t.reset()
		if derr := t.redial(); derr != nil {
			return nil, derr
		}
		res, err = t.roundTrip(adu)
	}
	return res, err
}

func (t *streamTransport) roundTrip(adu []byte) ([]byte, error) {
	if _, err := t.conn.Write(adu); err != nil {
		return nil, streamError(err)
	}
	if !t.rtu {
		res, err := readStreamFrame(t.conn, &t.frame)
		if err != nil {
			return nil, streamError(err)
		}
		return res, nil
	}
	exp, ok := expectRTU(adu)
	if !ok {
		return nil, fmt.Errorf("%w: request % x: no reply to it can be matched", ErrFrame, adu)
	}
	rd := &rtuReader{r: t.conn}
	res, err := readRTUReply(rd, exp)
	if rd.Discarded > 0 || rd.Pending() > 0 {
		// Something besides the reply came down this connection: start the
		// next transaction on a fresh one rather than read it as a reply.
		t.stray += uint64(rd.Discarded + rd.Pending())
		defer t.reset()
	}
	if err != nil {
		return nil, streamError(err)
	}
	return res, nil
}

// streamError classifies a connection error: a timeout, or the peer gone.
func streamError(err error) error {
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("%w: %w", drivers.ErrTimeout, err)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("%w: %w", errPeer, err)
	}
	return err
}

func (t *streamTransport) abort() {
	if t.conn != nil {
		t.conn.SetDeadline(time.Unix(1, 0))
	}
}

func (t *streamTransport) reset() {
	if t.conn != nil {
		t.conn.Close()
		t.conn = nil
	}
}

func (t *streamTransport) Close() error {
	t.reset()
	return nil
}

// Port is what the RTU transport needs of a serial port; go.bug.st/serial's
// Port has it. Ports that also have ResetInputBuffer() error, SetRTS(bool)
// error and Drain() error get stale input flushed and RTS direction control.
type Port interface {
	io.ReadWriteCloser
	// SetReadTimeout bounds each Read; a Read that times out returns 0, nil.
	SetReadTimeout(t time.Duration) error
}

// serialTransport speaks RTU on a serial port. It takes only the reply
// that fits the request in flight (readRTUReply), flushes stale input
// before each request, and, after anything untidy on the line (a timeout,
// a stray frame, bytes past the reply, an error), drains the line before
// the next request: it reads and discards until the line has been silent
// for the inter-frame gap. After a timeout, the next request to the same
// unit waits longer: the line is drained until as long again as the
// request was given has passed, so that a reply up to that late is drained
// rather than taken for the new request's. A request to another unit need
// not wait: a late reply, not being from its unit, is discarded when it
// comes.
type serialTransport struct {
	port     Port
	rtsCtl   bool          // raise RTS while sending
	gap      time.Duration // inter-frame silence
	clock    clock.Clock
	last     time.Time // end of the last frame on the line
	deadline time.Time

	dirty bool                // drain (for the gap at least) before the next request
	late  map[uint8]time.Time // unit → until when a late reply from it may come
	stray uint64              // bytes discarded since discards
}

// maxDrain bounds the bytes one drain discards: a line that never falls
// silent fails the transaction instead of holding the line for ever.
const maxDrain = 4096

func (t *serialTransport) settle(ctx context.Context, unit uint8) error {
	now := t.clock.Now()
	var until time.Time
	if t.dirty {
		until = t.last.Add(t.gap)
	}
	if l, ok := t.late[unit]; ok {
		if now.Before(l) {
			until = latest(until, l)
		} else {
			delete(t.late, unit)
		}
	}
	if !until.IsZero() {
		if err := t.drain(ctx, until); err != nil {
			return err
		}
		delete(t.late, unit)
	}
	if wait := t.last.Add(t.gap).Sub(t.clock.Now()); wait > 0 {
		return clock.Sleep(ctx, t.clock, wait)
	}
	return nil
}

// drain reads and discards until the line has been silent for the gap and
// until has passed.
func (t *serialTransport) drain(ctx context.Context, until time.Time) error {
	var buf [64]byte
	drained := 0
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := t.port.SetReadTimeout(max(t.gap, until.Sub(t.clock.Now()))); err != nil {
			return fmt.Errorf("%w: draining the line: %w", errPeer, err)
		}
		n, err := t.port.Read(buf[:])
		if err != nil {
			return fmt.Errorf("%w: draining the line: %w", errPeer, err)
		}
		if n > 0 {
			drained += n
			t.stray += uint64(n)
			if drained > maxDrain {
				return fmt.Errorf("%w: the line does not fall silent (%d bytes drained)", ErrFrame, drained)
			}
			until = latest(until, t.clock.Now().Add(t.gap))
			continue
		}
		if !t.clock.Now().Before(until) {
			break
		}
	}
	t.dirty = false
	t.last = t.clock.Now()
	return nil
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func (t *serialTransport) prepare(_ context.Context, deadline time.Time) error {
	t.deadline = deadline
	return nil
}

func (t *serialTransport) Send(adu []byte) ([]byte, error) {
	exp, ok := expectRTU(adu)
	if !ok {
		return nil, fmt.Errorf("%w: request % x: no reply to it can be matched", ErrFrame, adu)
	}
	t.flush()
	if err := t.write(adu); err != nil {
		t.last, t.dirty = t.clock.Now(), true
		return nil, err
	}
	sent := t.clock.Now()
	rd := &rtuReader{r: &deadlineReader{port: t.port, deadline: t.deadline, clock: t.clock}}
	res, err := readRTUReply(rd, exp)
	t.last = t.clock.Now()
	t.stray += uint64(rd.Discarded + rd.Pending())
	if err != nil || rd.Discarded > 0 || rd.Pending() > 0 {
		t.dirty = true
	}
	if isTimeout(err) { // the reply may still come, as late again
		if t.late == nil {
			t.late = map[uint8]time.Time{}
		}
		t.late[exp.unit] = latest(t.late[exp.unit], t.last.Add(t.deadline.Sub(sent)))
	}
	return res, err
}

// flush discards input that arrived while nothing was in flight.
func (t *serialTransport) flush() {
	if f, ok := t.port.(interface{ ResetInputBuffer() error }); ok {
		f.ResetInputBuffer()
	}
}

// write sends adu, with RTS raised around it when the adapter needs it.
func (t *serialTransport) write(adu []byte) error {
	rts, _ := t.port.(interface {
		SetRTS(bool) error
		Drain() error
	})
	if t.rtsCtl && rts != nil {
		if err := rts.SetRTS(true); err != nil {
			return fmt.Errorf("%w: raising RTS: %w", errPeer, err)
		}
	}
	_, err := t.port.Write(adu)
	if t.rtsCtl && rts != nil {
		rts.Drain()
		rts.SetRTS(false)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", errPeer, err)
	}
	return nil
}

func (t *serialTransport) abort() {}

// reset has the line drained before the next request.
func (t *serialTransport) reset() { t.dirty = true }

func (t *serialTransport) discards() uint64 {
	n := t.stray
	t.stray = 0
	return n
}

func (t *serialTransport) Close() error { return t.port.Close() }

// deadlineReader reads from a port until a deadline, turning the port's
// "0 bytes, no error" timeouts into drivers.ErrTimeout.
type deadlineReader struct {
	port     Port
	deadline time.Time
	clock    clock.Clock
}

func (r *deadlineReader) Read(p []byte) (int, error) {
	for {
		left := r.deadline.Sub(r.clock.Now())
		if left <= 0 {
			return 0, fmt.Errorf("%w: no complete response before the deadline", drivers.ErrTimeout)
		}
		if err := r.port.SetReadTimeout(left); err != nil {
			return 0, fmt.Errorf("%w: %w", errPeer, err)
		}
		n, err := r.port.Read(p)
		if n > 0 || err != nil {
			if err != nil {
				err = fmt.Errorf("%w: %w", errPeer, err)
			}
			return n, err
		}
	}
}
