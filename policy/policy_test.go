package policy_test

import (
	"strings"
	"testing"
	"time"

	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/policy"
	"github.com/promcp/promcp-device/policy/statetest"
	"github.com/promcp/promcp-device/promcp"
)

func f(v float64) *float64 { return &v }

var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC) // a Monday

func good(v any) *policy.Reading {
	return &policy.Reading{Value: v, Time: now, Quality: promcp.QualityGood, TTL: 2 * time.Second}
}

func TestEvaluate(t *testing.T) {
	pct := manifests.Constraints{Min: f(0), Max: f(100), Step: f(0.5)}
	dead := &policy.Reading{Time: now, Quality: promcp.QualityError, TTL: 2 * time.Second, Reason: "nack"}
	amsterdam := zone(t, "Europe/Amsterdam")
	night := &manifests.Windows{Location: amsterdam, Deny: []manifests.Window{{
		Days: []time.Weekday{0, 1, 2, 3, 4, 5, 6}, From: 20 * time.Hour, To: 6 * time.Hour}}}
	office := &manifests.Windows{Location: time.UTC, Allow: []manifests.Window{{
		Days: []time.Weekday{time.Monday}, From: 13 * time.Hour, To: 17 * time.Hour}}}
	base := func() policy.Request {
		return policy.Request{Action: "do_set_fan_speed", Type: manifests.TypeNumber, Value: 55.5, HasValue: true,
			Constraints: pct, Unit: "%", Current: good(40.0), CurrentRead: "read_fan_speed", Role: "operator", Now: now, Peers: 1}
	}
	with := func(mod func(*policy.Request)) policy.Request { r := base(); mod(&r); return r }
	// ventOpenSwitching switches a boolean to value while the vent is
	// open, under an interlock on the vent that holds only for switching on.
	ventOpenSwitching := func(value bool) policy.Request {
		return with(func(r *policy.Request) {
			r.Type, r.Value, r.Constraints = manifests.TypeBoolean, value, manifests.Constraints{}
			r.Rules = &manifests.ActionPolicy{Interlocks: []manifests.Interlock{{Read: "read_vent", Equals: true, Reason: "vent",
				When: &manifests.ValueCondition{Equals: true}}}}
			r.Readings = map[string]policy.Reading{"read_vent": *good(true)}
		})
	}
	tests := []struct {
		name       string
		req        policy.Request
		want       promcp.Permission
		validUntil time.Duration // from now
		reason     string
	}{
		{"allowed", base(), promcp.Allowed, 2 * time.Second, ""},
		{"viewer", with(func(r *policy.Request) { r.Role = "viewer" }), promcp.PermissionInsufficient, time.Minute, "role viewer may not run do_set_fan_speed"},
		{"role not listed", with(func(r *policy.Request) {
			r.Rules = &manifests.ActionPolicy{Roles: []string{"supervisor"}}
		}), promcp.PermissionInsufficient, time.Minute, "role operator"},
		{"above max", with(func(r *policy.Request) { r.Value = 150.0 }), promcp.OutOfRange, time.Minute, "above the maximum 100 %"},
		{"off step", with(func(r *policy.Request) { r.Value = 10.25 }), promcp.OutOfRange, time.Minute, "step"},
		{"clamped", with(func(r *policy.Request) {
			r.Value = 150.0
			r.Rules = &manifests.ActionPolicy{Clamp: true}
		}), promcp.Allowed, 2 * time.Second, ""},
		{"max change", with(func(r *policy.Request) { r.Rules = &manifests.ActionPolicy{MaxChange: f(10)} }), promcp.OutOfRange, 2 * time.Second, "exceeds the maximum change of 10 %"},
		{"dead actuator", with(func(r *policy.Request) { r.Current = dead }), promcp.SourceUnreachable, 2 * time.Second, "cannot be read: nack"},
		{"no quorum", with(func(r *policy.Request) { r.Rules = &manifests.ActionPolicy{Quorum: &manifests.Quorum{MinPeers: 2}} }), promcp.PartitionNoQuorum, 5 * time.Second, "1 of the 2 gateways"},
		{"outside allow window", with(func(r *policy.Request) { r.Rules = &manifests.ActionPolicy{Windows: office} }), promcp.PolicyDenied, time.Hour, "allowed only on Mon 13:00–17:00"},
		{"inside allow window", with(func(r *policy.Request) {
			r.Now = now.Add(90 * time.Minute)
			r.Current.Time = r.Now
			r.Rules = &manifests.ActionPolicy{Windows: office}
		}), promcp.Allowed, 2 * time.Second, ""},
		{"night denied", with(func(r *policy.Request) {
			r.Now = time.Date(2026, 11, 30, 22, 30, 0, 0, amsterdam)
			r.Rules = &manifests.ActionPolicy{Windows: night}
		}), promcp.PolicyDenied, 7*time.Hour + 30*time.Minute, "not allowed daily 20:00–06:00"},
		{"interlock holds", with(func(r *policy.Request) {
			r.Rules = &manifests.ActionPolicy{Interlocks: []manifests.Interlock{{Read: "read_vent", Equals: true, Reason: "no heater while the vent is open"}}}
			r.Readings = map[string]policy.Reading{"read_vent": *good(true)}
		}), promcp.PolicyDenied, 2 * time.Second, "no heater while the vent is open (read_vent is true)"},
		{"interlock limited to switching on, switching off", ventOpenSwitching(false), promcp.Allowed, 2 * time.Second, ""},
		{"interlock limited to switching on, switching on", ventOpenSwitching(true), promcp.PolicyDenied, 2 * time.Second, "vent"},
		{"night window limited to opening, closing", with(func(r *policy.Request) {
			r.Type, r.Value, r.Constraints = manifests.TypeBoolean, false, manifests.Constraints{}
			r.Now = time.Date(2026, 11, 30, 22, 30, 0, 0, amsterdam)
			w := *night
			w.When = &manifests.ValueCondition{Equals: true}
			r.Rules = &manifests.ActionPolicy{Windows: &w}
		}), promcp.Allowed, 2 * time.Second, ""},
		{"interlock clear", with(func(r *policy.Request) {
			r.Rules = &manifests.ActionPolicy{Interlocks: []manifests.Interlock{{Read: "read_vent", Equals: true, Reason: "vent"}}}
			r.Readings = map[string]policy.Reading{"read_vent": *good(false)}
		}), promcp.Allowed, 2 * time.Second, ""},
		{"interlock degraded fails closed", with(func(r *policy.Request) {
			r.Rules = &manifests.ActionPolicy{Interlocks: []manifests.Interlock{{Read: "read_line_pressure", Above: f(5), Reason: "line pressure"}}}
			r.Readings = map[string]policy.Reading{"read_line_pressure": {Value: 1.0, Time: now, Quality: promcp.QualityDegraded, TTL: time.Second, Reason: "stuck"}}
		}), promcp.PolicyDenied, time.Second, "read_line_pressure is degraded: stuck, and interlocks fail closed"},
		{"interlock above", with(func(r *policy.Request) {
			r.Rules = &manifests.ActionPolicy{Interlocks: []manifests.Interlock{{Read: "read_line_pressure", Above: f(5), Reason: "line pressure too high"}}}
			r.Readings = map[string]policy.Reading{"read_line_pressure": *good(6.5)}
		}), promcp.PolicyDenied, 2 * time.Second, "above 5"},
		{"cooldown", with(func(r *policy.Request) {
			r.Rules = &manifests.ActionPolicy{Cooldown: 5 * time.Minute}
			r.History = []time.Time{now.Add(-2 * time.Minute)}
		}), promcp.CooldownActive, 3 * time.Minute, "cooldown of 5m0s"},
		{"cooldown over", with(func(r *policy.Request) {
			r.Rules = &manifests.ActionPolicy{Cooldown: 5 * time.Minute}
			r.History = []time.Time{now.Add(-6 * time.Minute)}
		}), promcp.Allowed, 2 * time.Second, ""},
		{"rate limited", with(func(r *policy.Request) {
			r.Rules = &manifests.ActionPolicy{RateLimit: &manifests.RateLimit{Max: 2, Per: time.Hour}}
			r.History = []time.Time{now.Add(-50 * time.Minute), now.Add(-10 * time.Minute), now.Add(-2 * time.Hour)}
		}), promcp.RateLimited, 10 * time.Minute, "2 actuations per 1h0m0s"},
		{"approval above threshold", with(func(r *policy.Request) {
			r.Value = 95.0
			r.Rules = &manifests.ActionPolicy{Approval: &manifests.Approval{Above: f(90)}}
		}), promcp.RequiresHumanApproval, 2 * time.Second, "above 90 %"},
		{"approved", with(func(r *policy.Request) {
			r.Value = 95.0
			r.Approved = true
			r.Rules = &manifests.ActionPolicy{Approval: &manifests.Approval{Above: f(90)}}
		}), promcp.Allowed, 2 * time.Second, ""},
		{"dead input", with(func(r *policy.Request) {
			r.Inputs = []policy.Input{{Name: "read_temperature", Reading: *dead}}
		}), promcp.SourceUnreachable, 2 * time.Second, "depends on read_temperature, which has no reliable value: nack"},
		{"range before a dead input", with(func(r *policy.Request) {
			r.Value = 150.0
			r.Inputs = []policy.Input{{Name: "read_temperature", Reading: *dead}}
		}), promcp.OutOfRange, time.Minute, "above the maximum"},
		{"degraded input", with(func(r *policy.Request) {
			r.Inputs = []policy.Input{{Name: "read_temperature", Reading: policy.Reading{Value: 20.0, Time: now, Quality: promcp.QualityDegraded, TTL: 3 * time.Second, Reason: "stuck"}}}
		}), promcp.RequiresHumanApproval, 2 * time.Second, "read_temperature is degraded (stuck)"},
		{"degraded input approved", with(func(r *policy.Request) {
			r.Approved = true
			r.Inputs = []policy.Input{{Name: "read_temperature", Reading: policy.Reading{Value: 20.0, Time: now, Quality: promcp.QualityDegraded, TTL: 3 * time.Second, Reason: "stuck"}}}
		}), promcp.Allowed, 2 * time.Second, ""},
		{"stale actuator state", with(func(r *policy.Request) {
			r.Current = &policy.Reading{Value: 40.0, Time: now, Quality: promcp.QualityStale, TTL: 4 * time.Second}
		}), promcp.RequiresHumanApproval, 4 * time.Second, "the actuator's state is stale"},
		{"good inputs", with(func(r *policy.Request) {
			r.Inputs = []policy.Input{{Name: "read_temperature", Reading: *good(20.0)}}
		}), promcp.Allowed, 2 * time.Second, ""},
		{"approval not compensable", with(func(r *policy.Request) {
			r.Rules = &manifests.ActionPolicy{Approval: &manifests.Approval{NotCompensable: true}}
		}), promcp.RequiresHumanApproval, 2 * time.Second, "cannot be reversed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := policy.Evaluator{}.Evaluate(tc.req)
			if d.Permission != tc.want {
				t.Fatalf("Evaluate = %s (%s), want %s", d.Permission, d.Reason, tc.want)
			}
			if got := d.ValidUntil.Sub(tc.req.Now); got != tc.validUntil {
				t.Errorf("valid for %s, want %s", got, tc.validUntil)
			}
			if !strings.Contains(d.Reason, tc.reason) {
				t.Errorf("reason %q, want it to contain %q", d.Reason, tc.reason)
			}
			if !d.Allowed() && d.Reason == "" {
				t.Errorf("refusal without a reason")
			}
		})
	}
}

