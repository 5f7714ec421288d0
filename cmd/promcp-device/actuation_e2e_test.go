package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/promcp/promcp-device/audit/audittest"
)

// TestDeadManBeatsCooldown: a dead-man limit needs a declared safe value
// (lint names the key), and with one, the heater's own 30-minute cooldown
// does not hold its revert back: on at max_on 20 s, off again at 20 s of
// the gateway's clock, as `dead-man`, with its attempt record before its
// result.
func TestDeadManBeatsCooldown(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src, err := os.ReadFile(jobsBench)
	if err != nil {
		t.Fatal(err)
	}
	noSafe := strings.Replace(string(src), "compensable: true, safe_value: false}\n  - name: fan", "compensable: true}\n  - name: fan", 1)
	if noSafe == string(src) {
		t.Fatal("the jobs bench changed: no heater safe_value to remove")
	}
	pol := "version: 1\nactions:\n  do_set_heater:\n    max_on: 20s\n    cooldown: 30m\n"
	for name, body := range map[string]string{"nosafe/jobs.yml": noSafe, "nosafe/jobs.policy.yml": pol, "policy.yml": pol} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, stderr, code := runCLI(t, "lint", filepath.Join(dir, "nosafe/jobs.yml"))
	if code == 0 || !strings.Contains(out+stderr, "actions.do_set_heater.max_on") || !strings.Contains(out+stderr, "no safe_value") {
		t.Fatalf("lint of max_on on a heater with no safe_value: exit %d\n%s%s\nwant an error naming actions.do_set_heater.max_on", code, out, stderr)
	}

	state := t.TempDir()
	_, url := httpJobs(t, "--state", state, "--time-scale", "10", "--policy", filepath.Join(dir, "policy.yml"))
	s := httpSession(t, url, protocols[1])
	if r, _ := s.call("do_set_heater", map[string]any{"value": true}); r["status"] != "success" || r["revert_at"] == nil {
		t.Fatalf("do_set_heater(true) = %v", r)
	}
	readUntil(t, s, "read_heater", "reverted past its cooldown", func(b map[string]any) bool { return b["value"] == false })
	var attempt, result int = -1, -1
	for i, e := range auditEvents(t, state) {
		if e["tool"] == "do_set_heater" && e["caller"] == "dead-man" {
			switch e["event"] {
			case "attempt":
				attempt = i
			case "result":
				result = i
			}
		}
	}
	if attempt < 0 || result < attempt {
		t.Fatalf("audit: dead-man attempt at %d, result at %d; want the attempt record before the result", attempt, result)
	}
}

// TestFullDiskJob: with the state disk full, a job's later steps are not
// written unaudited: the ramp's next step is refused, the job fails and is
// compensated to where it started (the fan's safe value, which goes ahead);
// a do_* away from the safe value is refused, the stop to it is done; once
// the disk has room, the kept records are written first.
func TestFullDiskJob(t *testing.T) {
	state := audittest.Tmpfs(t, "4m")
	_, url := httpJobs(t, "--state", state, "--time-scale", "1")
	s := httpSession(t, url, protocols[1])
	if r, _ := s.call("do_set_heater", map[string]any{"value": true}); r["status"] != "success" {
		t.Fatalf("do_set_heater(true) = %v", r)
	}
	f, _ := s.call("start_fan_up", map[string]any{})
	if f["status"] != "success" {
		t.Fatalf("start_fan_up = %v", f)
	}
	id, _ := f["job_id"].(string)
	filler := filepath.Join(state, "filler")
	if err := audittest.Fill(filler); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	var st map[string]any
	for {
		body, _ := s.call("read_status_fan_up", map[string]any{"job_id": id})
		st, _ = body["value"].(map[string]any)
		if st != nil && st["state"] != "running" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the ramp still runs on a full disk after 30 s: %v", st)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if st["state"] != "failed" {
		t.Fatalf("the ramp on a full disk ended %v, want failed (its steps not written unaudited)", st)
	}
	readUntil(t, s, "read_fan", "compensated to 0", func(b map[string]any) bool { return b["value"] == 0.0 })
	if r, _ := s.call("do_set_valve", map[string]any{"value": true}); r["status"] != "failed" {
		t.Fatalf("do_set_valve(true) on a full disk = %v, want refused", r)
	}
	if r, _ := s.call("do_set_heater", map[string]any{"value": false}); r["status"] == "failed" {
		t.Fatalf("do_set_heater(false), the safe value, on a full disk = %v, want done", r)
	}
	readUntil(t, s, "read_heater", "off", func(b map[string]any) bool { return b["value"] == false })
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	// The next append writes the kept records first.
	if r, _ := s.call("do_set_valve", map[string]any{"value": false}); r["status"] == "failed" {
		t.Fatalf("do_set_valve(false) once the disk has room = %v", r)
	}
	evs := auditEvents(t, state)
	stop := -1
	for i, e := range evs {
		if args, _ := e["arguments"].(map[string]any); e["event"] == "attempt" && e["tool"] == "do_set_heater" && args["value"] == false {
			stop = i
		}
	}
	if stop < 0 {
		t.Fatalf("the stop's attempt record was not written once the disk had room; audit: %v", evs)
	}
}

