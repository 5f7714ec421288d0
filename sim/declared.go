package sim

import (
	"fmt"
	"time"

	"github.com/promcp/promcp-device/manifests"
)

// air is the state every simulated twin of a declared sensor model keeps:
// its channels' readings (the declaration's defaults, then sim.values),
// the zone whose air drives its temperature and humidity (nil: none), and
// its twin's protocol state. Guarded by World.mu.
type air struct {
	decl   manifests.ModelDecl
	values map[string]float64
	zone   *zone
}

// newAir returns the readings of a twin of d's declared model.
func newAir(d manifests.Device) (*air, error) {
	decl, ok := manifests.Decl(d.Model)
	if !ok {
		return nil, fmt.Errorf("sim: device %s: model %s is not a declared model", d.Name, d.Model)
	}
	a := &air{decl: decl, values: map[string]float64{}}
	for _, c := range decl.Channels {
		a.values[c.Name] = c.Sim
	}
	if d.Sim != nil {
		for k, v := range d.Sim.Values {
			a.values[k] = v
		}
	}
	return a, nil
}

// read returns the twin's channels now, in the declaration's order, as
// the zone and the active fault (noise and implausible on fs.f.Channel,
// or on every channel when it names none) make them. A stuck twin's
// bytes are frozen by its encoder (see frozen).
func (a *air) read(now time.Time, fs *faultState) []float64 {
	if a.zone != nil && a.decl.Zone {
		t, rh := a.zone.sample(now)
		a.values["temperature"], a.values["humidity"] = t, rh
	}
	vs := make([]float64, len(a.decl.Channels))
	for i, c := range a.decl.Channels {
		v := a.values[c.Name]
		hit := fs != nil && (fs.f.Channel == "" || fs.f.Channel == c.Name)
		switch {
		case hit && fs.is(manifests.FaultNoise):
			v += fs.spike() // Amplitude is in the channel's unit
		case hit && fs.is(manifests.FaultImplausible) && fs.f.Value != nil:
			v = *fs.f.Value
		case hit && fs.is(manifests.FaultImplausible):
			v = c.Max + (c.Max-c.Min)/10 // railed: past what it can measure, as its encoding allows
		}
		vs[i] = v
	}
	return vs
}

// frozen returns what a stuck twin answers: the first answer of the
// fault, b the first time.
func frozen(fs *faultState, b []byte) []byte {
	if !fs.is(manifests.FaultStuck) {
		return b
	}
	if !fs.frozenValid {
		fs.frozen, fs.frozenValid = append([]byte(nil), b...), true
	}
	return append([]byte(nil), fs.frozen...)
}

// addDeclared adds the twin that mk makes of d's declared model, and
// registers its air for the zones.
func addDeclared[D device](w *World, d manifests.Device, bl *build, mk func(a *air) D) error {
	return w.addI2C(d, func() (device, error) {
		a, err := newAir(d)
		if err != nil {
			return nil, err
		}
		bl.airs[d.Name] = a
		return mk(a), nil
	})
}
