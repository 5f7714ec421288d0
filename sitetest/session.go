package sitetest

import (
	"math"
	"time"

	"github.com/promcp/promcp-device/manifests"
)

// Session is the site test of a sensible first session on m (read from
// path): the orchestration pattern on its first actuator - can_do, read,
// do (with an idempotency key), let a minute pass, read again - with no
// expectations but that every call is answered. Without an actuator it
// reads every capability once. start is the simulator's start.
func Session(m *manifests.Manifest, path string, start time.Time) *Test {
	t := &Test{File: path, Name: "demo_" + m.Gateway, Manifest: path, Loaded: m, Start: start,
		Caller: Caller{Name: "demo", Role: "operator"}}
	var act *manifests.Capability
	for i := range m.Capabilities {
		if m.Capabilities[i].Do != nil {
			act = &m.Capabilities[i]
			break
		}
	}
	if act == nil {
		for _, c := range m.Capabilities {
			t.Steps = append(t.Steps, Step{Name: "observe", Call: "read_" + c.Name})
		}
		return t
	}
	v := demoValue(act)
	read := "read_" + act.Name
	t.Steps = []Step{
		{Name: "plan: ask can_do before acting", Call: "can_do", Args: map[string]any{"intent": map[string]any{"action": act.Do.Tool, "value": v}}},
		{Name: "observe: read the state", Call: read},
		{Name: "act: once, with an idempotency key", Call: act.Do.Tool, Args: map[string]any{"value": v, "idempotency_key": "demo-1"}},
		{Name: "let it take effect", Advance: time.Minute},
		{Name: "verify: read the post-state", Call: read},
		{Name: "a retry with the same key is replayed, nothing actuates", Call: act.Do.Tool, Args: map[string]any{"value": v, "idempotency_key": "demo-1"}},
	}
	return t
}

// demoValue is a value worth setting on c: true for a switch (false if
// true is its safe value), the middle of a number's range on its step, the
// first of an enum's values.
func demoValue(c *manifests.Capability) any {
	k := c.Do.Constraints
	switch c.Type {
	case manifests.TypeBoolean:
		return c.Do.SafeValue != true
	case manifests.TypeEnum:
		if len(k.Enum) > 0 {
			return k.Enum[0]
		}
		return ""
	}
	lo, hi := 0.0, 1.0
	if k.Min != nil {
		lo = *k.Min
		hi = lo + 1
	}
	if k.Max != nil {
		hi = *k.Max
		if k.Min == nil {
			lo = math.Min(0, hi)
		}
	}
	v := lo + (hi-lo)/2
	step := 1.0
	if k.Step != nil && *k.Step > 0 {
		step = *k.Step
	}
	if c.Type == manifests.TypeInteger || k.Step != nil {
		v = lo + math.Round((v-lo)/step)*step
	}
	return v
}
