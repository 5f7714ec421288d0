package gateway

import (
	"encoding/hex"
	"fmt"
	"slices"
	"time"

	"github.com/promcp/promcp-device/capabilities"
	"github.com/promcp/promcp-device/policy"
	"github.com/promcp/promcp-device/promcp"
)

// readEvidence is the provenance of a reading of c: its grounds (the
// capability's binding and the bytes the device sent), the driver and
// model, and what would make it wrong now: its staleness after the TTL
// and the health rules that would degrade it (static, computed once).
func readEvidence(c *capabilities.Capability, r capabilities.Reading, health []string) *promcp.Evidence {
	// One allocation holds the evidence, its grounds, the sample time and
	// the rebuttal (up to six lines).
	x := &struct {
		ev  promcp.Evidence
		g   promcp.ReadGrounds
		t   time.Time
		reb [6]string
	}{}
	b := c.Binding
	x.g = promcp.ReadGrounds{Source: c.Source, Device: b.Device, Bus: b.Bus, Address: b.Address, Register: b.Register,
		RawForm: b.RawForm, Conversion: b.Conversion}
	x.ev = promcp.Evidence{Grounds: &x.g, Driver: b.Driver, Model: string(c.Model)}
	if r.Quality == promcp.QualityError {
		return &x.ev
	}
	x.t = r.Time.UTC()
	x.g.SampledAt = &x.t
	x.g.Raw = hex.EncodeToString(r.Grounds.Raw)
	x.g.BusLatencyMS = float64(r.Grounds.Latency.Microseconds()) / 1000
	x.g.Cached = r.Grounds.Cached
	x.ev.Rebuttal = append(append(x.reb[:0], "stale after "+x.t.Add(c.TTL()).Format(time.RFC3339Nano)+health[0]), health[1:]...)
	return &x.ev
}

// healthRebuttals is the static part of a reading's rebuttal: first the
// end of the staleness line (after its time), then which of c's health
// rules would degrade its value.
func healthRebuttals(c *capabilities.Capability) []string {
	h := c.Capability.Health
	unit := ""
	if c.Unit != "" {
		unit = " " + c.Unit
	}
	out := []string{fmt.Sprintf(" (the sample's time plus its freshness, %s): read again", c.TTL())}
	if p := h.Plausible; p != nil {
		out = append(out, fmt.Sprintf("health rule plausible: degraded outside %v..%v%s", p.Min, p.Max, unit))
	}
	if h.MaxRate > 0 {
		out = append(out, fmt.Sprintf("health rule max_rate: degraded when it changes faster than %v%s/s", h.MaxRate, unit))
	}
	if h.StuckFor > 0 || h.StuckSamples > 0 {
		out = append(out, fmt.Sprintf("health rule stuck: degraded when bit-identical for %d samples or %s", h.StuckSamples, h.StuckFor))
	}
	out = append(out, "a failing source: the value is served stale, then error, once reads of "+c.Source+" fail")
	return out
}

// doTrace follows one do_* call for its evidence: the decision, the
// write and the readback.
type doTrace struct {
	decided  bool
	d        policy.Decision
	reserved bool
	pr       policy.Request
	wrote    bool
	written  any
	after    *capabilities.Reading
}

// doEvidence is the provenance of a do_* result on c: the write (what was
// asked, written and read back) and the decision (permission, reservation,
// approval, clamping), with what would make it wrong now: interlock and
// dependency readings that are not good, and their changing.
func doEvidence(c *capabilities.Capability, req any, approved bool, r promcp.DoResult, tr *doTrace) *promcp.Evidence {
	b := c.Binding
	g := &promcp.DoGrounds{Source: c.Source, Device: b.Device, Bus: b.Bus, Address: b.Address, Register: b.Register,
		Requested: req}
	g.Decision = promcp.Decision{Permission: r.Permission, Reason: r.Reason, Reserved: tr.reserved, Approved: approved}
	if tr.decided {
		g.Decision.Permission, g.Decision.Clamped = tr.d.Permission, tr.d.Clamped
		if tr.d.Reason != "" {
			g.Decision.Reason = tr.d.Reason
		}
	}
	if tr.wrote {
		g.Written = tr.written
	}
	if a := tr.after; a != nil {
		g.ReadbackQuality = string(a.Quality)
		if a.Quality != promcp.QualityError {
			g.Readback = a.Value
			t := a.Time.UTC()
			g.ReadbackAt = &t
		}
	}
	ev := &promcp.Evidence{Grounds: g, Driver: b.Driver, Model: string(c.Model), Rebuttal: []string{}}
	if !tr.wrote && tr.after == nil {
		ev.Origin, ev.Freshness, ev.Driver, ev.Model = "policy", "none", "policy", "policy"
	}
	if !tr.decided {
		return ev
	}
	inputs := slices.Clone(tr.pr.Inputs)
	for name, rd := range tr.pr.Readings {
		inputs = append(inputs, policy.Input{Name: name, Reading: rd})
	}
	slices.SortFunc(inputs, func(a, b policy.Input) int { return cmpString(a.Name, b.Name) })
	for _, in := range inputs {
		if in.Quality != promcp.QualityGood {
			ev.Rebuttal = append(ev.Rebuttal, fmt.Sprintf("the decision read %s with quality %s: %s", in.Name, in.Quality, in.Reason))
		} else {
			ev.Rebuttal = append(ev.Rebuttal, fmt.Sprintf("the decision read %s = %v (good); a change of it may change the policy's answer", in.Name, in.Value))
		}
	}
	if !tr.d.ValidUntil.IsZero() {
		ev.Rebuttal = append(ev.Rebuttal, "the policy's answer holds until "+tr.d.ValidUntil.UTC().Format(time.RFC3339Nano))
	}
	return ev
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
