package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

const jobsBench = "testdata/jobs.yml"

// jobsSession serves the jobs bench over stdio with the simulated clock
// running scale times real time.
func jobsSession(t *testing.T, scale string, args ...string) *session {
	t.Helper()
	return stdioSession(t, protocols[1], append([]string{"--manifest", jobsBench, "--time-scale", scale}, args...)...)
}

// statusUntil polls read_status_<job> for id until ok accepts its value,
// or fails after 30 s of real time.
func statusUntil(t *testing.T, s *session, job, id, what string, ok func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	args := map[string]any{}
	if id != "" {
		args["job_id"] = id
	}
	for {
		body, _ := s.call("read_status_"+job, args)
		v, _ := body["value"].(map[string]any)
		if v != nil && ok(v) {
			if body["quality"] == nil || body["timestamp"] == nil {
				t.Fatalf("read_status_%s: %v lacks the read_* contract's quality or timestamp", job, body)
			}
			return body
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s never %s: last %v", id, what, body)
		}
		time.Sleep(50 * time.Millisecond) // the simulated clock moves on
	}
}

func jobState(want string) func(map[string]any) bool {
	return func(v map[string]any) bool { return v["state"] == want }
}

// TestJobHoldPollAndCancel: start_water is a do_* (key, side effects,
// compensation hint naming do_cancel_water) that answers at once with the
// job running and the valve open; read_status_water reports progress and
// the ETA as a read_*; the job closes the valve after 15 s of simulated
// time; a second job cancelled half-way closes it at once; a retry with
// the same key replays the first answer.
func TestJobHoldPollAndCancel(t *testing.T) {
	t.Parallel()
	s := jobsSession(t, "10")
	r, _ := s.call("start_water", map[string]any{"idempotency_key": "water-1"})
	id, _ := r["job_id"].(string)
	job, _ := r["job"].(map[string]any)
	if r["status"] != "success" || id == "" || job["state"] != "running" || r["applied_value"] != true || r["previous_value"] != false {
		t.Fatalf("start_water = %v", r)
	}
	if hint, _ := r["compensation_hint"].(string); r["compensable"] != true || hint != "do_cancel_water value="+id {
		t.Fatalf("start_water compensation = %v %v", r["compensable"], r["compensation_hint"])
	}
	if job["eta"] == nil || job["steps"] != 2.0 || job["step"] != 1.0 {
		t.Fatalf("start_water job = %v", job)
	}
	if v, _ := s.call("read_valve", map[string]any{"max_age_ms": 0}); v["value"] != true {
		t.Fatalf("read_valve during the job = %v", v)
	}
	mid := statusUntil(t, s, "water", id, "made progress", func(v map[string]any) bool {
		p, _ := v["progress"].(float64)
		return v["state"] == "running" && p > 0 && p < 1
	})
	if mid["quality"] != "good" {
		t.Fatalf("read_status_water = %v, want quality good", mid)
	}
	again, _ := s.call("start_water", map[string]any{"idempotency_key": "water-1"})
	if again["job_id"] != id || again["replayed"] != true {
		t.Fatalf("retry of start_water = %v, want the first job replayed", again)
	}
	done := statusUntil(t, s, "water", id, "succeeded", jobState("succeeded"))["value"].(map[string]any)
	applied, _ := done["applied"].([]any)
	if len(applied) != 2 || applied[1].(map[string]any)["value"] != false || done["progress"] != 1.0 || done["eta"] != nil {
		t.Fatalf("finished job = %v", done)
	}
	readUntil(t, s, "read_valve", "closed", func(b map[string]any) bool { return b["value"] == false })

	r2, _ := s.call("start_water", map[string]any{"idempotency_key": "water-2"})
	id2, _ := r2["job_id"].(string)
	c, _ := s.call("do_cancel_water", map[string]any{"value": id2, "idempotency_key": "cancel-2"})
	if c["status"] != "success" || c["applied_value"] != "cancelled" || c["previous_value"] != "running" {
		t.Fatalf("do_cancel_water = %v", c)
	}
	if v, _ := s.call("read_valve", map[string]any{"max_age_ms": 0}); v["value"] != false {
		t.Fatalf("read_valve after the cancel = %v, want closed by the compensation", v)
	}
	latest := statusUntil(t, s, "water", "", "cancelled", jobState("cancelled"))["value"].(map[string]any)
	if latest["job_id"] != id2 {
		t.Fatalf("read_status_water without job_id = %v, want the latest job", latest)
	}
	c2, isErr := s.call("do_cancel_water", map[string]any{"value": id2})
	if c2["status"] != "failed" || !isErr {
		t.Fatalf("cancelling an ended job = %v", c2)
	}
	u, _ := s.call("read_status_water", map[string]any{"job_id": "job-unknown"})
	if u["quality"] != "error" {
		t.Fatalf("read_status_water(unknown) = %v", u)
	}
}

// auditEvents returns the events of the audit log in dir, in order.
func auditEvents(t *testing.T, dir string) []map[string]any {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, auditFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil // rotated away at start (its age counts on the simulated clock), not written yet
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r map[string]any
		if json.Unmarshal(sc.Bytes(), &r) == nil {
			out = append(out, r)
		}
	}
	return out
}

