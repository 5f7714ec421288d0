package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

func callTool(t *testing.T, c *client.Client, name string, args map[string]any) (map[string]any, error) {
	res, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: args}})
	if err != nil {
		return nil, err
	}
	var body map[string]any
	b, _ := json.Marshal(res.StructuredContent)
	return body, json.Unmarshal(b, &body)
}

// TestOverlappingCallsOneWritePerCooldown: the greenhouse binary over HTTP
// with --state; 8 MCP clients call do_set_fan_speed at once with distinct
// keys and values. The fan's 5-minute cooldown lets exactly one write
// through: 1 success, 7 cooldown_active, and the audit log holds one
// attempt and one result for the winner and one refused record (no
// attempt) per loser. Stopping the fan (its safe value 0) in the cooldown
// succeeds, and can_do says so.
func TestOverlappingCallsOneWritePerCooldown(t *testing.T) {
	const callers = 8
	dir := t.TempDir()
	p := startServe(t, "--manifest", greenhouse, "--state", dir)
	clients := make([]*client.Client, callers)
	for i := range clients {
		clients[i] = mcpClient(t, p.url)
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	bodies := make([]map[string]any, callers)
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			b, err := callTool(t, c, "do_set_fan_speed", map[string]any{"value": 10 + i, "idempotency_key": fmt.Sprintf("fan-%d", i)})
			if err != nil {
				t.Error(err)
			}
			bodies[i] = b
		}()
	}
	close(start)
	wg.Wait()
	got := map[string]int{}
	var winner float64
	for _, b := range bodies {
		o, _ := b["status"].(string)
		if perm, _ := b["permission"].(string); perm != "" && perm != "allowed" {
			o = perm
		}
		got[o]++
		if o == "success" {
			winner, _ = b["applied_value"].(float64)
		}
	}
	t.Logf("OUTCOMES %v", got)
	if got["success"] != 1 || got["cooldown_active"] != callers-1 {
		t.Fatalf("%d overlapping do_set_fan_speed calls: %v, want 1 success and %d cooldown_active", callers, got, callers-1)
	}
	sp, err := callTool(t, clients[0], "read_fan_speed_setpoint", map[string]any{})
	if err != nil || sp["value"] != winner {
		t.Fatalf("setpoint = %v (%v), want the one successful value %v", sp["value"], err, winner)
	}

	// The safe direction during the cooldown.
	cd, err := callTool(t, clients[0], "can_do", map[string]any{"intent": map[string]any{"action": "do_set_fan_speed", "value": 20}})
	if err != nil || !strings.Contains(fmt.Sprint(cd["blocked"]), "safe value 0") {
		t.Errorf("can_do(fan 20) in the cooldown = %v (%v), want blocked, naming the safe value 0", cd, err)
	}
	cd, err = callTool(t, clients[0], "can_do", map[string]any{"intent": map[string]any{"action": "do_set_fan_speed", "value": 0}})
	if err != nil || !strings.Contains(fmt.Sprint(cd["candidates"]), "safe value") || cd["feasible"] != true {
		t.Errorf("can_do(fan 0) in the cooldown = %v (%v), want an allowed candidate saying 0 is the safe value", cd, err)
	}
	stop, err := callTool(t, clients[0], "do_set_fan_speed", map[string]any{"value": 0, "idempotency_key": "fan-stop"})
	if err != nil || stop["status"] != "success" {
		t.Fatalf("do_set_fan_speed(0) in the cooldown = %v (%v), want success", stop, err)
	}

	// Audit: one attempt and one result per write, one refused record per
	// refusal.
	events := map[string][]string{}
	for _, r := range auditRecords(t, dir) {
		events[r.Key] = append(events[r.Key], r.Event)
	}
	for key, ev := range events {
		switch strings.Join(ev, ",") {
		case "attempt,result", "refused":
		default:
			t.Errorf("audit events of %s = %v, want attempt,result (a write) or refused (a refusal)", key, ev)
		}
	}
	if len(events) != callers+1 {
		t.Errorf("audit has %d keys, want %d", len(events), callers+1)
	}
}
