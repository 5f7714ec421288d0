package sim

import "fmt"

// SetZoneTemperature sets the air temperature of the zone called name, °C,
// from now (a door left open, a site test's starting point); the physics
// goes on from there. It fails for an unknown zone.
func (w *World) SetZoneTemperature(name string, celsius float64) error {
	return w.zone(name, func(z *zone) { z.t = celsius })
}

// SetZoneOutside sets the outside temperature the zone called name drifts
// toward, °C, from now (the weather changing). It fails for an unknown
// zone.
func (w *World) SetZoneOutside(name string, celsius float64) error {
	return w.zone(name, func(z *zone) { z.cfg.Outside = celsius })
}

func (w *World) zone(name string, set func(*zone)) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.advanceLocked()
	for _, z := range w.zones {
		if z.cfg.Name == name {
			set(z)
			return nil
		}
	}
	return fmt.Errorf("sim: no zone %q", name)
}
