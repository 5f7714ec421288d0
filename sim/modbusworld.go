package sim

import (
	"fmt"
	"io"
	"net"

	"github.com/promcp/promcp-device/manifests"
)

// ModbusSlave returns the simulated slave of the manifest's modbus device
// called name.
func (w *World) ModbusSlave(name string) (*ModbusSlave, bool) {
	s, ok := w.slaveByName[name]
	return s, ok
}

// ModbusServer returns a server for the slaves on the manifest's Modbus bus
// called bus, not yet serving anything.
func (w *World) ModbusServer(bus string) (*ModbusServer, error) {
	if _, ok := w.modbusBus[bus]; !ok {
		return nil, fmt.Errorf("sim: no modbus bus %q in the manifest", bus)
	}
	var slaves []*ModbusSlave
	for _, s := range w.slaves {
		if w.busOf(s) == bus {
			slaves = append(slaves, s)
		}
	}
	return newModbusServer(w, slaves), nil
}

// AllModbus returns a server for every simulated slave of the manifest, as
// if they sat behind one Modbus TCP gateway. Unit ids must be unique across
// the manifest's buses for that.
func (w *World) AllModbus() (*ModbusServer, error) {
	seen := map[uint8]string{}
	for _, s := range w.slaves {
		if other, dup := seen[s.unit]; dup {
			return nil, fmt.Errorf("sim: devices %s and %s both have unit id %d; give them distinct unit ids to serve them on one address", other, s.name, s.unit)
		}
		seen[s.unit] = s.name
	}
	return newModbusServer(w, w.slaves), nil
}

func (w *World) busOf(s *ModbusSlave) string { return w.slaveBus[s.name] }

// ModbusEndpoints are the simulated Modbus and serial lines of a world,
// running: a loopback listener per modbus_tcp and modbus_rtu_tcp bus, a
// pseudo-terminal per modbus_rtu bus and per serial bus.
type ModbusEndpoints struct {
	servers []*ModbusServer
	ptys    []*PTY
	addr    map[string]string // bus → host:port
	port    map[string]string // bus → /dev/pts/N
	loop    map[string]string // serial bus → loopback stand-in, where no pty
	lns     []net.Listener
	noPTY   bool // tests: use the loopback stand-in
	// Broker is the embedded MQTT broker serving the mqtt buses; nil when
	// the manifest has none.
	Broker   *Broker
	stopMQTT func()
}

// serveSerial serves a serial bus on a new pty, or on a loopback listener
// where no pseudo-terminal can be made.
func (e *ModbusEndpoints) serveSerial(name string, serve func(rw io.ReadWriter) error) error {
	if !e.noPTY {
		if p, err := OpenPTY(); err == nil {
			e.ptys = append(e.ptys, p)
			e.port[name] = p.SlavePath
			go serve(p.Master())
			return nil
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("sim: bus %s: %w", name, err)
	}
	e.lns = append(e.lns, ln)
	e.loop[name] = ln.Addr().String()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				serve(c)
			}()
		}
	}()
	return nil
}

// StartLines serves every Modbus and serial bus of the manifest: TCP kinds
// on 127.0.0.1 with a port the system picks, RTU and serial-line
// instruments on a new pseudo-terminal each.
// The drivers reach them through [ModbusEndpoints.Address] and
// [ModbusEndpoints.Port]. Close stops them.
func (w *World) StartLines() (*ModbusEndpoints, error) { return w.startLines(false) }

func (w *World) startLines(noPTY bool) (_ *ModbusEndpoints, err error) {
	e := &ModbusEndpoints{addr: map[string]string{}, port: map[string]string{}, loop: map[string]string{}, noPTY: noPTY}
	defer func() {
		if err != nil {
			e.Close()
		}
	}()
	for name, b := range w.modbusBus {
		srv, err := w.ModbusServer(name)
		if err != nil {
			return nil, err
		}
		e.servers = append(e.servers, srv)
		switch b.Kind {
		case manifests.BusModbusTCP, manifests.BusModbusRTUTCP:
			addr, err := srv.ServeLoopback(b.Kind)
			if err != nil {
				return nil, fmt.Errorf("sim: bus %s: %w", name, err)
			}
			e.addr[name] = addr
		case manifests.BusModbusRTU:
			if err := e.serveSerial(name, srv.ServeRTU); err != nil {
				return nil, err
			}
		}
	}
	b, stop, err := w.startMQTT(w.mqttBuses, MQTTPublishPeriod)
	if err != nil {
		return nil, err
	}
	e.Broker, e.stopMQTT = b, stop
	for _, name := range w.mqttBuses {
		e.addr[name] = b.Addr()
	}
	for name, ins := range w.lineBus {
		if err := e.serveSerial(name, func(rw io.ReadWriter) error { return serveLine(w, ins, rw) }); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// Address returns the loopback host:port serving the TCP bus called bus.
func (e *ModbusEndpoints) Address(bus string) (string, bool) {
	a, ok := e.addr[bus]
	return a, ok
}

// Port returns the pseudo-terminal path serving the RTU or serial bus
// called bus.
func (e *ModbusEndpoints) Port(bus string) (string, bool) {
	p, ok := e.port[bus]
	return p, ok
}

// Close stops every listener and pseudo-terminal.
func (e *ModbusEndpoints) Close() error {
	for _, ln := range e.lns {
		ln.Close()
	}
	for _, p := range e.ptys {
		p.Close()
	}
	for _, s := range e.servers {
		s.Close()
	}
	if e.stopMQTT != nil {
		e.stopMQTT()
	}
	return nil
}