func hasEvent(evs []map[string]any, event, tool string) map[string]any {
	for _, e := range evs {
		if e["event"] == event && e["tool"] == tool {
			return e
		}
	}
	return nil
}

// httpJobs starts the jobs bench over HTTP and returns the process and URL.
func httpJobs(t *testing.T, args ...string) (proc interface{ Kill() error }, url string) {
	t.Helper()
	cmd, u := launch(t, os.Interrupt, nil, binary, `on (http://\S+/mcp)`,
		append([]string{"serve", "--sim", "--http", "127.0.0.1:0", "--log-level", "warn", "--manifest", jobsBench}, args...)...)
	if u == "" {
		t.Fatal("the server printed no URL")
	}
	return cmd.Process, u
}

// TestJobKilledMidJob: the server is killed (SIGKILL) while a hold job and
// a ramp job run; after a restart on the same --state the hold job (on
// restart: compensate) has been compensated and the ramp (resume) runs on
// to its end; the audit log says which.
func TestJobKilledMidJob(t *testing.T) {
	dir := t.TempDir()
	proc, url := httpJobs(t, "--state", dir, "--time-scale", "2")
	s := httpSession(t, url, protocols[1])
	w, _ := s.call("start_water", map[string]any{})
	f, _ := s.call("start_fan_up", map[string]any{})
	if w["status"] != "success" || f["status"] != "success" {
		t.Fatalf("start_water = %v\nstart_fan_up = %v", w, f)
	}
	proc.Kill()
	s.c.Close()

	_, url = httpJobs(t, "--state", dir, "--time-scale", "20")
	s2 := httpSession(t, url, protocols[1])
	water := statusUntil(t, s2, "water", w["job_id"].(string), "compensated", jobState("compensated"))["value"].(map[string]any)
	applied := water["applied"].([]any)
	if last := applied[len(applied)-1].(map[string]any); last["compensation"] != true || last["value"] != false {
		t.Fatalf("compensated job = %v", water)
	}
	if v, _ := s2.call("read_valve", map[string]any{"max_age_ms": 0}); v["value"] != false {
		t.Fatalf("read_valve after the restart = %v", v)
	}
	statusUntil(t, s2, "fan_up", f["job_id"].(string), "resumed to its end", jobState("succeeded"))
	readUntil(t, s2, "read_fan", "at the ramp's target", func(b map[string]any) bool { return near(b["value"], 60, 0.5) })
	evs := auditEvents(t, dir)
	if hasEvent(evs, "job_compensated", "start_water") == nil || hasEvent(evs, "job_resumed", "start_fan_up") == nil {
		t.Fatalf("audit log lacks job_compensated/job_resumed: %v", evs)
	}
	// The jobs' records are links of the same hash chain as the calls'.
	if out, errOut, code := runCLI(t, "audit", "verify", "--state", dir); code != 0 {
		t.Fatalf("audit verify: exit %d\n%s\n%s", code, out, errOut)
	}
}

// TestJobAsTask: a task-capable client calls start_water as an MCP task
// (protocol 2025-11-25): tools/call answers with the task, progress
// notifications arrive (throttled: at most one per second of simulated
// time, 15 s of job), tasks/result gives the job's final do_* body;
// tasks/cancel of a second task cancels its job and closes the valve.
func TestJobAsTask(t *testing.T) {
	t.Parallel()
	s := stdioSession(t, "2025-11-25", "--manifest", jobsBench, "--time-scale", "10")
	c := s.c
	var mu sync.Mutex
	var progress []float64
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == "notifications/progress" {
			mu.Lock()
			p, _ := n.Params.AdditionalFields["progress"].(float64)
			progress = append(progress, p)
			mu.Unlock()
		}
	})
	for _, tool := range s.tools {
		if tool.Name == "start_water" && (tool.Execution == nil || tool.Execution.TaskSupport != mcp.TaskSupportOptional) {
			t.Fatalf("start_water execution = %+v, want taskSupport optional", tool.Execution)
		}
	}
	ctx := t.Context()
	// mcp-go's client has no call for a task-augmented tools/call (its
	// CallTool expects the tool's result): send the request as is.
	n := int64(1000)
	call := func(key string) string {
		n++
		resp, err := c.GetTransport().SendRequest(ctx, transport.JSONRPCRequest{JSONRPC: "2.0", ID: mcp.NewRequestId(n),
			Method: "tools/call", Params: map[string]any{"name": "start_water", "arguments": map[string]any{"idempotency_key": key},
				"task": map[string]any{}, "_meta": map[string]any{"progressToken": key}}})
		if err != nil || resp.Error != nil {
			t.Fatalf("start_water as a task: %v %v", err, resp)
		}
		var created mcp.CreateTaskResult
		if err := json.Unmarshal(resp.Result, &created); err != nil || created.Task.TaskId == "" {
			t.Fatalf("start_water as a task answered %s (%v), want the task", resp.Result, err)
		}
		return created.Task.TaskId
	}
	id := call("task-1")
	res, err := c.TaskResult(ctx, mcp.TaskResultRequest{Params: mcp.TaskResultParams{TaskId: id}})
	if err != nil {
		t.Fatalf("tasks/result: %v", err)
	}
	body, _ := res.StructuredContent.(map[string]any)
	job, _ := body["job"].(map[string]any)
	if body["status"] != "success" || job["state"] != "succeeded" || body["idempotency_key"] != "task-1" {
		t.Fatalf("tasks/result = %v", res.StructuredContent)
	}
	mu.Lock()
	count := len(progress)
	mu.Unlock()
	if count < 2 || count > 17 {
		t.Fatalf("%d progress notifications for a 15 s job, want 2..17 (one per simulated second at most, and the start)", count)
	}
	t.Logf("%d progress notifications for the 15 s job (at --time-scale 10)", count)
	id2 := call("task-2")
	// The task runs the call after tools/call answered: wait for its start.
	readUntil(t, s, "read_valve", "opened by the second task", func(b map[string]any) bool { return b["value"] == true })
	if _, err := c.CancelTask(ctx, mcp.CancelTaskRequest{Params: mcp.CancelTaskParams{TaskId: id2}}); err != nil {
		t.Fatalf("tasks/cancel: %v", err)
	}
	st := statusUntil(t, s, "water", "", "cancelled by tasks/cancel", jobState("cancelled"))["value"].(map[string]any)
	if !strings.Contains(st["reason"].(string), "tasks/cancel") {
		t.Fatalf("cancelled job = %v", st)
	}
	readUntil(t, s, "read_valve", "closed", func(b map[string]any) bool { return b["value"] == false })
}

