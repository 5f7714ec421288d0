package policy_test

import (
	"strings"
	"testing"
	"time"

	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/policy"
	"github.com/promcp/promcp-device/promcp"
)

// An emergency override lifts the action's roles (the gateway checked the
// caller's role against the emergency's), time windows, cooldown, rate
// limit and approval, and nothing else: range, interlocks and quorum
// still refuse.
func TestEmergencyOverride(t *testing.T) {
	closed := &manifests.Windows{Location: time.UTC, Deny: []manifests.Window{{
		Days: []time.Weekday{0, 1, 2, 3, 4, 5, 6}, From: 0, To: 24 * time.Hour}}}
	paced := &manifests.ActionPolicy{Roles: []string{"admin"}, Windows: closed, Cooldown: time.Hour,
		RateLimit: &manifests.RateLimit{Max: 1, Per: time.Hour}, Approval: &manifests.Approval{Always: true}}
	base := func() policy.Request {
		return policy.Request{Action: "do_setpoint_0", Type: manifests.TypeNumber, Value: 22.5, HasValue: true,
			Constraints: manifests.Constraints{Min: f(19), Max: f(25)}, Role: "admin", Now: now, Peers: 1,
			History: []time.Time{now.Add(-time.Minute)}, Rules: paced}
	}
	with := func(mod func(*policy.Request)) policy.Request { r := base(); mod(&r); return r }
	tests := []struct {
		name string
		req  policy.Request
		want promcp.Permission
	}{
		{"without override", base(), promcp.PolicyDenied},
		{"override", with(func(r *policy.Request) { r.Override = true }), promcp.Allowed},
		{"override, out of range", with(func(r *policy.Request) { r.Override, r.Value = true, 30.0 }), promcp.OutOfRange},
		{"wrong role", with(func(r *policy.Request) { r.Role = "operator" }), promcp.PermissionInsufficient},
		{"override, another role", with(func(r *policy.Request) { r.Override, r.Role = true, "operator" }), promcp.Allowed},
		{"override, no quorum", with(func(r *policy.Request) {
			rules := *paced
			rules.Quorum = &manifests.Quorum{MinPeers: 3}
			r.Override, r.Rules = true, &rules
		}), promcp.PartitionNoQuorum},
		{"override, interlock", with(func(r *policy.Request) {
			rules := *paced
			rules.Interlocks = []manifests.Interlock{{Read: "read_door", Equals: true, Reason: "door open"}}
			r.Override, r.Rules = true, &rules
			r.Readings = map[string]policy.Reading{"read_door": {Value: true, Time: now, Quality: promcp.QualityGood, TTL: time.Second}}
		}), promcp.PolicyDenied},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := policy.Evaluator{}.Evaluate(tc.req)
			if d.Permission != tc.want {
				t.Fatalf("permission %s (%s), want %s", d.Permission, d.Reason, tc.want)
			}
			if d.Allowed() && !strings.Contains(d.Reason, "emergency override") {
				t.Errorf("reason %q does not say the override was used", d.Reason)
			}
		})
	}
}

// A deny window all day, every day, never opens: the refusal says so,
// never "allowed again from" a minute after the question.
func TestAllDayDenyWindowNeverOpens(t *testing.T) {
	all := []time.Weekday{0, 1, 2, 3, 4, 5, 6}
	windows := []manifests.Window{{Days: all, From: 0, To: 24 * time.Hour}, {Days: all, From: 19*time.Hour + 4*time.Minute, To: 19*time.Hour + 4*time.Minute}}
	for _, w := range windows {
		req := policy.Request{Action: "do_x", Type: manifests.TypeBoolean, Value: true, HasValue: true, Role: "operator", Now: now, Peers: 1,
			Rules: &manifests.ActionPolicy{Windows: &manifests.Windows{Location: time.UTC, Deny: []manifests.Window{w}}}}
		d := (policy.Evaluator{}).Evaluate(req)
		if d.Permission != promcp.PolicyDenied || strings.Contains(d.Details, "allowed again") || !strings.Contains(d.Details, "do not open") {
			t.Errorf("deny %v–%v daily: %s, %q", w.From, w.To, d.Permission, d.Details)
		}
	}
	// Denied all Monday: open again on Tuesday at midnight.
	req := policy.Request{Action: "do_x", Type: manifests.TypeBoolean, Value: true, HasValue: true, Role: "operator", Now: now, Peers: 1,
		Rules: &manifests.ActionPolicy{Windows: &manifests.Windows{Location: time.UTC, Deny: []manifests.Window{{Days: []time.Weekday{time.Monday}}}}}}
	if d := (policy.Evaluator{}).Evaluate(req); !strings.Contains(d.Details, "allowed again from Tue 1 Dec 00:00 UTC") {
		t.Errorf("deny all Monday: %q", d.Details)
	}
}
