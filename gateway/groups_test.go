package gateway_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/gateway"
	"github.com/promcp/promcp-device/gateway/gatewaytest"
	"github.com/promcp/promcp-device/manifests/manifesttest"
)

// TestServeGroup: a group surface serves its capabilities' tools in
// manifest order with the full surface's handlers: the pump's cooldown
// started through the group holds on the full surface. Its can_do decides
// on the door interlock (outside the group) but names only the group's
// tools, while the full surface's can_do observes the door.
func TestServeGroup(t *testing.T) {
	m := manifesttest.Load(t, "testdata/policy/bench.yml")
	b := gatewaytest.Serve(t, m, gatewaytest.Options{Clock: clock.NewManual(monday10),
		Gateway: gateway.GatewayOptions{Policy: manifesttest.LoadPolicy(t, "testdata/policy/bench.policy.yml", m)}})
	srv, g := b.Server, b.Gateway
	grp, err := srv.Surface("bench/pumps", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := g.ServeGroup(grp, []string{"valve", "pump"}); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range grp.Tools() {
		names = append(names, tl.MCP.Name)
	}
	if want := []string{"read_pump", "read_valve", "do_set_pump", "do_set_valve", "can_do"}; !slices.Equal(names, want) {
		t.Fatalf("group tools %v, want %v (manifest order: reads, actions, can_do)", names, want)
	}
	bad, _ := srv.Surface("bench/bad", "")
	if err := g.ServeGroup(bad, []string{"pump", "sprinkler"}); err == nil || !strings.Contains(err.Error(), `"sprinkler"`) {
		t.Errorf("ServeGroup with an unknown capability: %v, want an error naming it", err)
	}

	full, pumps := gatewaytest.Connect(t, srv), gatewaytest.Connect(t, grp)
	intent := map[string]any{"intent": map[string]any{"action": "do_set_pump", "value": true}}
	rep := bodyOf(t, full, "can_do", intent)
	obs, _ := rep["context"].(map[string]any)["current_observations"].(map[string]any)
	if _, ok := obs["read_door_closed"]; !ok {
		t.Fatalf("full can_do(pump) observations %v, want the door interlock's reading", obs)
	}
	rep = bodyOf(t, pumps, "can_do", intent)
	raw, _ := json.Marshal(rep)
	if strings.Contains(string(raw), "door") || len(rep["candidates"].([]any)) != 1 {
		t.Fatalf("group can_do(pump) = %s, want one candidate and nothing about read_door_closed (not in the group)", raw)
	}
	rep = bodyOf(t, pumps, "can_do", map[string]any{"intent": map[string]any{"action": "do_set_fan"}})
	if len(rep["candidates"].([]any))+len(rep["blocked"].([]any)) != 0 ||
		!strings.Contains(rep["metadata"].(map[string]any)["note"].(string), "actions here: do_set_pump, do_set_valve") {
		t.Errorf("group can_do(fan) = %v, want no match and the group's actions in the note", rep)
	}

	if r := bodyOf(t, pumps, "do_set_pump", map[string]any{"value": true}); r["status"] != "success" {
		t.Fatalf("do_set_pump(true) through the group = %v", r)
	}
	if r := bodyOf(t, full, "do_set_pump", map[string]any{"value": false}); r["permission"] != "cooldown_active" {
		t.Fatalf("do_set_pump(false) on the full surface right after = %v, want cooldown_active (one history)", r)
	}
}
