package manifests

import (
	"time"

	"github.com/promcp/promcp-device/promcp"
)

// Revert is a dead-man limit (policy max_on: or revert:): an actuator
// away from To for After is reverted to To by the gateway, unless a new
// do_* (a new idempotency key) renews it.
type Revert struct {
	To    any
	After time.Duration
}

var revertKeys = []string{"to", "after"}

// revert decodes max_on (a duration: revert to the capability's safe
// value, or false/0 when it declares none) or revert ({to, after}); both
// at once is refused.
func (o obj) revert(r actionRef) *Revert {
	var rv *Revert
	if o.has("max_on") {
		after := o.dur("max_on")
		to, ok := r.safeValue()
		if !ok {
			o.add("max_on", ErrNotAllowed, "on action %s with no safe_value: declare the safe_value of %s in the manifest (do: {safe_value: ...}); a dead-man limit reverts to it", r.tool, r.tool)
			return nil
		}
		rv = &Revert{To: to, After: after}
	}
	if s, ok := o.sub("revert", revertKeys); ok {
		if rv != nil {
			o.add("revert", ErrNotAllowed, "with max_on (want one of them)")
			return rv
		}
		rv = &Revert{After: s.dur("after")}
		s.require("after", `how long the actuator may stay away from to, such as "30m"`)
		s.require("to", "the value the actuator is reverted to")
		if s.has("to") {
			rv.To = s.scalar("to")
			if r.cap != nil && r.cap.Do != nil {
				if kind, why := safeValueProblem(r.cap.Type, r.cap.Do.Constraints, rv.To); why != "" {
					s.add("to", kind, ": %s", why)
				} else if sv, ok := r.safeValue(); !ok {
					o.add("revert", ErrNotAllowed, "on action %s with no safe_value: declare safe_value: %v for %s in the manifest (a dead-man limit reverts to the safe value)", r.tool, rv.To, r.tool)
				} else if !sameScalar(rv.To, sv) {
					s.add("to", ErrNotAllowed, ": %v is not the safe_value (%v) of %s: a dead-man limit reverts to the safe value", rv.To, sv, r.tool)
				}
			}
		}
	}
	if rv != nil && rv.After <= 0 {
		k := "max_on"
		if !o.has(k) {
			k = "revert.after"
		}
		if !o.d.bad[o.at(k)] && o.d.has(o.at(k)) {
			o.add(k, ErrRange, ": %s (want more than 0)", rv.After)
		}
		return nil
	}
	return rv
}

// safeValue is the value a dead-man limit reverts the action to: its
// declared safe_value. There is no implicit one: a limit that reverts to a
// value the policy does not know as safe would be evaluated as an ordinary
// action (its cooldown, rate limit, window or approval could block it).
func (r actionRef) safeValue() (any, bool) {
	if r.cap == nil || r.cap.Do == nil {
		return nil, r.cap == nil // an unknown action is reported already
	}
	if r.cap.Do.SafeValue != nil {
		return r.cap.Do.SafeValue, true
	}
	return nil, false
}

// sameScalar is policy.SameValue (policy imports manifests, so it is
// repeated here): numbers within a relative 1e-6 (policy.Tolerance),
// anything else equal.
func sameScalar(a, b any) bool {
	fa, aok := promcp.Number(a)
	fb, bok := promcp.Number(b)
	if aok && bok {
		d := fa - fb
		if d < 0 {
			d = -d
		}
		m := fa
		if m < 0 {
			m = -m
		}
		return d <= 1e-6*max(1, m)
	}
	return a == b
}