func TestClampSaysSo(t *testing.T) {
	d := policy.Evaluator{}.Evaluate(policy.Request{Action: "do_x", Type: manifests.TypeNumber, Value: 130.0, HasValue: true,
		Constraints: manifests.Constraints{Min: f(0), Max: f(100)}, Role: "operator", Now: now,
		Current: good(90.0), Rules: &manifests.ActionPolicy{Clamp: true, MaxChange: f(5)}})
	if !d.Allowed() || !d.Clamped || d.Value != 95.0 {
		t.Fatalf("clamp 130 with max 100 and max change 5 from 90 = %+v, want allowed, clamped to 95", d)
	}
}

func TestMemoryState(t *testing.T) {
	statetest.Run(t, func(*testing.T) policy.State { return policy.NewMemoryState() })
}

func TestCheckValueAgreesWithEvaluate(t *testing.T) {
	c := manifests.Constraints{Min: f(0), Max: f(10)}
	for _, v := range []any{-1.0, 0.0, 5.0, 10.0, 10.5, "x", true} {
		reason := policy.CheckValue(manifests.TypeNumber, c, "%", v)
		d := policy.Evaluator{}.Evaluate(policy.Request{Type: manifests.TypeNumber, Constraints: c, Unit: "%", Value: v, HasValue: true, Role: "operator", Now: now})
		if (reason == "") != d.Allowed() {
			t.Errorf("value %v: CheckValue %q but Evaluate %s", v, reason, d.Permission)
		}
	}
}

