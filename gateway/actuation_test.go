package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/promcp/promcp-device/audit"
	"github.com/promcp/promcp-device/capabilities"
	"github.com/promcp/promcp-device/gateway"
	"github.com/promcp/promcp-device/gateway/gatewaytest"
	"github.com/promcp/promcp-device/manifests/manifesttest"
	"github.com/promcp/promcp-device/server"
)

// attempt is an audit attempt record as the recording auditor saw it: the
// value the actuator held when the record was written (before the write).
type attempt struct {
	tool, caller, key string
	value, held       any
}

// recorder is an Auditor that notes, for every attempt record, what the
// actuator holds at that moment, read from the device (not the cache). An
// attempt record written after the write would see the new value. With
// full set, every Append fails with ENOSPC (a full state disk).
type recorder struct {
	mu       sync.Mutex
	set      *capabilities.Set
	attempts []attempt
	events   []string // event tool key, in order
	full     bool
	// gate, when set, holds the attempt record of key gateKey until it is
	// closed.
	gate    chan struct{}
	gateKey string
}

func (r *recorder) Append(ctx context.Context, rec audit.Record) error {
	r.mu.Lock()
	full, set, gate := r.full, r.set, r.gate
	if rec.Event != audit.EventAttempt || rec.Key != r.gateKey {
		gate = nil
	}
	r.mu.Unlock()
	if gate != nil {
		<-gate
	}
	if full {
		return fmt.Errorf("appending to the audit log: %w", syscall.ENOSPC)
	}
	var a attempt
	if rec.Event == audit.EventAttempt && set != nil {
		var args map[string]any
		_ = json.Unmarshal(rec.Arguments, &args)
		a = attempt{tool: rec.Tool, caller: rec.Caller, key: rec.Key, value: args["value"]}
		for _, c := range set.All() {
			if c.Do != nil && c.Do.Tool == rec.Tool {
				a.held = c.ReadWithin(ctx, 0).Value
			}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if rec.Event == audit.EventAttempt {
		r.attempts = append(r.attempts, a)
	}
	r.events = append(r.events, rec.Event+" "+rec.Tool+" "+rec.Key)
	return nil
}

func (r *recorder) setFull(full bool) {
	r.mu.Lock()
	r.full = full
	r.mu.Unlock()
}

const pathManifest = `version: 1
gateway: bench
buses:
  - {name: gpio, kind: gpio}
devices:
  - {name: valve_relay, bus: gpio, model: gpio_out, pin: GPIO24}
  - {name: pump_relay, bus: gpio, model: gpio_out, pin: GPIO25}
  - {name: heater_relay, bus: gpio, model: gpio_out, pin: GPIO26}
capabilities:
  - {name: valve, type: boolean, ttl: 1s, read: {device: valve_relay}, do: {tool: do_set_valve, side_effects: [water flows], compensable: true, safe_value: false}}
  - {name: pump, type: boolean, ttl: 1s, read: {device: pump_relay}, do: {tool: do_set_pump, side_effects: [pumps], compensable: true, safe_value: false}}
  - {name: heater, type: boolean, ttl: 1s, read: {device: heater_relay}, do: {tool: do_set_heater, side_effects: [heats], compensable: true, safe_value: false}}
jobs:
  - name: water
    steps:
      - {capability: valve, value: true, hold: 10s, compensate: restore}
      - {capability: pump, value: true, hold: 1m, compensate: false}
      - {capability: pump, value: false}
      - {capability: valve, value: false}
  - name: warm
    hold: {capability: heater, value: true, for: 5m}
`

const pathPolicy = `version: 1
actions:
  do_set_heater:
    max_on: 10m
    cooldown: 30m
`

func newPathBench(t *testing.T, rec *recorder, pol string) *bench {
	t.Helper()
	m := manifesttest.Parse(t, "path.yml", pathManifest)
	p := manifesttest.ParsePolicy(t, "path.policy.yml", pol, m)
	b := serveAt(t, m, time.Date(2026, 7, 1, 6, 0, 0, 0, time.UTC), gatewaytest.Options{
		Server:  []server.Option{server.WithAuditor(rec)},
		Gateway: gateway.GatewayOptions{Policy: p, Jobs: m.Jobs}})
	rec.mu.Lock()
	rec.set = b.Set
	rec.mu.Unlock()
	return b
}

// Every entry point that writes an actuator (a do_* call, a job's first
// and later steps, a job's compensation, a dead-man revert) writes its
// audit attempt record, with its own idempotency key, before the write:
// the recorder sees the actuator still away from the value written. A new
// entry point that skips the one path fails the list below.
func TestEveryActuationBeginsItsAttemptFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		b := newPathBench(t, rec, pathPolicy)
		if r := b.body("do_set_heater", map[string]any{"value": true}); r["status"] != "success" {
			t.Fatalf("do_set_heater(true) = %v", r)
		}
		waitOn(t, b.clk, 1)
		b.clk.Advance(10 * time.Minute) // the dead-man reverts it, cooldown or not
		synctest.Wait()
		if h := b.body("read_heater", map[string]any{"max_age_ms": 0}); h["value"] != false {
			t.Fatalf("heater 10 min after do_set_heater(true), with a 30 min cooldown = %v, want reverted", h)
		}
		r := b.body("start_water", map[string]any{})
		if r["status"] != "success" {
			t.Fatalf("start_water = %v", r)
		}
		id := r["job_id"].(string)
		waitOn(t, b.clk, 1)
		b.clk.Advance(10 * time.Second) // step 2: the pump starts
		waitOn(t, b.clk, 1)
		if c := b.body("do_cancel_water", map[string]any{"value": id}); c["status"] != "success" {
			t.Fatalf("do_cancel_water = %v", c)
		}
		entries := []struct {
			name, tool, caller, key string
			value                   any
		}{
			{"do_* call", "do_set_heater", "", "", true},
			{"dead-man revert", "do_set_heater", gateway.DeadManCaller, "deadman-do_set_heater-", false},
			{"job's first step", "do_set_valve", "", id + "/step-1", true},
			{"job's later step", "do_set_pump", "", id + "/step-2", true},
			{"compensation of a later step", "do_set_pump", "", id + "/undo-2", false},
			{"compensation of the first step", "do_set_valve", "", id + "/undo-1", false},
		}
		rec.mu.Lock()
		defer rec.mu.Unlock()
		for _, e := range entries {
			found := false
			for _, a := range rec.attempts {
				if a.tool != e.tool || a.value != e.value || !strings.HasPrefix(a.key, e.key) || (e.caller != "" && a.caller != e.caller) {
					continue
				}
				if e.key == "" && strings.Contains(a.key, "/") {
					continue
				}
				found = true
				if a.held == e.value {
					t.Errorf("%s: the attempt record of %s value=%v was written after the write (the actuator already held it)", e.name, e.tool, e.value)
				}
			}
			if !found {
				t.Errorf("%s: no audit attempt record for %s value=%v (key %q…) before its write; attempts: %+v", e.name, e.tool, e.value, e.key, rec.attempts)
			}
		}
		// Each attempt has its result after it.
		for _, ev := range rec.events {
			if k, ok := strings.CutPrefix(ev, audit.EventAttempt+" "); ok && !contains(rec.events, audit.EventResult+" "+k) {
				t.Errorf("attempt %q has no result record", k)
			}
		}
	})
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// The source keeps it so: the set's actuator writer is handed out once
// (capabilities.Set.TakeWriter), taken by Serve; in the gateway the only
// write to an actuator is in do, and do is called only by handler (the
// DoHandler the server runs under its durable steps, for do_* calls and
// server.Actuate).
func TestOneWriteOnePath(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	calls := map[string][]string{} // "Write", "do" → enclosing funcs
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				if sel, ok := call.Fun.(*ast.SelectorExpr); ok && (sel.Sel.Name == "Write" && len(call.Args) >= 2 || sel.Sel.Name == "do" || sel.Sel.Name == "TakeWriter") {
					calls[sel.Sel.Name] = append(calls[sel.Sel.Name], fmt.Sprintf("%s (%s)", fn.Name.Name, fset.Position(call.Pos())))
				}
				return true
			})
		}
	}
	for what, want := range map[string]string{"Write": "do", "do": "handler", "TakeWriter": "Serve"} {
		if len(calls[what]) != 1 || !strings.HasPrefix(calls[what][0], want+" ") {
			t.Errorf("calls of %s: %v, want exactly one, in %s", what, calls[what], want)
		}
	}
}