// renewalTrials is how many trials TestRenewalsAroundTheDeadline runs
// (each about 5 s): the in-process TestRevertWaitingOnARenewalIsDropped
// (gateway) reproduces the race deterministically; this one checks the
// binary, and runs longer on demand (-renewal.trials=200).
var renewalTrials = flag.Int("renewal.trials", 3, "trials of TestRenewalsAroundTheDeadline")

// TestRenewalsAroundTheDeadline: 8 sessions renew a heater (max_on 2 s)
// around its deadline, in several trials through the binary. A renewal
// answered success is not undone before its revert_at, and the heater is
// never left on with no timer: after the last revert_at it is off.
func TestRenewalsAroundTheDeadline(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.yml")
	if err := os.WriteFile(pol, []byte("version: 1\nactions:\n  do_set_heater:\n    max_on: 2s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, url := httpJobs(t, "--policy", pol)
	trials, renewers := *renewalTrials, 8
	sessions := make([]*session, renewers)
	for i := range sessions {
		sessions[i] = httpSession(t, url, protocols[1])
	}
	s := sessions[0]
	var undone, onNoTimer int
	for trial := range trials {
		r, _ := s.call("do_set_heater", map[string]any{"value": true, "idempotency_key": fmt.Sprintf("arm-%d", trial)})
		at, err := time.Parse(time.RFC3339Nano, fmt.Sprint(r["revert_at"]))
		if r["status"] != "success" || err != nil {
			t.Fatalf("do_set_heater(true) = %v", r)
		}
		time.Sleep(time.Until(at.Add(-time.Duration(20+trial*5) * time.Millisecond))) // just before the deadline
		results := make([]map[string]any, renewers)
		var wg sync.WaitGroup
		for i, ss := range sessions {
			wg.Go(func() {
				results[i], _ = ss.call("do_set_heater", map[string]any{"value": true, "idempotency_key": fmt.Sprintf("renew-%d-%d", trial, i)})
			})
		}
		wg.Wait()
		h, _ := s.call("read_heater", map[string]any{"max_age_ms": 0})
		now := time.Now()
		var last time.Time
		for _, r := range results {
			if r["status"] != "success" {
				continue
			}
			ra, err := time.Parse(time.RFC3339Nano, fmt.Sprint(r["revert_at"]))
			if err != nil {
				continue
			}
			last = maxTime(last, ra)
			if h["value"] == false && ra.After(now.Add(500*time.Millisecond)) {
				undone++
				break
			}
		}
		time.Sleep(time.Until(last.Add(time.Second)))
		if h, _ := s.call("read_heater", map[string]any{"max_age_ms": 0}); h["value"] != false {
			onNoTimer++
			s.call("do_set_heater", map[string]any{"value": false})
		}
	}
	t.Logf("%d trials of %d renewals around a 2 s dead-man deadline: %d renewals answered success undone at once, %d left on past their last revert_at", trials, renewers, undone, onNoTimer)
	if undone+onNoTimer > 0 {
		t.Errorf("%d trials undid a renewal answered success; %d left the heater on with no timer", undone, onNoTimer)
	}
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
