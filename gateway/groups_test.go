package gateway_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"periph.io/x/conn/v3/gpio"
	"periph.io/x/conn/v3/i2c"

	"github.com/promcp/promcp-device/capabilities"
	"github.com/promcp/promcp-device/gateway"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/server"
	"github.com/promcp/promcp-device/sim"
)

// inProcess returns an initialised in-process client of srv.
func inProcess(t *testing.T, srv *server.Server) *client.Client {
	t.Helper()
	c, err := client.NewInProcessClient(srv.MCP())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(t.Context(), mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	return c
}

func callJSON(t *testing.T, c *client.Client, name string, args map[string]any) map[string]any {
	t.Helper()
	res, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: args}})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatalf("%s: %s: %v", name, raw, err)
	}
	return body
}

// TestServeGroup: a group surface serves its capabilities' tools in
// manifest order with the full surface's handlers: the pump's cooldown
// started through the group holds on the full surface. Its can_do decides
// on the door interlock (outside the group) but names only the group's
// tools, while the full surface's can_do observes the door.
func TestServeGroup(t *testing.T) {
	m, err := manifests.Load("testdata/policy/bench.yml")
	if err != nil {
		t.Fatal(err)
	}
	pol, err := manifests.LoadPolicy("testdata/policy/bench.policy.yml", m)
	if err != nil {
		t.Fatal(err)
	}
	clk := sim.NewManualClock(monday10)
	w, err := sim.New(m, clk)
	if err != nil {
		t.Fatal(err)
	}
	hw := capabilities.HardwareFuncs{
		I2C: func(ctx context.Context, b manifests.Bus) (i2c.BusCloser, error) { return w.I2C(ctx, b.Name) },
		Pin: func(ctx context.Context, d manifests.Device) (gpio.PinIO, error) { return w.Pin(ctx, d.Pin) },
	}
	set, err := capabilities.Open(t.Context(), m, hw, capabilities.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { set.Close() })
	srv, err := server.New("bench", "test", server.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	g, err := gateway.Serve(srv, set, gateway.GatewayOptions{Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
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

	full, pumps := inProcess(t, srv), inProcess(t, grp)
	intent := map[string]any{"intent": map[string]any{"action": "do_set_pump", "value": true}}
	rep := callJSON(t, full, "can_do", intent)
	obs, _ := rep["context"].(map[string]any)["current_observations"].(map[string]any)
	if _, ok := obs["read_door_closed"]; !ok {
		t.Fatalf("full can_do(pump) observations %v, want the door interlock's reading", obs)
	}
	rep = callJSON(t, pumps, "can_do", intent)
	raw, _ := json.Marshal(rep)
	if strings.Contains(string(raw), "door") || len(rep["candidates"].([]any)) != 1 {
		t.Fatalf("group can_do(pump) = %s, want one candidate and nothing about read_door_closed (not in the group)", raw)
	}
	rep = callJSON(t, pumps, "can_do", map[string]any{"intent": map[string]any{"action": "do_set_fan"}})
	if len(rep["candidates"].([]any))+len(rep["blocked"].([]any)) != 0 ||
		!strings.Contains(rep["metadata"].(map[string]any)["note"].(string), "actions here: do_set_pump, do_set_valve") {
		t.Errorf("group can_do(fan) = %v, want no match and the group's actions in the note", rep)
	}

	if r := callJSON(t, pumps, "do_set_pump", map[string]any{"value": true}); r["status"] != "success" {
		t.Fatalf("do_set_pump(true) through the group = %v", r)
	}
	if r := callJSON(t, full, "do_set_pump", map[string]any{"value": false}); r["permission"] != "cooldown_active" {
		t.Fatalf("do_set_pump(false) on the full surface right after = %v, want cooldown_active (one history)", r)
	}
}
