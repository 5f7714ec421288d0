package promcp_test

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/promcp/promcp-device/promcp"
	"github.com/promcp/promcp-device/promcp/promcptest"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func validDo() promcp.DoResult {
	return promcp.DoResult{
		Status: promcp.StatusSuccess, IdempotencyKey: "k1", AppliedValue: 40.0, PreviousValue: 30.0,
		SideEffects: []string{"airflow rises"}, Compensable: true,
		CompensationHint: promcp.Hint("do_set_fan_speed value=30"), Timestamp: t0,
	}
}

func validReport() promcp.CapabilityReport {
	r := promcp.CapabilityReport{
		QueryID: "6f1c2a4e-0000-4000-8000-000000000000",
		Candidates: []promcp.Candidate{{
			Capability: "do_set_fan_speed", Source: "gw/fan", Confidence: 0.9, Permission: promcp.Allowed,
			ValidUntil: t0.Add(5 * time.Second), EstimatedLatencyMS: 12,
		}},
		Metadata: promcp.ReportMetadata{Timestamp: t0},
	}
	r.Normalize()
	return r
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		v       interface{ Validate() error }
		wantErr string // "" means valid
	}{
		{"read good", promcp.ReadResult{Value: 21.5, Unit: "°C", Timestamp: t0, Quality: promcp.QualityGood}, ""},
		{"read error without value", promcp.ReadResult{Timestamp: t0, Quality: promcp.QualityError}, ""},
		{"read unknown quality", promcp.ReadResult{Value: 1.0, Timestamp: t0, Quality: "fresh"}, `quality "fresh"`},
		{"read without timestamp", promcp.ReadResult{Value: 1.0, Quality: promcp.QualityGood}, "timestamp is missing"},
		{"read good with null", promcp.ReadResult{Timestamp: t0, Quality: promcp.QualityGood}, "quality good with a null value"},
		{"read NaN", promcp.ReadResult{Value: math.NaN(), Timestamp: t0, Quality: promcp.QualityGood}, "JSON cannot carry"},
		{"do valid", validDo(), ""},
		{"do compensable without hint", func() promcp.DoResult { d := validDo(); d.CompensationHint = nil; return d }(), "without a compensation_hint"},
		{"do without key", func() promcp.DoResult { d := validDo(); d.IdempotencyKey = ""; return d }(), "idempotency_key is missing"},
		{"do nil side effects", func() promcp.DoResult { d := validDo(); d.SideEffects = nil; return d }(), "side_effects is null"},
		{"do bad status", func() promcp.DoResult { d := validDo(); d.Status = "ok"; return d }(), `status "ok"`},
		{"do success refused", func() promcp.DoResult { d := validDo(); d.Permission = promcp.CooldownActive; return d }(), "status success with permission"},
		{"report valid", validReport(), ""},
		{"report feasible lies", func() promcp.CapabilityReport { r := validReport(); r.Feasible = false; return r }(), "feasible is false but a candidate is allowed"},
		{"candidate without valid_until", func() promcp.CapabilityReport {
			r := validReport()
			r.Candidates[0].ValidUntil = time.Time{}
			return r
		}(), "valid_until is missing"},
		{"confidence above 1", func() promcp.CapabilityReport { r := validReport(); r.Candidates[0].Confidence = 1.2; return r }(), "confidence 1.2 outside 0..1"},
		{"blocked as allowed", func() promcp.CapabilityReport {
			r := validReport()
			r.Blocked = []promcp.Blocked{{Capability: "do_x", Source: "gw/x", Permission: promcp.Allowed, Reason: "r"}}
			return r
		}(), "not a blocking permission"},
		{"blocked without reason", func() promcp.CapabilityReport {
			r := validReport()
			r.Blocked = []promcp.Blocked{{Capability: "do_x", Source: "gw/x", Permission: promcp.OutOfRange}}
			return r
		}(), "reason is missing"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.v.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Validate() = %v, want an error containing %q", err, tc.wantErr)
			}
			if !errors.Is(err, promcp.ErrContract) {
				t.Fatalf("Validate() = %v, does not wrap ErrContract", err)
			}
		})
	}
}

// TestSchemasAgreeWithValidate checks that what Validate accepts, the
// embedded JSON Schemas accept too, and that the schemas catch the
// violations a client can see.
func TestSchemasAgreeWithValidate(t *testing.T) {
	v := promcptest.Validator(t)
	ok := []struct {
		kind promcp.Kind
		v    any
	}{
		{promcp.KindRead, promcp.ReadResult{Value: 21.5, Unit: "°C", Timestamp: t0, Quality: promcp.QualityGood}},
		{promcp.KindRead, promcp.ReadResult{Timestamp: t0, Quality: promcp.QualityError, Error: &promcp.Error{Code: "source_unreachable", Message: "nack"}}},
		{promcp.KindDo, validDo()},
		{promcp.KindCanDo, validReport()},
	}
	for _, c := range ok {
		b, _ := json.Marshal(c.v)
		if err := v.Validate(string(c.kind), b); err != nil {
			t.Errorf("%s %s: %v", c.kind, b, err)
		}
	}
	bad := []struct {
		kind promcp.Kind
		doc  string
	}{
		{promcp.KindRead, `{"value":1,"unit":null,"timestamp":"2026-11-30T12:00:00Z"}`},
		{promcp.KindRead, `{"value":1,"unit":null,"timestamp":"yesterday","quality":"good"}`},
		{promcp.KindDo, `{"status":"success","idempotency_key":"k","applied_value":1,"previous_value":0,"side_effects":[],"compensable":true,"compensation_hint":null,"timestamp":"2026-11-30T12:00:00Z"}`},
		{promcp.KindCanDo, `{"query_id":"q","feasible":true,"candidates":[{"capability":"do_x","source":"s","confidence":1,"permission":"allowed","current_state":null,"constraints":{"min":null,"max":null,"unit":null,"enum_values":[]},"side_effects":[],"estimated_latency_ms":1}],"blocked":[],"context":{"related_reads":[],"current_observations":{}},"metadata":{"timestamp":"2026-11-30T12:00:00Z","total_latency_ms":0}}`},
	}
	for _, c := range bad {
		if err := v.Validate(string(c.kind), []byte(c.doc)); err == nil {
			t.Errorf("%s schema accepted %s", c.kind, c.doc)
		}
	}
}

func TestUnitNull(t *testing.T) {
	b, _ := json.Marshal(promcp.ReadResult{Value: true, Timestamp: t0, Quality: promcp.QualityGood})
	if !strings.Contains(string(b), `"unit":null`) {
		t.Fatalf("unitless read marshals as %s, want unit null", b)
	}
	var r promcp.ReadResult
	if err := json.Unmarshal(b, &r); err != nil || r.Unit != "" {
		t.Fatalf("round trip: %v, unit %q", err, r.Unit)
	}
}

func TestKindOf(t *testing.T) {
	tests := []struct {
		name string
		want promcp.Kind
		ok   bool
	}{
		{"read_temperature", promcp.KindRead, true},
		{"do_set_fan", promcp.KindDo, true},
		{"can_do", promcp.KindCanDo, true},
		{"read_", "", false},
		{"get_temperature", "", false},
		{"can_do_x", "", false},
	}
	for _, tc := range tests {
		got, ok := promcp.KindOf(tc.name)
		if got != tc.want || ok != tc.ok {
			t.Errorf("KindOf(%q) = %q, %t; want %q, %t", tc.name, got, ok, tc.want, tc.ok)
		}
	}
	if n := len(promcp.Permissions()); n != 9 {
		t.Errorf("%d permissions, want the spec's 9", n)
	}
}