// A renewal close to the deadline and the revert are serialized on the
// actuator's reservation: either the revert runs first and the renewal
// then re-arms and writes, or the renewal wins and the revert is dropped.
// After every trial, the heater on means a timer armed, and a renewal
// answered success with a revert_at still ahead is not undone.
func TestRenewalAroundTheDeadline(t *testing.T) {
	const trials, renewers = 60, 6
	var onNoTimer, undone, revertedFirst int
	for trial := range trials {
		synctest.Test(t, func(t *testing.T) {
			rec := &recorder{}
			b := newPathBench(t, rec, "version: 1\nactions:\n  do_set_heater:\n    max_on: 10m\n")
			if r := b.body("do_set_heater", map[string]any{"value": true}); r["status"] != "success" {
				t.Fatalf("do_set_heater(true) = %v", r)
			}
			waitOn(t, b.clk, 1)
			b.clk.Advance(10*time.Minute - time.Duration(trial%4)*time.Millisecond)
			var wg sync.WaitGroup
			results := make([]map[string]any, renewers)
			for i := range renewers {
				wg.Go(func() {
					results[i] = b.body("do_set_heater", map[string]any{"value": true, "idempotency_key": fmt.Sprintf("renew-%d-%d", trial, i)})
				})
				if i == renewers/2 {
					b.clk.Advance(5 * time.Millisecond) // the deadline passes among the renewals
				}
			}
			wg.Wait()
			synctest.Wait()
			now := b.clk.Now()
			on := b.body("read_heater", map[string]any{"max_age_ms": 0})["value"] == true
			_, armed := gateway.DeadManDue(b.Gateway, "do_set_heater")
			if on && !armed {
				onNoTimer++
			}
			for _, r := range results {
				if r["status"] != "success" {
					continue
				}
				if ra, _ := r["revert_at"].(string); ra != "" {
					at, _ := time.Parse(time.RFC3339Nano, ra)
					if at.After(now) && !on {
						undone++
						break
					}
				}
			}
			rec.mu.Lock()
			for _, a := range rec.attempts {
				if a.caller == gateway.DeadManCaller {
					revertedFirst++
				}
			}
			rec.mu.Unlock()
		})
	}
	t.Logf("%d trials of %d renewals around the deadline: %d reverts ran first, %d on with no timer, %d successes undone", trials, renewers, revertedFirst, onNoTimer, undone)
	if onNoTimer+undone > 0 {
		t.Errorf("%d trials left the heater on with no timer, %d undid a renewal answered success", onNoTimer, undone)
	}
}

