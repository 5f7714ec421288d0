package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/client"
)

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
		clients[i] = mcpClient(t, p.url, "")
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

// syncsOf runs the binary under strace on a fresh --state directory, makes
// the do_set_fan_speed calls given (one at a time, each answered before the
// next) and returns how many fsync and fdatasync calls the process made.
func syncsOf(t *testing.T, strace string, values []float64, args ...string) int {
	t.Helper()
	out := filepath.Join(t.TempDir(), "strace.txt")
	cmd := append([]string{"-f", "-qq", "-e", "trace=fsync,fdatasync", "-o", out, binary,
		"serve", "--sim", "--log-level", "error", "--manifest", greenhouse, "--state", t.TempDir()}, args...)
	s := commandSession(t, "", strace, cmd)
	c := s.c
	for i, v := range values {
		r, _ := s.call("do_set_fan_speed", map[string]any{"value": v, "idempotency_key": fmt.Sprintf("k%d", i)})
		if st := r["status"]; st != "success" && r["permission"] != "cooldown_active" {
			t.Fatalf("do_set_fan_speed(%v) = %v, want success or cooldown_active", v, r)
		}
	}
	// stdin closes: the gateway finishes and exits, strace with it; Close
	// waits for that.
	if err := c.Close(); err != nil {
		t.Fatalf("closing: %v", err)
	}
	data := readFile(t, out)
	return strings.Count(string(data), "sync(")
}

// TestFsyncsPerCall counts the fsyncs of do_* calls on the real binary
// with --state (strace -f -e trace=fsync,fdatasync): a refusal costs
// exactly one (its audit record: no attempt record, no idempotency
// write), an actuation at most nine (idempotency in flight 2, audit attempt
// 1, actuation history 2, audit result 1, idempotency done 2, and bbolt
// growing its file now and then). Skipped where strace is not installed;
// the behaviour it measures is tested without it
// (TestOverlappingCallsOneWritePerCooldown checks the audit records).
func TestFsyncsPerCall(t *testing.T) {
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("strace is not installed: fsyncs are counted with strace")
	}
	const refusals, acts = 5, 4
	one := syncsOf(t, strace, []float64{20})
	withRefusals := syncsOf(t, strace, []float64{20, 30, 31, 32, 33, 34}) // the 5 later ones in the 5-minute cooldown
	if got := withRefusals - one; got != refusals {
		t.Errorf("%d refusals cost %d fsyncs, want %d (one audit record each)", refusals, got, refusals)
	}
	// A policy without a cooldown, so that every call actuates.
	free := filepath.Join(t.TempDir(), "free.policy.yml")
	if err := os.WriteFile(free, []byte("version: 1\ntimezone: UTC\nactions:\n  do_set_fan_speed: {roles: [operator]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := syncsOf(t, strace, []float64{20}, "--policy", free)
	many := syncsOf(t, strace, []float64{20, 21, 22, 23, 24}, "--policy", free)
	per := float64(many-base) / acts
	if per < 8 || per > 9 {
		t.Errorf("an actuation costs %.2f fsyncs, want 8 (9 when bbolt grows its files)", per)
	}
	t.Logf("fsyncs: %.2f per actuation, %.2f per refusal", per, float64(withRefusals-one)/refusals)
}
