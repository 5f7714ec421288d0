package sitetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/promcp/promcp-device/manifests"
)

// loadFiles loads the manifest and the scenario the test names.
func (t *Test) loadFiles() error {
	m, err := manifests.Load(t.Manifest)
	if err != nil {
		return fmt.Errorf("%s: manifest: %w", t.manifestPos, err)
	}
	t.Loaded = m
	if t.Scenario != "" {
		if t.Faults, err = manifests.LoadScenario(t.Scenario, m); err != nil {
			return fmt.Errorf("%s: scenario: %w", t.scenarioPos, err)
		}
	}
	return nil
}

// checkDevices checks each set step against the manifest: the device
// exists and what is set fits its model.
func (t *Test) checkDevices() error {
	var errs []*manifests.Error
	for i, st := range t.Steps {
		if st.Set == nil {
			continue
		}
		if err := t.checkSet(st.Set); err != nil {
			errs = append(errs, &manifests.Error{Pos: st.Pos, Field: fmt.Sprintf("steps[%d].set", i), Err: err})
		}
	}
	if len(errs) > 0 {
		return joinErrs(errs)
	}
	return nil
}

func (t *Test) checkSet(s *Set) error {
	if s.Zone != "" {
		return t.checkZone(s)
	}
	var dev *manifests.Device
	var names []string
	for i := range t.Loaded.Devices {
		names = append(names, t.Loaded.Devices[i].Name)
		if t.Loaded.Devices[i].Name == s.Device {
			dev = &t.Loaded.Devices[i]
		}
	}
	if dev == nil {
		return fmt.Errorf("%w: device %q is not in %s (want one of %s)", manifests.ErrBadReference, s.Device, t.Manifest, strings.Join(names, ", "))
	}
	want := func(ok bool, what string, models ...manifests.Model) error {
		if ok && !slices.Contains(models, dev.Model) {
			return fmt.Errorf("%w: %s applies to %s devices, and %s is %s", manifests.ErrNotAllowed, what, joinModels(models), s.Device, dev.Model)
		}
		return nil
	}
	return errors.Join(
		want(s.On != nil, "on", manifests.ModelGPIOIn),
		want(s.Input != nil, "input and volts", manifests.ModelMCP3008),
		want(s.Pulse != nil, "pulse_rate", manifests.ModelPulseCounter),
		want(s.Online != nil || s.Values != nil, "online and values", manifests.ModelMQTT),
		t.checkFault(s, dev),
	)
}

func (t *Test) checkFault(s *Set, dev *manifests.Device) error {
	if s.Fault == nil || manifests.FaultApplies(dev.Model, s.Fault.Kind) {
		return nil
	}
	return fmt.Errorf("%w: fault %s does not apply to %s device %s", manifests.ErrNotAllowed, s.Fault.Kind, dev.Model, s.Device)
}

func joinModels(ms []manifests.Model) string {
	var out []string
	for _, m := range ms {
		out = append(out, string(m))
	}
	return strings.Join(out, ", ")
}

// checkZone checks a zone set step: the zone is simulated, and only a
// temperature or an outside temperature is set on it.
func (t *Test) checkZone(s *Set) error {
	if s.Temperature == nil && s.Outside == nil {
		return fmt.Errorf("%w: a zone takes temperature or outside", manifests.ErrNotAllowed)
	}
	var names []string
	if t.Loaded.Sim != nil {
		for _, z := range t.Loaded.Sim.Zones {
			if z.Name == s.Zone {
				return nil
			}
			names = append(names, z.Name)
		}
	}
	if len(names) == 0 {
		return fmt.Errorf("%w: zone %q: %s simulates no zones (sim: zones:)", manifests.ErrBadReference, s.Zone, t.Manifest)
	}
	return fmt.Errorf("%w: zone %q is not in %s (want one of %s)", manifests.ErrBadReference, s.Zone, t.Manifest, strings.Join(names, ", "))
}
