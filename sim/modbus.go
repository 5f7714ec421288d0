package sim

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/promcp/promcp-device/drivers/modbus"
	"github.com/promcp/promcp-device/drivers/modbus/modbusconf"
	"github.com/promcp/promcp-device/manifests"
)

// Simulated equipment.
const (
	// VFDMaxHz is the output frequency at which a simulated fan turns at
	// full speed and full cooling.
	VFDMaxHz = 50.0
	// VFDRamp is how fast a simulated VFD's speed follows its setpoint, Hz
	// per simulated second.
	VFDRamp = 5.0
	// VFDRatedPower is a simulated fan's power at full speed, W (it grows
	// with the cube of speed).
	VFDRatedPower = 750.0
	// MeterBaseLoad is the site's load besides fans and heaters, W.
	MeterBaseLoad = 150.0
	// HeaterPower is each heater's draw while on, W.
	HeaterPower = 2000.0
)

// ModbusSlave is a simulated Modbus device: the four tables of a manifest
// modbus device, answering real request PDUs. Addresses the manifest does
// not declare answer "illegal data address", as a real device's gaps do.
// Holding registers and coils accept writes only where the manifest
// declares a writable register. A profile (vfd, energy_meter) gives it
// behaviour on the world's clock.
//
// Its fault knobs (SetException, SetSilent, SetGarbleCRC) are safe for
// concurrent use and take effect on the next request.
type ModbusSlave struct {
	w    *World
	name string
	unit uint8
	regs map[string]manifests.ModbusRegister

	coils, discrete map[uint16]bool
	holding, input  map[uint16]uint16
	writable        map[modbusconf.Table]map[uint16]bool

	profile  manifests.SimProfile
	speed    float64 // vfd: actual speed, Hz
	energy   float64 // energy_meter: kWh
	last     time.Time
	primed   bool // advanced at least once
	requests uint64

	exception byte
	silent    bool
	garble    bool
	// late: every lateEvery-th request is answered after lateDelay.
	lateEvery int
	lateDelay time.Duration
	lateN     uint64 // requests counted for late
	lateSent  uint64 // answers delayed so far

	// meter is the twin of a device whose profile is an energy meter.
	meter *meterTwin
}

func newModbusSlave(w *World, d manifests.Device, now time.Time) (*ModbusSlave, error) {
	s := &ModbusSlave{
		w: w, name: d.Name, unit: d.UnitID, regs: map[string]manifests.ModbusRegister{},
		coils: map[uint16]bool{}, discrete: map[uint16]bool{},
		holding: map[uint16]uint16{}, input: map[uint16]uint16{},
		writable: map[modbusconf.Table]map[uint16]bool{modbusconf.TableCoil: {}, modbusconf.TableHolding: {}},
		last:     now,
	}
	for _, r := range d.ModbusRegisters {
		s.regs[r.Name] = r
		for i := range max(1, r.Words()) {
			a := r.Address + uint16(i)
			switch r.Table {
			case modbusconf.TableCoil:
				s.coils[a] = false
			case modbusconf.TableDiscrete:
				s.discrete[a] = false
			case modbusconf.TableHolding:
				s.holding[a] = 0
			case modbusconf.TableInput:
				s.input[a] = 0
			}
			if r.Writable {
				s.writable[r.Table][a] = true
			}
		}
	}
	if d.Sim != nil {
		s.profile = d.Sim.Profile
		for name, v := range d.Sim.Values {
			r, ok := s.regs[name]
			if !ok {
				return nil, fmt.Errorf("sim: device %s: initial value for unknown register %q", d.Name, name)
			}
			var val any = v
			if r.Type == modbusconf.DataBool {
				val = v != 0
			}
			if err := s.setLocked(name, val); err != nil {
				return nil, fmt.Errorf("sim: device %s: initial value of register %s: %w", d.Name, name, err)
			}
		}
	}
	if s.profile == manifests.ProfileVFD {
		if v, err := s.getLocked("speed_setpoint"); err == nil {
			s.speed, _ = v.(float64)
		}
	}
	if s.profile == "" {
		s.meter = newMeterTwin(s, d.Profile)
	}
	return s, nil
}

// Name returns the manifest device name.
func (s *ModbusSlave) Name() string { return s.name }

// Unit returns the unit id.
func (s *ModbusSlave) Unit() uint8 { return s.unit }

// SetException makes the slave answer every request with exception code
// (modbus.ExceptionBusy, …); 0 restores normal answers.
func (s *ModbusSlave) SetException(code byte) { s.w.mu.Lock(); s.exception = code; s.w.mu.Unlock() }

// SetSilent makes the slave ignore requests (the master times out).
func (s *ModbusSlave) SetSilent(on bool) { s.w.mu.Lock(); s.silent = on; s.w.mu.Unlock() }

// SetGarbleCRC makes the slave send RTU responses with a wrong checksum
// (no effect on Modbus TCP, which has none).
func (s *ModbusSlave) SetGarbleCRC(on bool) { s.w.mu.Lock(); s.garble = on; s.w.mu.Unlock() }

// SetLate makes the slave answer every n-th request addressed to it only
// after delay, in real time, and the others at once, as a device that
// sometimes misses its master's timeout does; the late answer still goes
// out, and requests that arrive meanwhile wait their turn on the line. n
// <= 0 or delay <= 0 restores answers on time. Late returns how many
// answers were delayed.
func (s *ModbusSlave) SetLate(n int, delay time.Duration) {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	if n <= 0 || delay <= 0 {
		n, delay = 0, 0
	}
	s.lateEvery, s.lateDelay, s.lateN = n, delay, 0
}

