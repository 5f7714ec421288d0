package sim

import (
	"github.com/promcp/promcp-device/manifests"
)

// The simulated twin of a modbus device with an energy meter profile
// (eastron_sdm120, eastron_sdm630): it meters the simulated site, as the
// sim profile energy_meter does, in the meter's own registers. A relay
// board profile needs no twin: its coils are a plain register bank that
// takes writes (function 5 and 15) and reads them back (function 1).

// Mains as the simulated meters see it.
const (
	// MainsVoltage is each phase's voltage, V, unless the device's
	// sim.values give another.
	MainsVoltage = 230.0
	// MainsFrequency is the mains frequency, Hz.
	MainsFrequency = 50.0
)

// meterTwin is the state of a simulated Eastron meter.
type meterTwin struct {
	phases []string  // "" for a single-phase meter, else "_l1", "_l2", "_l3"
	volts  []float64 // per phase, V
	energy float64   // imported, kWh
	// at maps each of the profile's register names to the name of the
	// device's register at the same table and address (the manifest may
	// rename it); a value the device does not declare is absent.
	at map[string]string
}

// newMeterTwin returns the twin of slave s with profile p, or nil when p is
// not a meter. The voltages and the energy start from the registers'
// initial values (sim.values) where they are set. w.mu is held or s is
// not yet shared.
func newMeterTwin(s *ModbusSlave, p manifests.DeviceProfile) *meterTwin {
	if !p.IsMeter() {
		return nil
	}
	m := &meterTwin{phases: []string{""}, at: map[string]string{}}
	for _, pr := range manifests.ProfileRegisters(p) {
		for name, r := range s.regs {
			if r.Table == pr.Table && r.Address == pr.Address {
				m.at[pr.Name] = name
			}
		}
	}
	if p == manifests.ProfileEastronSDM630 {
		m.phases = []string{"_l1", "_l2", "_l3"}
	}
	for _, ph := range m.phases {
		v := MainsVoltage
		if f, ok := s.deviceValue(m.at["voltage"+ph]); ok && f > 0 {
			v = f
		}
		m.volts = append(m.volts, v)
	}
	m.energy, _ = s.deviceValue(m.at["import_energy"])
	return m
}

// advanceMeter meters the site's load over dt seconds: the power split
// evenly over the phases, the current from it, the energy integrated.
// w.mu is held.
func (s *ModbusSlave) advanceMeter(dt float64) {
	m := s.meter
	set := func(name string, v float64) { s.setDeviceValue(m.at[name], v) }
	p := s.w.sitePowerLocked()
	m.energy += p * dt / 3600 / 1000
	share := p / float64(len(m.phases))
	for i, ph := range m.phases {
		set("voltage"+ph, m.volts[i])
		set("current"+ph, share/m.volts[i])
		if ph != "" {
			set("power"+ph, share)
		}
	}
	set("power", p)
	set("frequency", MainsFrequency)
	set("import_energy", m.energy)
	set("total_energy", m.energy)
}

// deviceValue returns the value register name holds as the device sent it
// (before the manifest's scale and offset), false when the device has no
// such register ("" included) or it holds no number.
func (s *ModbusSlave) deviceValue(name string) (float64, bool) {
	r, ok := s.regs[name]
	if !ok {
		return 0, false
	}
	v, err := s.getLocked(name)
	f, isNum := v.(float64)
	if err != nil || !isNum {
		return 0, false
	}
	return (f - r.Offset) / r.Scale, true
}

// setDeviceValue sets register name to a value as the device would send
// it, so that a register the manifest rescales (power in kW: scale 0.001)
// still reads the same quantity; a register the device does not have ("")
// is left alone.
func (s *ModbusSlave) setDeviceValue(name string, v float64) {
	if r, ok := s.regs[name]; ok {
		s.setLocked(name, v*r.Scale+r.Offset)
	}
}
