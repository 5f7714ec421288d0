package manifests

import "time"

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
			o.add("max_on", ErrNotAllowed, "on action %s with no safe_value (want revert: {to: VALUE, after: %s}, or a safe_value in the manifest)", r.tool, after)
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

// safeValue is the value max_on reverts the action to: its safe_value, or
// false for a boolean and 0 for a number whose constraints allow it.
func (r actionRef) safeValue() (any, bool) {
	if r.cap == nil || r.cap.Do == nil {
		return nil, r.cap == nil // an unknown action is reported already
	}
	if r.cap.Do.SafeValue != nil {
		return r.cap.Do.SafeValue, true
	}
	switch r.cap.Type {
	case TypeBoolean:
		return false, true
	case TypeNumber, TypeInteger:
		if _, why := safeValueProblem(r.cap.Type, r.cap.Do.Constraints, 0.0); why == "" {
			return 0.0, true
		}
	}
	return nil, false
}