// TestSafeValue: a move to the safe value passes every rule but role,
// range and an interlock written for its direction; any other value is
// refused by the same rules.
func TestSafeValue(t *testing.T) {
	pct := manifests.Constraints{Min: f(0), Max: f(100), Step: f(0.5)}
	closed := &manifests.Windows{Location: time.UTC, Deny: []manifests.Window{{
		Days: []time.Weekday{0, 1, 2, 3, 4, 5, 6}, From: 0, To: 24 * time.Hour}}}
	dead := policy.Reading{Time: now, Quality: promcp.QualityError, TTL: time.Second, Reason: "nack"}
	strict := &manifests.ActionPolicy{
		Cooldown:   time.Hour,
		RateLimit:  &manifests.RateLimit{Max: 1, Per: time.Hour},
		Windows:    closed,
		Approval:   &manifests.Approval{Always: true},
		MaxChange:  f(5),
		Quorum:     &manifests.Quorum{MinPeers: 3},
		Interlocks: []manifests.Interlock{{Read: "read_door", Equals: false, Reason: "door open"}},
	}
	req := func(v float64, mod func(*policy.Request)) policy.Request {
		r := policy.Request{Action: "do_set_fan", Type: manifests.TypeNumber, Value: v, HasValue: true, Constraints: pct,
			Current: good(40.0), CurrentRead: "read_fan", Role: "operator", Rules: strict, Peers: 1, Now: now, SafeValue: 0.0,
			History:  []time.Time{now.Add(-time.Minute)},
			Inputs:   []policy.Input{{Name: "read_temp", Reading: dead}},
			Readings: map[string]policy.Reading{"read_door": *good(false)}}
		if mod != nil {
			mod(&r)
		}
		return r
	}
	tests := []struct {
		name   string
		req    policy.Request
		want   promcp.Permission
		reason string
	}{
		{"safe value passes everything", req(0, nil), promcp.Allowed, "0 is the safe value of do_set_fan"},
		{"another value is refused", req(10, func(r *policy.Request) { r.Inputs = nil; r.Readings["read_door"] = *good(true) }),
			promcp.OutOfRange, "maximum change of 5"},
		{"role still applies", req(0, func(r *policy.Request) { r.Role = "viewer" }), promcp.PermissionInsufficient, "role viewer"},
		{"an interlock for the safe direction applies", req(0, func(r *policy.Request) {
			rules := *strict
			rules.Interlocks = []manifests.Interlock{{Read: "read_door", Equals: false, Reason: "no stop with the door open",
				When: &manifests.ValueCondition{Below: f(1)}}}
			r.Rules = &rules
		}), promcp.PolicyDenied, "no stop with the door open"},
		{"a pending value meets that interlock", req(0, func(r *policy.Request) {
			rules := *strict
			rules.Interlocks = []manifests.Interlock{{Read: "read_door", Equals: false, Reason: "no stop with the door open",
				When: &manifests.ValueCondition{Below: f(1)}}}
			r.Rules = &rules
			r.Readings["read_door"] = *good(true)
			r.PendingValues = map[string]any{"read_door": false}
		}), promcp.PolicyDenied, "being set now"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := policy.Evaluator{}.Evaluate(tc.req)
			if d.Permission != tc.want || !strings.Contains(d.Reason, tc.reason) {
				t.Fatalf("Evaluate = %s %q, want %s %q", d.Permission, d.Reason, tc.want, tc.reason)
			}
		})
	}
}