// With the state disk full (every audit append fails ENOSPC), an action
// that is not a move to the safe value is refused, a job's step too; the
// stop to the safe value goes ahead, a job's compensation to it too, and
// their records are written, first and in order, once the disk has room.
func TestFullDiskStopsAllButTheSafeMove(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		b := newPathBench(t, rec, "version: 1\nactions:\n  do_set_valve:\n    cooldown: 1m\n")
		if r := b.body("do_set_heater", map[string]any{"value": true}); r["status"] != "success" {
			t.Fatalf("do_set_heater(true) = %v", r)
		}
		r := b.body("start_water", map[string]any{})
		if r["status"] != "success" {
			t.Fatalf("start_water = %v", r)
		}
		id := r["job_id"].(string)
		rec.setFull(true)
		if r := b.body("do_set_pump", map[string]any{"value": true}); r["status"] != "failed" {
			t.Fatalf("do_set_pump(true) on a full disk = %v, want refused", r)
		}
		if p := b.body("read_pump", map[string]any{"max_age_ms": 0}); p["value"] != false {
			t.Fatalf("pump after a refused do_set_pump = %v", p)
		}
		waitOn(t, b.clk, 1)
		b.clk.Advance(10 * time.Second) // step 2 (pump on) cannot be recorded: refused; the job fails, compensated
		synctest.Wait()
		if p := b.body("read_pump", map[string]any{"max_age_ms": 0}); p["value"] != false {
			t.Fatalf("pump after the job's step 2 on a full disk = %v, want not written", p)
		}
		st := b.body("read_status_water", map[string]any{"job_id": id})["value"].(map[string]any)
		if st["state"] != "failed" {
			t.Fatalf("water job on a full disk = %v, want failed", st)
		}
		if v := b.body("read_valve", map[string]any{"max_age_ms": 0}); v["value"] != false {
			t.Fatalf("valve after the failed job = %v, want its compensation (to the safe value) done", v)
		}
		stop := b.body("do_set_heater", map[string]any{"value": false})
		if stop["status"] == "failed" {
			t.Fatalf("do_set_heater(false), the safe value, on a full disk = %v, want it done", stop)
		}
		if h := b.body("read_heater", map[string]any{"max_age_ms": 0}); h["value"] != false {
			t.Fatalf("heater after the stop on a full disk = %v", h)
		}
		rec.mu.Lock()
		before := len(rec.events)
		rec.mu.Unlock()
		rec.setFull(false)
		if n := b.Server.FlushAudit(context.Background()); n != 0 {
			t.Fatalf("%d records still wait once the disk has room", n)
		}
		rec.mu.Lock()
		defer rec.mu.Unlock()
		kept := rec.events[before:]
		var stopAttempt, stopResult, undo int = -1, -1, -1
		for i, e := range kept {
			switch {
			case strings.HasPrefix(e, "attempt do_set_heater"):
				stopAttempt = i
			case strings.HasPrefix(e, "result do_set_heater"):
				stopResult = i
			case strings.HasPrefix(e, "attempt do_set_valve "+id+"/undo-1"):
				undo = i
			}
		}
		if undo < 0 || stopAttempt < 0 || stopResult < stopAttempt {
			t.Fatalf("records written once the disk had room: %v; want the compensation's and the stop's attempt, then the stop's result", kept)
		}
	})
}

