package sim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	"github.com/promcp/promcp-device/drivers/modbus"
	"github.com/promcp/promcp-device/manifests"
)

// ModbusServer answers Modbus requests for a set of simulated slaves, over
// Modbus TCP (MBAP), RTU frames on TCP, or RTU frames on any byte stream
// (the master side of a pseudo-terminal). One server is one line: a request
// for a unit it does not have goes unanswered on RTU and gets exception 11
// (gateway target failed to respond) on Modbus TCP, as a gateway answers.
//
// A ModbusServer is safe for concurrent use. Close stops its listeners and
// connections.
type ModbusServer struct {
	w      *World
	slaves map[uint8]*ModbusSlave

	mu     sync.Mutex
	closed bool
	lns    []net.Listener
	conns  map[io.Closer]struct{}
	wg     sync.WaitGroup
}

func newModbusServer(w *World, slaves []*ModbusSlave) *ModbusServer {
	s := &ModbusServer{w: w, slaves: map[uint8]*ModbusSlave{}, conns: map[io.Closer]struct{}{}}
	for _, sl := range slaves {
		s.slaves[sl.unit] = sl
	}
	return s
}

// ServeTCP accepts Modbus TCP connections on ln until Close. It returns
// once ln is closed.
func (s *ModbusServer) ServeTCP(ln net.Listener) error { return s.serve(ln, s.mbapConn) }

// ServeRTUOverTCP accepts connections on ln that carry RTU frames.
func (s *ModbusServer) ServeRTUOverTCP(ln net.Listener) error { return s.serve(ln, s.ServeRTU) }

// ServeLoopback listens on a free loopback port and serves it as a bus of
// kind does until Close: Modbus TCP for modbus_tcp, RTU frames for
// modbus_rtu_tcp. It returns the address ("127.0.0.1:port").
func (s *ModbusServer) ServeLoopback(kind manifests.BusKind) (string, error) {
	var serve func(net.Listener) error
	switch kind {
	case manifests.BusModbusTCP:
		serve = s.ServeTCP
	case manifests.BusModbusRTUTCP:
		serve = s.ServeRTUOverTCP
	default:
		return "", fmt.Errorf("sim: a %s bus is not served on TCP", kind)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	go serve(ln)
	return ln.Addr().String(), nil
}

func (s *ModbusServer) serve(ln net.Listener, handle func(io.ReadWriter) error) error {
	if !s.track(ln) {
		ln.Close()
		return net.ErrClosed
	}
	s.mu.Lock()
	s.lns = append(s.lns, ln)
	s.mu.Unlock()
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		if !s.track(c) {
			c.Close()
			return net.ErrClosed
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer s.untrack(c)
			handle(c)
		}()
	}
}

func (s *ModbusServer) track(c io.Closer) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	if _, ok := c.(net.Listener); !ok {
		s.conns[c] = struct{}{}
	}
	return true
}

func (s *ModbusServer) untrack(c io.Closer) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	c.Close()
}

// DropConnections closes every open TCP connection, as a device that
// reboots or a NAT that forgets does; listeners keep accepting.
func (s *ModbusServer) DropConnections() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.Close()
	}
}

// Close stops the listeners and closes the connections, then waits for the
// connection handlers to return.
func (s *ModbusServer) Close() error {
	s.mu.Lock()
	s.closed = true
	for _, ln := range s.lns {
		ln.Close()
	}
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

// answer runs one request PDU for unit under the world lock. ok is false
// for an unknown unit.
func (s *ModbusServer) answer(unit uint8, pdu []byte) (res []byte, garble, ok bool) {
	sl, ok := s.slaves[unit]
	if !ok {
		return nil, false, false
	}
	s.w.mu.Lock()
	res, garble, delay := sl.answerLocked(pdu)
	s.w.mu.Unlock()
	sleep(delay) // a slow or stuck line takes real time, outside the world lock
	return res, garble, true
}

// mbapConn serves one Modbus TCP connection.
func (s *ModbusServer) mbapConn(rw io.ReadWriter) error {
	hdr := make([]byte, 7)
	for {
		if _, err := io.ReadFull(rw, hdr); err != nil {
			return err
		}
		n := int(binary.BigEndian.Uint16(hdr[4:6]))
		if n < 2 || n > 254 || binary.BigEndian.Uint16(hdr[2:4]) != 0 {
			return fmt.Errorf("sim modbus tcp: bad MBAP header % x", hdr)
		}
		pdu := make([]byte, n-1)
		if _, err := io.ReadFull(rw, pdu); err != nil {
			return err
		}
		res, _, ok := s.answer(hdr[6], pdu)
		if !ok {
			res = []byte{pdu[0] | 0x80, modbus.ExceptionGatewayTargetFailed}
		}
		if res == nil {
			continue // silent
		}
		out := make([]byte, 7, 7+len(res))
		copy(out, hdr[:4])
		binary.BigEndian.PutUint16(out[4:], uint16(len(res)+1))
		out[6] = hdr[6]
		if _, err := rw.Write(append(out, res...)); err != nil {
			return err
		}
	}
}

// ServeRTU answers RTU requests read from rw until a read fails. Frames
// are delimited by their function code, as a slave on a line must; a frame
// with a bad CRC or for another unit gets no answer.
func (s *ModbusServer) ServeRTU(rw io.ReadWriter) error {
	for {
		frame, err := ReadRTURequest(rw)
		if err != nil {
			if errors.Is(err, errBadFrame) {
				continue
			}
			return err
		}
		res, garble, ok := s.answer(frame[0], frame[1:len(frame)-2])
		if !ok || res == nil || frame[0] == 0 {
			continue
		}
		out := modbus.AppendCRC(append([]byte{frame[0]}, res...))
		if garble {
			out[len(out)-1] ^= 0x5A
		}
		if _, err := rw.Write(out); err != nil {
			return err
		}
	}
}

var errBadFrame = errors.New("bad RTU request frame")

// ReadRTURequest reads one RTU request frame from r, delimited by its
// function code: 8 bytes for functions 1 to 6, a byte count for 15 and 16,
// 4 bytes (no data) for anything else. A frame whose CRC does not match is
// returned as an error wrapping errBadFrame after it has been consumed.
func ReadRTURequest(r io.Reader) ([]byte, error) {
	buf := make([]byte, 2, 7+255+2) // the longest frame a byte count allows
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	have := 2
	switch fc := buf[1]; {
	case fc >= 1 && fc <= 6:
		buf = buf[:8]
	case fc == 15 || fc == 16:
		buf = buf[:7]
		if _, err := io.ReadFull(r, buf[2:]); err != nil {
			return nil, err
		}
		have = 7
		buf = buf[:7+int(buf[6])+2]
	default:
		buf = buf[:4]
	}
	if _, err := io.ReadFull(r, buf[have:]); err != nil {
		return nil, err
	}
	if !modbus.CheckCRC(buf) {
		return nil, fmt.Errorf("%w: % x", errBadFrame, buf)
	}
	return buf, nil
}