// Late returns how many answers SetLate has delayed.
func (s *ModbusSlave) Late() uint64 {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	return s.lateSent
}

// lateLocked returns how long to hold the answer to this request beyond
// any fault's delay. w.mu is held.
func (s *ModbusSlave) lateLocked() time.Duration {
	if s.lateEvery <= 0 {
		return 0
	}
	s.lateN++
	if s.lateN%uint64(s.lateEvery) != 0 {
		return 0
	}
	s.lateSent++
	return s.lateDelay
}

// Requests returns how many requests addressed to this slave arrived
// (answered or not).
func (s *ModbusSlave) Requests() uint64 {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	return s.requests
}

// Get returns a register's engineering value (float64, bool or string),
// advanced to the clock's now.
func (s *ModbusSlave) Get(name string) (any, error) {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	s.w.advanceLocked()
	return s.getLocked(name)
}

// Set sets a register's engineering value from outside (float64 or bool),
// as the device's own logic or a technician at its panel would.
func (s *ModbusSlave) Set(name string, v any) error {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	s.w.advanceLocked()
	return s.setLocked(name, v)
}

func (s *ModbusSlave) getLocked(name string) (any, error) {
	r, ok := s.regs[name]
	if !ok {
		return nil, fmt.Errorf("sim: device %s has no register %q", s.name, name)
	}
	switch r.Table {
	case modbusconf.TableCoil:
		return s.coils[r.Address], nil
	case modbusconf.TableDiscrete:
		return s.discrete[r.Address], nil
	}
	tab := s.table(r.Table)
	wire := make([]byte, 2*r.Words())
	for i := range r.Words() {
		binary.BigEndian.PutUint16(wire[2*i:], tab[r.Address+uint16(i)])
	}
	raw, err := modbus.CodecOf(r).Decode(wire)
	if err != nil {
		return nil, err
	}
	return modbus.Engineering(raw, r.Scale, r.Offset), nil
}

func (s *ModbusSlave) setLocked(name string, v any) error {
	r, ok := s.regs[name]
	if !ok {
		return fmt.Errorf("sim: device %s has no register %q", s.name, name)
	}
	switch r.Table {
	case modbusconf.TableCoil, modbusconf.TableDiscrete:
		on, ok := v.(bool)
		if !ok {
			return fmt.Errorf("sim: register %s takes a bool, not %T", name, v)
		}
		if r.Table == modbusconf.TableCoil {
			s.coils[r.Address] = on
		} else {
			s.discrete[r.Address] = on
		}
		return nil
	}
	c := modbus.CodecOf(r)
	tab := s.table(r.Table)
	var wire []byte
	if r.Type == modbusconf.DataBool && r.Bit >= 0 {
		on, ok := v.(bool)
		if !ok {
			return fmt.Errorf("sim: register %s takes a bool, not %T", name, v)
		}
		w := tab[r.Address] &^ (1 << r.Bit)
		if on {
			w |= 1 << r.Bit
		}
		tab[r.Address] = w
		return nil
	}
	raw, err := c.Raw(v, r.Scale, r.Offset)
	if err != nil {
		return err
	}
	if wire, err = c.Encode(raw); err != nil {
		return err
	}
	for i := range r.Words() {
		tab[r.Address+uint16(i)] = binary.BigEndian.Uint16(wire[2*i:])
	}
	return nil
}

func (s *ModbusSlave) table(t modbusconf.Table) map[uint16]uint16 {
	if t == modbusconf.TableHolding {
		return s.holding
	}
	return s.input
}

// fanFraction is a VFD's speed as a share of full speed, 0..1.
func (s *ModbusSlave) fanFraction() float64 { return clamp(s.speed/VFDMaxHz, 0, 1) }

// fanPower is a VFD's draw, W.
func (s *ModbusSlave) fanPower() float64 { return VFDRatedPower * math.Pow(s.fanFraction(), 3) }

// advance runs the profile up to now. w.mu is held.
func (s *ModbusSlave) advance(now time.Time) {
	dt := now.Sub(s.last).Seconds()
	if dt < 0 || dt == 0 && s.primed {
		return
	}
	s.last, s.primed = now, true
	switch s.profile {
	case manifests.ProfileVFD:
		target := 0.0
		if v, err := s.getLocked("speed_setpoint"); err == nil {
			target, _ = v.(float64)
		}
		step := VFDRamp * dt
		switch {
		case s.speed < target:
			s.speed = math.Min(target, s.speed+step)
		case s.speed > target:
			s.speed = math.Max(target, s.speed-step)
		}
		s.setLocked("speed", s.speed)
		if _, ok := s.regs["running"]; ok {
			s.setLocked("running", s.speed > 0)
		}
	case manifests.ProfileEnergyMeter:
		p := s.w.sitePowerLocked()
		s.energy += p * dt / 3600 / 1000
		s.setLocked("power", p)
		s.setLocked("energy", s.energy)
	default:
		if s.meter != nil {
			s.advanceMeter(dt)
		}
	}
}

// addModbusSlave adds a simulated Modbus slave.
func addModbusSlave(w *World, d manifests.Device, bl *build) error {
	sl, err := newModbusSlave(w, d, bl.now)
	if err != nil {
		return err
	}
	w.slaves = append(w.slaves, sl)
	w.slaveByName[d.Name] = sl
	w.slaveBus[d.Name] = d.Bus
	return nil
}
