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
// calls prepare (under its turn, with the caller's ctx) before each
// transaction, then goburrow calls Send; after a failure the Line calls
// reset so the next transaction starts clean.
type transport interface {
	// prepare readies the transport for one transaction that must end by
	// deadline: connects if needed, keeps the inter-frame silence.
	prepare(ctx context.Context, deadline time.Time) error
	// Send writes one request ADU and reads its response.
	Send(adu []byte) ([]byte, error)
	// abort makes a Send in progress return as soon as it can.
	abort()
	// reset drops whatever state a failed transaction left (a connection,
	// stale input).
	reset()
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
	// redial reconnects within the armed transaction; set by prepare, it
	// carries the caller's ctx for this one transaction only.
	redial func() error
}

func (t *streamTransport) prepare(ctx context.Context, deadline time.Time) error {
	t.ready = deadline
	t.redial = func() error {
		dctx, cancel := context.WithDeadline(ctx, deadline)
		defer cancel()
		c, err := t.dial(dctx)
		if err != nil {
			return fmt.Errorf("%w: dial: %w", errPeer, err)
		}
		t.conn, t.fresh = c, true
		return c.SetDeadline(deadline)
	}
	if t.conn == nil {
		return t.redial()
	}
	t.fresh = false
	return t.conn.SetDeadline(deadline)
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
	res, err := readStreamFrame(t.conn, t.rtu)
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

// serialTransport speaks RTU on a serial port.
type serialTransport struct {
	port     Port
	rtsCtl   bool          // raise RTS while sending
	gap      time.Duration // inter-frame silence
	clock    clock.Clock
	last     time.Time // end of the last frame on the line
	deadline time.Time
}

func (t *serialTransport) prepare(ctx context.Context, deadline time.Time) error {
	t.deadline = deadline
	if wait := t.last.Add(t.gap).Sub(t.clock.Now()); wait > 0 {
		return clock.Sleep(ctx, t.clock, wait)
	}
	return nil
}

func (t *serialTransport) Send(adu []byte) ([]byte, error) {
	defer func() { t.last = t.clock.Now() }()
	rts, _ := t.port.(interface {
		SetRTS(bool) error
		Drain() error
	})
	if t.rtsCtl && rts != nil {
		if err := rts.SetRTS(true); err != nil {
			return nil, fmt.Errorf("%w: raising RTS: %w", errPeer, err)
		}
	}
	_, err := t.port.Write(adu)
	if t.rtsCtl && rts != nil {
		rts.Drain()
		rts.SetRTS(false)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errPeer, err)
	}
	return readRTUResponse(&deadlineReader{port: t.port, deadline: t.deadline, clock: t.clock})
}

func (t *serialTransport) abort() {}

func (t *serialTransport) reset() {
	if f, ok := t.port.(interface{ ResetInputBuffer() error }); ok {
		f.ResetInputBuffer()
	}
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
