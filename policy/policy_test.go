package policy_test

import (
	"testing"
	"time"

	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/policy"
	"github.com/promcp/promcp-device/promcp"
)

func f(v float64) *float64 { return &v }

func TestEvaluate(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	pct := manifests.Constraints{Min: f(0), Max: f(100), Step: f(0.5)}
	good := &policy.Reading{Value: 40.0, Time: now, Quality: promcp.QualityGood, TTL: 2 * time.Second}
	dead := &policy.Reading{Time: now, Quality: promcp.QualityError, TTL: 2 * time.Second, Reason: "nack"}
	tests := []struct {
		name       string
		req        policy.Request
		want       promcp.Permission
		validUntil time.Duration
	}{
		{"in range", policy.Request{Type: manifests.TypeNumber, Value: 55.5, HasValue: true, Constraints: pct, Current: good}, promcp.Allowed, 2 * time.Second},
		{"above max", policy.Request{Type: manifests.TypeNumber, Value: 150.0, HasValue: true, Constraints: pct, Current: good}, promcp.OutOfRange, time.Minute},
		{"below min", policy.Request{Type: manifests.TypeNumber, Value: -1.0, HasValue: true, Constraints: pct}, promcp.OutOfRange, time.Minute},
		{"off step", policy.Request{Type: manifests.TypeNumber, Value: 10.25, HasValue: true, Constraints: pct}, promcp.OutOfRange, time.Minute},
		{"integer with fraction", policy.Request{Type: manifests.TypeInteger, Value: 2.5, HasValue: true}, promcp.OutOfRange, time.Minute},
		{"enum member", policy.Request{Type: manifests.TypeEnum, Value: "auto", HasValue: true, Constraints: manifests.Constraints{Enum: []string{"auto", "manual"}}}, promcp.Allowed, time.Minute},
		{"enum stranger", policy.Request{Type: manifests.TypeEnum, Value: "turbo", HasValue: true, Constraints: manifests.Constraints{Enum: []string{"auto", "manual"}}}, promcp.OutOfRange, time.Minute},
		{"boolean", policy.Request{Type: manifests.TypeBoolean, Value: true, HasValue: true, Current: good}, promcp.Allowed, 2 * time.Second},
		{"no value asked", policy.Request{Type: manifests.TypeNumber, Constraints: pct, Current: good}, promcp.Allowed, 2 * time.Second},
		{"dead source", policy.Request{Type: manifests.TypeNumber, Value: 50.0, HasValue: true, Constraints: pct, Current: dead}, promcp.SourceUnreachable, 2 * time.Second},
		{"dead input", policy.Request{Type: manifests.TypeBoolean, Value: true, HasValue: true, Current: good,
			Inputs: []policy.Input{{Name: "read_temperature", Reading: *dead}}}, promcp.SourceUnreachable, 2 * time.Second},
		{"dead input wins over range", policy.Request{Type: manifests.TypeNumber, Value: 150.0, HasValue: true, Constraints: pct, Current: good,
			Inputs: []policy.Input{{Name: "read_temperature", Reading: *dead}}}, promcp.SourceUnreachable, 2 * time.Second},
		{"degraded input", policy.Request{Type: manifests.TypeBoolean, Value: true, HasValue: true, Current: good,
			Inputs: []policy.Input{{Name: "read_temperature", Reading: policy.Reading{Value: 20.0, Time: now, Quality: promcp.QualityDegraded, TTL: 3 * time.Second, Reason: "stuck"}}}},
			promcp.RequiresHumanApproval, 2 * time.Second},
		{"stale actuator state", policy.Request{Type: manifests.TypeBoolean, Value: true, HasValue: true,
			Current: &policy.Reading{Value: true, Time: now, Quality: promcp.QualityStale, TTL: 4 * time.Second}}, promcp.RequiresHumanApproval, 4 * time.Second},
		{"range before doubt", policy.Request{Type: manifests.TypeNumber, Value: 150.0, HasValue: true, Constraints: pct, Current: good,
			Inputs: []policy.Input{{Name: "read_temperature", Reading: policy.Reading{Quality: promcp.QualityStale, TTL: time.Second}}}}, promcp.OutOfRange, time.Minute},
		{"good inputs", policy.Request{Type: manifests.TypeBoolean, Value: true, HasValue: true, Current: good,
			Inputs: []policy.Input{{Name: "read_temperature", Reading: *good}}}, promcp.Allowed, 2 * time.Second},
		{"long TTL capped", policy.Request{Type: manifests.TypeBoolean, Value: true, HasValue: true,
			Current: &policy.Reading{Value: true, Time: now, Quality: promcp.QualityGood, TTL: time.Hour}}, promcp.Allowed, policy.MaxSensorValidity},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.Now = now
			d := policy.Evaluator{}.Evaluate(tc.req)
			if d.Permission != tc.want {
				t.Fatalf("Evaluate = %s (%s), want %s", d.Permission, d.Reason, tc.want)
			}
			if got := d.ValidUntil.Sub(now); got != tc.validUntil {
				t.Errorf("valid for %s, want %s", got, tc.validUntil)
			}
			if !d.Allowed() && d.Reason == "" {
				t.Errorf("refusal without a reason")
			}
		})
	}
}

func TestCheckValueAgreesWithEvaluate(t *testing.T) {
	c := manifests.Constraints{Min: f(0), Max: f(10)}
	for _, v := range []any{-1.0, 0.0, 5.0, 10.0, 10.5, "x", true} {
		reason := policy.CheckValue(manifests.TypeNumber, c, "%", v)
		d := policy.Evaluator{}.Evaluate(policy.Request{Type: manifests.TypeNumber, Constraints: c, Unit: "%", Value: v, HasValue: true, Now: time.Now()})
		if (reason == "") != d.Allowed() {
			t.Errorf("value %v: CheckValue %q but Evaluate %s", v, reason, d.Permission)
		}
	}
}