// A dead-man revert that fell due while a renewal held the actuator's
// reservation (the renewal decided, its attempt record is being written,
// its timer not yet re-armed) decides again once the renewal ends: it is
// no longer the armed timer, so it is dropped, and the renewal, answered
// success with a revert_at ahead, is not undone.
func TestRevertWaitingOnARenewalIsDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		b := newPathBench(t, rec, "version: 1\nactions:\n  do_set_heater:\n    max_on: 10m\n")
		if r := b.body("do_set_heater", map[string]any{"value": true}); r["status"] != "success" {
			t.Fatalf("do_set_heater(true) = %v", r)
		}
		waitOn(t, b.clk, 1)
		b.clk.Advance(10*time.Minute - time.Second)
		gate := make(chan struct{})
		rec.mu.Lock()
		rec.gate, rec.gateKey = gate, "renew"
		rec.mu.Unlock()
		var renewal map[string]any
		done := make(chan struct{})
		go func() {
			defer close(done)
			renewal = b.body("do_set_heater", map[string]any{"value": true, "idempotency_key": "renew"})
		}()
		synctest.Wait()                // the renewal holds the reservation, its attempt record pending
		b.clk.Advance(2 * time.Second) // the old timer falls due: its revert waits for the reservation
		synctest.Wait()
		close(gate)
		<-done
		synctest.Wait()
		if renewal["status"] != "success" {
			t.Fatalf("renewal = %v", renewal)
		}
		at, _ := time.Parse(time.RFC3339Nano, renewal["revert_at"].(string))
		if !at.After(b.clk.Now()) {
			t.Fatalf("renewal's revert_at %v, want ahead of %v", at, b.clk.Now())
		}
		if h := b.body("read_heater", map[string]any{"max_age_ms": 0}); h["value"] != true {
			t.Fatalf("heater after a renewal answered success (revert_at %v) = %v: the stale revert undid it", at, h)
		}
		if _, armed := gateway.DeadManDue(b.Gateway, "do_set_heater"); !armed {
			t.Fatal("heater on with no dead-man timer")
		}
		b.clk.Advance(10 * time.Minute)
		synctest.Wait()
		if h := b.body("read_heater", map[string]any{"max_age_ms": 0}); h["value"] != false {
			t.Fatalf("heater 10 min after the renewal = %v, want reverted", h)
		}
	})
}

// A job holds its actuators for its life: a second job on them, or a
// do_* that is not a move to the safe value, is refused naming the job,
// and can_do says so; the stop to the safe value goes ahead.
func TestJobHoldsItsActuators(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newPathBench(t, &recorder{}, "version: 1\nactions: {}\n")
		r := b.body("start_warm", map[string]any{})
		if r["status"] != "success" {
			t.Fatalf("start_warm = %v", r)
		}
		id := r["job_id"].(string)
		r2 := b.body("start_warm", map[string]any{})
		if r2["status"] != "failed" || r2["permission"] != "policy_denied" || !strings.Contains(fmt.Sprint(r2["reason"]), "held by job "+id) {
			t.Fatalf("a second start_warm = %v, want refused: held by %s", r2, id)
		}
		d := b.body("do_set_heater", map[string]any{"value": true})
		if d["status"] != "failed" || !strings.Contains(fmt.Sprint(d["reason"]), "held by job "+id) {
			t.Fatalf("do_set_heater(true) during the job = %v, want refused: held by %s", d, id)
		}
		cd := b.body("can_do", map[string]any{"intent": map[string]any{"action": "do_set_heater", "value": true}})
		if bl, _ := cd["blocked"].([]any); len(bl) != 1 || !strings.Contains(fmt.Sprint(bl[0]), "held by job "+id) {
			t.Fatalf("can_do do_set_heater(true) during the job = %v, want blocked: held by %s", cd, id)
		}
		cd = b.body("can_do", map[string]any{"intent": map[string]any{"action": "start_warm"}})
		if bl, _ := cd["blocked"].([]any); len(bl) != 1 || !strings.Contains(fmt.Sprint(bl[0]), "held by job "+id) {
			t.Fatalf("can_do start_warm during the job = %v, want blocked: held by %s", cd, id)
		}
		if s := b.body("do_set_heater", map[string]any{"value": false}); s["status"] != "success" {
			t.Fatalf("do_set_heater(false), the safe value, during the job = %v, want done", s)
		}
		if c := b.body("do_cancel_warm", map[string]any{"value": id}); c["status"] != "success" {
			t.Fatalf("do_cancel_warm = %v", c)
		}
		if r3 := b.body("start_warm", map[string]any{}); r3["status"] != "success" {
			t.Fatalf("start_warm after the first ended = %v", r3)
		}
	})
}