// TestCooldownWhen: a cooldown limited to starting applies to true only,
// counted from the last actuation of any value; a refused caller is told
// that the safe value stays open.
func TestCooldownWhen(t *testing.T) {
	rules := &manifests.ActionPolicy{Cooldown: 10 * time.Minute, CooldownWhen: &manifests.ValueCondition{Equals: true}}
	req := func(v bool) policy.Request {
		return policy.Request{Action: "do_set_pump", Type: manifests.TypeBoolean, Value: v, HasValue: true,
			Current: good(false), CurrentRead: "read_pump", Role: "operator", Rules: rules, Peers: 1, Now: now,
			History: []time.Time{now.Add(-time.Minute)}, SafeValue: false}
	}
	d := policy.Evaluator{}.Evaluate(req(true))
	if d.Permission != promcp.CooldownActive || d.ValidUntil != now.Add(9*time.Minute) || !strings.Contains(d.Details, "safe value false") {
		t.Errorf("start in the cooldown = %s until %s (%q), want cooldown_active until +9m naming the safe value", d.Permission, d.ValidUntil, d.Details)
	}
	noSafe := req(false)
	noSafe.SafeValue = nil
	if d := (policy.Evaluator{}).Evaluate(noSafe); !d.Allowed() {
		t.Errorf("stop in a cooldown limited to starts = %s %q, want allowed", d.Permission, d.Reason)
	}
	general := req(true)
	general.HasValue, general.Value = false, nil
	if d := (policy.Evaluator{}).Evaluate(general); !d.Allowed() {
		t.Errorf("can_do without a value = %s, want allowed (a limited rule needs a value)", d.Permission)
	}
}

