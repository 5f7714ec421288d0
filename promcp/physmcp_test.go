package promcp_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/promcp/promcp-device/promcp"
	"github.com/promcp/promcp-device/promcp/promcptest"
)

// PhysMCP's response fields are optional extensions of the proMCP schemas:
// a body with them validates, one with them malformed does not.
func TestPhysMCPFieldsInSchemas(t *testing.T) {
	v := promcptest.Validator(t)
	rep := validReport()
	rep.Candidates[0].DeviceID = "node_001"
	rep.Candidates[0].MatchReasons = []string{"tag_overlap: cooling", "currently_online"}
	rep.Candidates[0].RateLimit = &promcp.CandidateRateLimit{Max: "1/min", CurrentWindowRemaining: 1}
	rep.Candidates[0].EstimatedEffectLagMS = 200
	rep.Context.Location = "zone_3"
	rep.Blocked = append(rep.Blocked, promcp.Blocked{Capability: "do_heat", Source: "node_001/heater", Permission: promcp.PolicyDenied, Reason: "r", DeviceID: "node_001"})
	rep.Context.ImpliedTarget = "decrease temperature_zone_3 below current 26.8"
	do := validDo()
	yes := true
	do.Success = &yes
	for kind, body := range map[promcp.Kind]any{promcp.KindCanDo: rep, promcp.KindDo: do} {
		b, _ := json.Marshal(body)
		for _, f := range []string{"device_id", "match_reasons", "current_window_remaining", "estimated_effect_lag_ms", "implied_target", "success"} {
			if kind == promcp.KindDo && f != "success" || kind == promcp.KindCanDo && f == "success" {
				continue
			}
			if !strings.Contains(string(b), `"`+f+`"`) {
				t.Errorf("%s body lacks %s: %s", kind, f, b)
			}
		}
		if err := v.Validate(string(kind), b); err != nil {
			t.Errorf("%s with PhysMCP fields: %v\n%s", kind, err, b)
		}
	}
	good, _ := json.Marshal(rep)
	for _, bad := range []struct{ from, to string }{
		{`"current_window_remaining":1`, `"current_window_remaining":-1`},
		{`"max":"1/min"`, `"max":"often"`},
		{`"device_id":"node_001"`, `"device_id":""`},
		{`"reason":"r","details":null,"device_id":"node_001"`, `"reason":"r","details":null,"device_id":""`},
		{`"estimated_effect_lag_ms":200`, `"estimated_effect_lag_ms":"soon"`},
		{`"match_reasons":["tag_overlap: cooling","currently_online"]`, `"match_reasons":"currently_online"`},
		{`"implied_target":"decrease temperature_zone_3 below current 26.8"`, `"implied_target":3`},
	} {
		doc := strings.Replace(string(good), bad.from, bad.to, 1)
		if doc == string(good) {
			t.Fatalf("%s not in %s", bad.from, good)
		}
		if err := v.Validate(string(promcp.KindCanDo), []byte(doc)); err == nil {
			t.Errorf("can_do schema accepted %s", bad.to)
		}
	}
	b, _ := json.Marshal(do)
	if err := v.Validate(string(promcp.KindDo), []byte(strings.Replace(string(b), `"success":true`, `"success":"yes"`, 1))); err == nil {
		t.Error("do schema accepted success \"yes\"")
	}
}

// scope is proMCP's "local" or "fleet" or PhysMCP's list of device ids,
// both ways through JSON.
func TestCanDoRequestScope(t *testing.T) {
	for _, tc := range []struct {
		in      string
		scope   string
		devices []string
	}{
		{`{"intent":{},"scope":"fleet"}`, "fleet", nil},
		{`{"intent":{},"scope":["node_a","node_b"]}`, "", []string{"node_a", "node_b"}},
		{`{"query":{"semantic_tags":["x"]},"scope":null,"ttl":2}`, "", nil},
	} {
		var r promcp.CanDoRequest
		if err := json.Unmarshal([]byte(tc.in), &r); err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		if r.Scope != tc.scope || !slices.Equal(r.ScopeDevices, tc.devices) {
			t.Errorf("%s: scope %q devices %q", tc.in, r.Scope, r.ScopeDevices)
		}
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var back promcp.CanDoRequest
		if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, r) {
			t.Errorf("%s round-trips to %s: %+v (%v)", tc.in, b, back, err)
		}
	}
	for _, bad := range []string{`{"scope":7}`, `{"scope":[7]}`, `{"scope":{}}`} {
		var r promcp.CanDoRequest
		if err := json.Unmarshal([]byte(bad), &r); err == nil {
			t.Errorf("%s accepted: %+v", bad, r)
		}
	}
}

// A PhysMCP query becomes the intent; an intent given wins.
func TestResolvePhysMCPQuery(t *testing.T) {
	q := &promcp.PhysMCPQuery{SemanticTags: []string{"cooling"}, Location: "zone_3", Direction: "decrease", Target: "temperature", Value: 22.0}
	r := promcp.CanDoRequest{Query: q, TTL: 3}
	r.Resolve()
	want := promcp.Intent{SemanticTags: []string{"cooling"}, Location: "zone_3", Target: "temperature", Value: 22.0, Action: "decrease temperature"}
	if b1, b2 := mustJSON(r.Intent), mustJSON(want); b1 != b2 {
		t.Errorf("intent %s, want %s", b1, b2)
	}
	r = promcp.CanDoRequest{Intent: promcp.Intent{Action: "do_x"}, Query: q}
	r.Resolve()
	if r.Intent.Action != "do_x" || r.Intent.Location != "" {
		t.Errorf("an intent given was replaced: %+v", r.Intent)
	}
	for _, tc := range []struct {
		q    promcp.PhysMCPQuery
		cur  any
		has  bool
		want string
	}{
		{promcp.PhysMCPQuery{Direction: "decrease", Target: "t"}, 26.8, true, "decrease t below current 26.8"},
		{promcp.PhysMCPQuery{Direction: "increase", Target: "t"}, 3, true, "increase t above current 3"},
		{promcp.PhysMCPQuery{Direction: "set", Target: "t", Value: 21}, nil, false, "set t to 21"},
		{promcp.PhysMCPQuery{Direction: "toggle", Target: "fan"}, false, true, "toggle fan from current false"},
		{promcp.PhysMCPQuery{Direction: "increase", Target: "t"}, nil, false, "increase t"},
		{promcp.PhysMCPQuery{Target: "t"}, 1, true, ""},
	} {
		if got := tc.q.ImpliedTarget(tc.cur, tc.has); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.q, got, tc.want)
		}
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