// A job step that needs a person's approval waits for it, on the approval
// desk like any do_* call, instead of failing the job; approved in time,
// it runs (once, with its own key); not approved before the job's
// deadline, the job fails and its applied steps are compensated.
func TestJobStepWaitsForApproval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pol := "version: 1\nactions:\n  do_set_pump:\n    approval: {always: true}\n"
		m := manifesttest.Parse(t, "path.yml", pathManifest)
		p := manifesttest.ParsePolicy(t, "path.policy.yml", pol, m)
		desk := server.NewDesk(nil, 0)
		b := serveAt(t, m, time.Date(2026, 7, 1, 6, 0, 0, 0, time.UTC), gatewaytest.Options{
			Server:  []server.Option{server.WithDesk(desk)},
			Gateway: gateway.GatewayOptions{Policy: p, Jobs: m.Jobs}})
		r := b.body("start_water", map[string]any{})
		id, _ := r["job_id"].(string)
		if r["status"] != "success" {
			t.Fatalf("start_water = %v", r)
		}
		waitOn(t, b.clk, 1)
		b.clk.Advance(10 * time.Second) // step 2 (the pump) asks for approval
		synctest.Wait()
		st := b.body("read_status_water", map[string]any{"job_id": id})["value"].(map[string]any)
		if st["state"] != "running" || st["step"] != 2.0 || st["waiting"] == nil {
			t.Fatalf("water job at its pump step = %v, want running, waiting for approval", st)
		}
		reqs := desk.Requests()
		if len(reqs) != 1 || reqs[0].Tool != "do_set_pump" || reqs[0].Key != id+"/step-2" {
			t.Fatalf("desk = %+v, want the pump step waiting", reqs)
		}
		b.clk.Advance(3 * time.Second) // still waiting, asked again with the same key
		synctest.Wait()
		if n := len(desk.Requests()); n != 1 {
			t.Fatalf("%d requests on the desk after more polls, want the same one", n)
		}
		if _, err := desk.Decide(reqs[0].ID, server.Caller{Name: "alice", Role: "supervisor"}, true); err != nil {
			t.Fatal(err)
		}
		b.clk.Advance(time.Second)
		synctest.Wait()
		if p := b.body("read_pump", map[string]any{"max_age_ms": 0}); p["value"] != true {
			t.Fatalf("pump after the approval = %v, want on", p)
		}
		st = b.body("read_status_water", map[string]any{"job_id": id})["value"].(map[string]any)
		if st["state"] != "running" || st["waiting"] != nil {
			t.Fatalf("water job after the approval = %v", st)
		}
		if c := b.body("do_cancel_water", map[string]any{"value": id}); c["status"] != "success" {
			t.Fatalf("do_cancel_water = %v", c)
		}

		// Nobody approves: the job fails at its deadline, compensated.
		r = b.body("start_water", map[string]any{})
		id2, _ := r["job_id"].(string)
		waitOn(t, b.clk, 1)
		b.clk.Advance(10 * time.Second)
		synctest.Wait()
		for range 20 {
			b.clk.Advance(time.Minute)
			synctest.Wait()
		}
		st = b.body("read_status_water", map[string]any{"job_id": id2})["value"].(map[string]any)
		if st["state"] != "failed" || !strings.Contains(fmt.Sprint(st["reason"]), "deadline") {
			t.Fatalf("water job never approved = %v, want failed at its deadline", st)
		}
		if v := b.body("read_valve", map[string]any{"max_age_ms": 0}); v["value"] != false {
			t.Fatalf("valve after the job failed = %v, want its step 1 compensated", v)
		}
	})
}