// One tolerance for "the same value": the safe predicate, the policy's
// safe-value check and (through the gateway's equalValue) the read-back and
// the dead-man all use SameValue, relative Tolerance.
func TestOneToleranceForSameValue(t *testing.T) {
	for _, tc := range []struct {
		a, b any
		same bool
	}{
		{0.0, 5e-7, true},        // a float32 register reading back 0
		{0.0, 2e-6, false},       // a deliberate small change
		{100.0, 100.00005, true}, // relative: 5e-7 of 100
		{100.0, 100.001, false},
		{false, false, true},
		{"auto", "auto", true},
		{int64(3), 3.0, true},
	} {
		if got := policy.SameValue(tc.a, tc.b); got != tc.same {
			t.Errorf("SameValue(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.same)
		}
	}
	if !policy.TowardSafe(5e-7, 0.0) || policy.TowardSafe(0.0, nil) || policy.TowardSafe(nil, false) {
		t.Error("TowardSafe disagrees with SameValue")
	}
	// The policy's safe-value fast path agrees: a value the read-back calls
	// the safe value is the safe value for the policy too.
	req := policy.Request{Action: "do_x", Type: "number", Value: 5e-7, HasValue: true, SafeValue: 0.0, Role: "operator", Peers: 1,
		Rules: &manifests.ActionPolicy{Tool: "do_x", Cooldown: time.Hour}, History: []time.Time{time.Unix(0, 0)}, Now: time.Unix(60, 0)}
	if d := (policy.Evaluator{}).Evaluate(req); !d.Allowed() {
		t.Errorf("a move to within Tolerance of the safe value under a cooldown = %+v, want allowed (the safe move)", d)
	}
}
