package gateway_test

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/promcp/promcp-device/gateway"
	"github.com/promcp/promcp-device/gateway/gatewaytest"
	"github.com/promcp/promcp-device/manifests/manifesttest"
	"github.com/promcp/promcp-device/promcp"
)

// A PhysMCP manifest's gateway answers a PhysMCP can_do query (query with
// direction, and ttl) with PhysMCP's candidate and context fields beside
// proMCP's, and its do_* says success; every body passes the server's
// output schema check on the way out.
func TestPhysMCPCanDoQuery(t *testing.T) {
	m := manifesttest.Load(t, "testdata/physmcp/physmcp.manifest.yml")
	b := serveAt(t, m, monday10, gatewaytest.Options{Gateway: gateway.GatewayOptions{Policy: manifesttest.LoadPolicy(t, m.PolicyFile(), m)}})
	c, clk := b.c, b.clk
	ctx := t.Context()

	query := map[string]any{"query": map[string]any{"semantic_tags": []string{"cooling"}, "location": "zone_3",
		"direction": "decrease", "target": "temperature_zone_3"}, "ttl": 3}
	canDo := func() promcp.CapabilityReport {
		t.Helper()
		var rep promcp.CapabilityReport
		if err := callInto(ctx, c, "can_do", query, &rep); err != nil {
			t.Fatal(err)
		}
		if rep.Error != nil || len(rep.Candidates) != 1 {
			t.Fatalf("can_do %v: %+v", query, rep)
		}
		return rep
	}
	rep := canDo()
	cand := rep.Candidates[0]
	if cand.Capability != "do_fan_0" || cand.Permission != promcp.Allowed || cand.DeviceID != "node_fan_zone3_001" {
		t.Fatalf("candidate: %+v", cand)
	}
	want := []string{"tag_overlap: cooling", "location_match: zone_3", "currently_online"}
	if !reflect.DeepEqual(cand.MatchReasons, want) {
		t.Errorf("match_reasons %q, want %q", cand.MatchReasons, want)
	}
	if cand.RateLimit == nil || *cand.RateLimit != (promcp.CandidateRateLimit{Max: "3/hour", CurrentWindowRemaining: 3}) {
		t.Errorf("rate_limit %+v, want 3/hour with 3 left", cand.RateLimit)
	}
	if cand.EstimatedEffectLagMS != 200 {
		t.Errorf("estimated_effect_lag_ms %d, want the settle time 200", cand.EstimatedEffectLagMS)
	}
	if rep.Context.Location != "zone_3" || rep.Context.ImpliedTarget != "decrease temperature_zone_3 below current 0" {
		t.Errorf("context location %q implied_target %q", rep.Context.Location, rep.Context.ImpliedTarget)
	}
	if !slices.Contains(rep.Context.RelatedReads, "read_fan_0") {
		t.Errorf("related_reads %v", rep.Context.RelatedReads)
	}

	// The do_* waits the 200ms settle time on the server's clock.
	var res promcp.DoResult
	done := make(chan error, 1)
	go func() {
		done <- callInto(ctx, c, "do_fan_0", map[string]any{"value": true, "idempotency_key": "k1"}, &res)
	}()
	wait, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := clk.WaitFor(wait, 1); err != nil {
		t.Fatalf("do_fan_0 does not wait its settle time: %v", err)
	}
	clk.Advance(200 * time.Millisecond)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if res.Status != promcp.StatusSuccess || res.Success == nil || !*res.Success {
		t.Fatalf("do_fan_0: %+v", res)
	}
	if got := canDo().Candidates[0].RateLimit; got == nil || got.CurrentWindowRemaining != 2 {
		t.Errorf("after one actuation: rate_limit %+v, want 2 left", got)
	}
	// A refused do_* says success false.
	if err := callInto(ctx, c, "do_fan_0", map[string]any{"value": "yes", "idempotency_key": "k2"}, &res); err != nil {
		t.Fatal(err)
	}
	if res.Status != promcp.StatusFailed || res.Success == nil || *res.Success {
		t.Fatalf("do_fan_0 with a bad value: %+v", res)
	}

	// Neither intent nor query is a bad argument; an intent still works.
	var bad promcp.CapabilityReport
	if err := callInto(ctx, c, "can_do", map[string]any{"ttl": 3}, &bad); err != nil {
		t.Fatal(err)
	}
	if bad.Error == nil || bad.Error.Code != promcp.CodeInvalidArgument {
		t.Errorf("can_do without intent or query: %+v", bad.Error)
	}
	var byIntent promcp.CapabilityReport
	if err := callInto(ctx, c, "can_do", map[string]any{"intent": map[string]any{"action": "do_fan_0"}}, &byIntent); err != nil {
		t.Fatal(err)
	}
	if len(byIntent.Candidates) != 1 || byIntent.Context.ImpliedTarget != "" {
		t.Errorf("can_do by intent: %+v", byIntent)
	}

	// PhysMCP's scope, a list of device ids, restricts candidates and
	// blocked actions to those devices; proMCP's scope string still works.
	for _, tc := range []struct {
		scope any
		n     int
	}{
		{[]string{"node_fan_zone3_001"}, 1},
		{[]string{"other_node", "node_fan_zone3_001"}, 1},
		{[]string{"other_node"}, 0},
		{"local", 1},
	} {
		for _, value := range []any{true, "yes"} { // "yes" is blocked: out of range
			var rep promcp.CapabilityReport
			args := map[string]any{"intent": map[string]any{"action": "do_fan_0", "value": value}, "scope": tc.scope}
			if err := callInto(ctx, c, "can_do", args, &rep); err != nil {
				t.Fatal(err)
			}
			got := len(rep.Candidates)
			if value == "yes" {
				got = len(rep.Blocked)
				if got == 1 && rep.Blocked[0].DeviceID != "node_fan_zone3_001" {
					t.Errorf("blocked device_id %q, want node_fan_zone3_001", rep.Blocked[0].DeviceID)
				}
			}
			if rep.Error != nil || got != tc.n || len(rep.Candidates)+len(rep.Blocked) != tc.n {
				t.Errorf("scope %v value %v: %d candidates, %d blocked (error %v), want %d", tc.scope, value, len(rep.Candidates), len(rep.Blocked), rep.Error, tc.n)
			}
		}
	}
	for _, bad := range []any{[]string{}, []any{3}, 7, "galaxy"} {
		var rep promcp.CapabilityReport
		if err := callInto(ctx, c, "can_do", map[string]any{"intent": map[string]any{"action": "do_fan_0"}, "scope": bad}, &rep); err != nil {
			t.Fatal(err)
		}
		if rep.Error == nil || rep.Error.Code != promcp.CodeInvalidArgument {
			t.Errorf("scope %v: error %+v, want invalid_argument", bad, rep.Error)
		}
	}
}