// TestDeadManRevertsWithNoClient: do_set_heater true answers with
// revert_at (policy max_on: 20s) and can_do says it too; the client goes
// away; the gateway reverts the heater on its own clock and audits it.
// A revert due while the server was down happens as it starts.
func TestDeadManRevertsWithNoClient(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, url := httpJobs(t, "--state", dir, "--time-scale", "10")
	s := httpSession(t, url, protocols[1])
	cd, _ := s.call("can_do", map[string]any{"intent": map[string]any{"action": "do_set_heater", "value": true}})
	cands, _ := cd["candidates"].([]any)
	if len(cands) != 1 || cands[0].(map[string]any)["revert_at"] == nil {
		t.Fatalf("can_do = %v, want the heater with revert_at", cd)
	}
	r, _ := s.call("do_set_heater", map[string]any{"value": true})
	at, err := time.Parse(time.RFC3339Nano, r["revert_at"].(string))
	ts, _ := time.Parse(time.RFC3339Nano, r["timestamp"].(string))
	// The timer is armed (durably) before the write, so revert_at is at
	// most 20 s after the result's timestamp, taken after the readback.
	if r["status"] != "success" || err != nil || at.Sub(ts) <= 10*time.Second || at.Sub(ts) > 20*time.Second {
		t.Fatalf("do_set_heater(true) = %v, want revert_at about 20 s after its timestamp", r)
	}
	s.c.Close() // no client is connected from here on
	deadline := time.Now().Add(2 * time.Minute)
	for hasEvent(auditEvents(t, dir), "deadman_revert", "do_set_heater") == nil {
		if time.Now().After(deadline) {
			t.Fatal("no dead-man revert within 2 minutes (the simulated clock runs faster)")
		}
		time.Sleep(100 * time.Millisecond) // the gateway's clock runs on
	}
	s2 := httpSession(t, url, protocols[1])
	if v, _ := s2.call("read_heater", map[string]any{"max_age_ms": 0}); v["value"] != false {
		t.Fatalf("read_heater after the revert = %v", v)
	}
	ev := hasEvent(auditEvents(t, dir), "deadman_revert", "do_set_heater")
	if ev["caller"] != "dead-man" || ev["status"] != "success" {
		t.Fatalf("audit record = %v", ev)
	}

	// Due while down: the heater on, the server killed, restarted an hour later.
	dir2 := t.TempDir()
	start := time.Date(2026, 7, 1, 6, 0, 0, 0, time.UTC)
	proc, url := httpJobs(t, "--state", dir2, "--sim-start", start.Format(time.RFC3339))
	s3 := httpSession(t, url, protocols[1])
	if r, _ := s3.call("do_set_heater", map[string]any{"value": true}); r["revert_at"] == nil {
		t.Fatalf("do_set_heater(true) = %v", r)
	}
	proc.Kill()
	httpJobs(t, "--state", dir2, "--sim-start", start.Add(time.Hour).Format(time.RFC3339))
	deadline = time.Now().Add(2 * time.Minute)
	for {
		if ev := hasEvent(auditEvents(t, dir2), "deadman_revert", "do_set_heater"); ev != nil {
			when, _ := time.Parse(time.RFC3339Nano, ev["time"].(string))
			if when.Before(start.Add(time.Hour)) || when.After(start.Add(time.Hour+time.Minute)) {
				t.Fatalf("revert at %v, want as the restarted server starts (%v)", when, start.Add(time.Hour))
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a revert due while the server was down did not happen at start")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
