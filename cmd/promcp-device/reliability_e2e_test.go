package main

// The crash harness, graceful shutdown and the audit CLI, on the real
// binary with --state. The simulator's device state lives in the process:
// a restarted serve --sim starts from the manifest's initial values. So
// these tests count actuations in the audit log (an attempt record is
// fsync'd before every handler run that may actuate) and check what the
// restarted server answers, not the simulated dimmer's level.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/promcp/promcp-device/audit"
)

var crashTrials = flag.Int("crash.trials", 20, "TestCrashRecovery: SIGKILL trials")

func callDo(c *client.Client, t *testing.T, key string, value float64) (map[string]any, error) {
	return callTool(t, c, "do_set_light_level", map[string]any{"value": value, "idempotency_key": key})
}

func auditRecords(t *testing.T, dir string) []audit.Record {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, auditFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := audit.Tail(f, 0)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// auditWatch follows the audit log while serve writes it, and knows which
// attempts have no result yet.
type auditWatch struct {
	t       *testing.T
	f       *os.File
	partial []byte          // a line not yet complete
	open    map[string]bool // keys with an attempt and no result
	results int             // attempts finished since the watch began
}

// watchAudit follows dir's audit log from its current end.
func watchAudit(t *testing.T, dir string) *auditWatch {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, auditFile))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		t.Fatal(err)
	}
	return &auditWatch{t: t, f: f, open: map[string]bool{}}
}

// poll reads what was appended since the last poll.
func (w *auditWatch) poll() {
	w.t.Helper()
	b, err := io.ReadAll(w.f)
	if err != nil {
		w.t.Fatal(err)
	}
	w.partial = append(w.partial, b...)
	for {
		line, rest, ok := bytes.Cut(w.partial, []byte("\n"))
		if !ok {
			return
		}
		w.partial = rest
		var r audit.Record
		if err := json.Unmarshal(line, &r); err != nil {
			w.t.Fatalf("audit log line %q: %v", line, err)
		}
		switch r.Event {
		case audit.EventAttempt:
			w.open[r.Key] = true
		case audit.EventResult, audit.EventRecovered:
			delete(w.open, r.Key)
			w.results++
		}
	}
}

// until polls, every millisecond, until cond holds; it fails the test
// after 30 s.
func (w *auditWatch) until(what string, cond func() bool) {
	w.t.Helper()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	deadline := time.After(30 * time.Second)
	for w.poll(); !cond(); w.poll() {
		select {
		case <-tick.C:
		case <-deadline:
			w.t.Fatalf("audit log: no %s within 30 s", what)
		}
	}
}

// TestCrashRecovery starts the real binary on a state directory, drives
// do_* calls from 8 clients, kills it with SIGKILL while an attempt is in
// flight, restarts it on the same directory and retries every key it sent.
//
// The kill is aimed, not hoped for: the test follows the audit log until
// some calls have finished (a random number, 1 to 12) and an attempt has
// no result, then freezes the process (SIGSTOP, until every thread has
// stopped) and reads the log to its end. If an attempt is still without
// its result there, SIGKILL lands on exactly that state: the process dies
// between the attempt record and the result. If the attempt finished
// before the freeze, the process is resumed (SIGCONT) and the test follows
// the log again, so every trial's kill lands mid-attempt however slowly
// this machine runs the test beside the server. It checks, over all trials:
//
//   - every key cut off mid-attempt is answered recovered on retry (read
//     back, not written again), with the value it observed;
//
//   - no key has more than one attempt record, so no key reached a device
//     write twice (an attempt is fsync'd before every handler run that may
//     write);
//
//   - every key answered before the kill is answered again, on the
//     restarted server, with the identical body (replayed);
//
//   - a key that never reached the store is actuated once on retry;
//
//   - `audit verify` passes after every restart.
//
//     go test ./cmd/promcp-device -run TestCrashRecovery -v -crash.trials 100
func TestCrashRecovery(t *testing.T) {
	t.Parallel()
	bench := patientLabBench(t)
	dir := t.TempDir()
	var sent, answered, replayed, recovered, fresh int // retries after restarts, by how they were answered
	var cutOff, missed int                             // keys cut off mid-attempt; freezes that landed between attempts
	for trial := 0; trial < *crashTrials; {
		p := startServe(t, "--manifest", bench, "--state", dir)
		c := mcpClient(t, p.url, "")
		watch := watchAudit(t, dir)
		var mu sync.Mutex
		bodies := map[string]map[string]any{}
		keys := map[string]float64{}
		working, stop := context.WithCancel(t.Context()) // the workers call until stop
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				for i := 0; working.Err() == nil; i++ {
					key := fmt.Sprintf("t%d-w%d-%d", trial, w, i)
					value := float64(1+(i*7+w)%190) * 0.5
					mu.Lock()
					keys[key] = value
					mu.Unlock()
					body, err := callDo(c, t, key, value)
					if err != nil {
						return // the server died under us
					}
					mu.Lock()
					bodies[key] = body
					mu.Unlock()
				}
			})
		}
		after := 1 + rand.IntN(12)
		inFlight := func() bool { return watch.results >= after && len(watch.open) > 0 }
		for resumed := 0; ; resumed++ {
			watch.until("attempt in flight", inFlight)
			freeze(t, p.cmd.Process.Pid)
			if watch.poll(); inFlight() { // what the log holds when the kill lands
				break
			}
			if resumed == 100 {
				t.Fatalf("trial %d: 100 freezes in a row landed between attempts, none mid-attempt", trial)
			}
			missed++
			p.cmd.Process.Signal(syscall.SIGCONT)
		}
		p.cmd.Process.Signal(syscall.SIGKILL)
		waitExit(t, p.cmd)
		watch.poll() // a frozen process wrote nothing more
		cut := maps.Clone(watch.open)
		stop()
		wg.Wait()
		c.Close()

		p = startServe(t, "--manifest", bench, "--state", dir)
		c = mcpClient(t, p.url, "")
		retries := make(chan string)
		for range 8 {
			wg.Go(func() {
				for key := range retries {
					body, err := callDo(c, t, key, keys[key])
					mu.Lock()
					sent++
					first, answeredBefore := bodies[key]
					switch {
					case err != nil:
						t.Errorf("trial %d: retry %s: %v", trial, key, err)
					case cut[key] && body["recovered"] != true:
						t.Errorf("trial %d: %s was cut off mid-attempt by the kill, but the retry was not recovered: %v", trial, key, body)
					case answeredBefore:
						answered++
						if body["replayed"] != true {
							t.Errorf("trial %d: %s was answered before the kill (%v) but the retry was not replayed: %v", trial, key, first, body)
						}
						delete(body, "replayed")
						a, _ := json.Marshal(first)
						b, _ := json.Marshal(body)
						if string(a) != string(b) {
							t.Errorf("trial %d: %s: retry body differs from the first:\n%s\n%s", trial, key, a, b)
						}
					case body["recovered"] == true:
						recovered++
						if body["status"] == "failed" || body["applied_value"] == nil {
							t.Errorf("trial %d: %s recovered without an observed value: %v", trial, key, body)
						}
					case body["replayed"] == true:
						replayed++ // done before the kill, the answer lost in transit
					case body["status"] == "success" || body["status"] == "partial":
						fresh++ // partial: retries race on one dimmer, a readback may see another's write
					default:
						t.Errorf("trial %d: retry %s = %v", trial, key, body)
					}
					mu.Unlock()
				}
			})
		}
		for key := range keys {
			retries <- key
		}
		close(retries)
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
		c.Close()
		if err := stopProc(t, p.cmd, syscall.SIGTERM); err != nil {
			t.Fatalf("trial %d: serve after SIGTERM: %v, want exit 0", trial, err)
		}
		// audit verify in process: the CLI's own code, without a process
		// per trial (TestAuditCLI runs the binary's).
		var out strings.Builder
		if code := cmdAudit(newCLI(t.Context(), "audit", []string{"verify", "--state", dir}, nil, &out, &out)); code != 0 {
			t.Fatalf("trial %d: audit verify: exit %d: %s", trial, code, out.String())
		}
		if len(cut) == 0 {
			t.Fatalf("trial %d: the log of the frozen process had an attempt in flight, but none once it was killed", trial)
		}
		cutOff += len(cut)
		trial++
	}
	attempts := map[string]int{}
	for _, r := range auditRecords(t, dir) {
		if r.Event == audit.EventAttempt {
			attempts[r.Key]++
		}
	}
	for k, n := range attempts {
		if n > 1 {
			t.Errorf("key %s has %d attempt records: it may have actuated %d times", k, n, n)
		}
	}
	t.Logf("crash recovery: %d SIGKILL trials, each landing mid-attempt (%d more freezes landed between attempts and were resumed), %d keys retried after restart: %d cut off mid-attempt, %d recovered by readback, %d answered before the kill and replayed identically, %d done but the answer lost (replayed), %d never reached the store and actuated on retry; %d keys with an attempt record, none with two; audit verify ok after every restart",
		*crashTrials, missed, sent, cutOff, recovered, answered, replayed, fresh, len(attempts))
}

// patientLabBench writes lab-bench.yml (and its policy) to a temporary
// directory with a 10 s transaction timeout on the dimmer's I2C bus
// instead of the default 100 ms, and returns its path. Eight clients call
// the one simulated dimmer at once (TestCrashRecovery), or beside an
// attack (TestHTTPHostileLoad), so a transaction queues behind the
// others; under the race detector on a loaded machine that queue outlasts
// 100 ms, and a read that times out makes a call fail (source_unreachable)
// for the machine's load, not for anything the test is about.
func patientLabBench(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile(labBench)
	if err != nil {
		t.Fatal(err)
	}
	const bus = "  - name: i2c1\n    kind: i2c\n    device: \"1\"\n"
	if !strings.Contains(string(src), bus) {
		t.Fatalf("%s no longer declares %q", labBench, bus)
	}
	dir := t.TempDir()
	manifest := filepath.Join(dir, filepath.Base(labBench))
	if err := os.WriteFile(manifest, []byte(strings.Replace(string(src), bus, bus+"    timeout: 10s\n", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	policy := "lab-bench.policy.yml"
	pol, err := os.ReadFile(filepath.Join(filepath.Dir(labBench), policy))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, policy), pol, 0o600); err != nil {
		t.Fatal(err)
	}
	return manifest
}

// freeze stops process pid with SIGSTOP and waits until every thread of
// it has stopped, so that what it has written is all it writes until it
// is resumed or killed.
func freeze(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP %d: %v", pid, err)
	}
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	deadline := time.After(exitTimeout)
	for !stopped(t, pid) {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("process %d not stopped %s after SIGSTOP", pid, exitTimeout)
		}
	}
}

// stopped reports whether every thread of process pid is stopped (state
// T in /proc/pid/task/*/stat) or gone.
func stopped(t *testing.T, pid int) bool {
	stats, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
	if err != nil || len(stats) == 0 {
		t.Fatalf("threads of process %d: %v", pid, err)
	}
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the thread ended
		}
		// The state follows the command name, which is in parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 || i+2 >= len(b) {
			t.Fatalf("%s: %q", f, b)
		}
		if st := b[i+2]; st != 'T' && st != 't' && st != 'Z' && st != 'X' {
			return false
		}
	}
	return true
}

// TestSIGTERMFinishesCallsInFlight: SIGTERM during a stream of do_* calls
// exits 0, and every attempt in the audit log has its result.
func TestSIGTERMFinishesCallsInFlight(t *testing.T) {
	dir := t.TempDir()
	p := startServe(t, "--manifest", labBench, "--state", dir)
	c := mcpClient(t, p.url, "")
	watch := watchAudit(t, dir)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				if _, err := callDo(c, t, fmt.Sprintf("w%d-%d", w, i), 10); err != nil {
					return
				}
			}
		})
	}
	watch.until("attempt in flight after 20 results", func() bool { return watch.results >= 20 && len(watch.open) > 0 })
	if err := stopProc(t, p.cmd, syscall.SIGTERM); err != nil {
		t.Fatalf("serve after SIGTERM: %v, want exit 0", err)
	}
	wg.Wait()
	open := map[string]int{}
	for _, r := range auditRecords(t, dir) {
		switch r.Event {
		case audit.EventAttempt:
			open[r.Key]++
		case audit.EventResult:
			open[r.Key]--
		}
	}
	for k, n := range open {
		if n != 0 {
			t.Errorf("key %s: attempt without its result after a graceful shutdown", k)
		}
	}
	if len(open) == 0 {
		t.Fatal("no do_* call reached the server before SIGTERM")
	}
}

// TestAuditCLI: verify passes on a fresh log, tail shows readable records,
// and editing one record makes verify fail naming it.
func TestAuditCLI(t *testing.T) {
	dir := t.TempDir()
	s := stdioSession(t, protocols[1], "--manifest", labBench, "--state", dir)
	for i, v := range []float64{10, 20, 30} {
		if r, _ := s.call("do_set_light_level", map[string]any{"value": v, "idempotency_key": fmt.Sprint("k", i)}); r["status"] != "success" {
			t.Fatalf("do = %v", r)
		}
	}
	s.call("do_set_light_level", map[string]any{"value": 10, "idempotency_key": "k0"}) // replayed
	s.c.Close()                                                                        // stdin EOF: serve flushes and exits

	out, _, code := runCLI(t, "audit", "verify", "--state", dir)
	if code != 0 || !strings.Contains(out, "ok: 7 records") {
		t.Fatalf("audit verify: exit %d, %q; want ok with 7 records (3 attempts, 3 results, 1 replay)", code, out)
	}
	out, _, code = runCLI(t, "audit", "tail", "-n", "2", "--state", dir)
	if lines := strings.Split(strings.TrimSpace(out), "\n"); code != 0 || len(lines) != 2 ||
		!strings.Contains(lines[1], "replayed") || !strings.Contains(lines[1], "key=k0") || !strings.Contains(lines[1], "by local (operator)") {
		t.Fatalf("audit tail -n 2: exit %d:\n%s", code, out)
	}

	path := filepath.Join(dir, auditFile)
	data, _ := os.ReadFile(path)
	lines := strings.Split(string(data), "\n")
	lines[3] = strings.Replace(lines[3], `"value":20`, `"value":99`, 1) // record 4: the result of k1
	os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o600)
	out, _, code = runCLI(t, "audit", "verify", "--state", dir)
	if code != 1 || !strings.Contains(out, "line 4 (record 4)") {
		t.Fatalf("audit verify after editing record 4: exit %d, %q; want exit 1 naming line 4 (record 4)", code, out)
	}
}

// TestStdioSIGTERM: serve over stdio exits 0 on SIGTERM with stdin still
// open, and leaves the state directory usable.
func TestStdioSIGTERM(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(binary, "serve", "--sim", "--manifest", labBench, "--state", dir, "--log-level", "info")
	t.Cleanup(func() { stopProc(t, cmd, os.Kill) })
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	logs := make(chan string, 1)
	go func() {
		var all strings.Builder
		sc := bufio.NewScanner(errPipe)
		for sc.Scan() {
			all.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), "serving over stdio") {
				close(started)
			}
		}
		logs <- all.String()
	}()
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("serve over stdio did not start")
	}
	cmd.Process.Signal(syscall.SIGTERM)
	var stderr string
	select {
	case stderr = <-logs:
	case <-time.After(exitTimeout):
		t.Fatal("serve over stdio did not close its stderr after SIGTERM")
	}
	if err := waitExit(t, cmd); err != nil {
		t.Fatalf("serve over stdio after SIGTERM: %v, want exit 0\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "calls in flight finished") {
		t.Fatalf("serve did not report draining:\n%s", stderr)
	}
	if out, _, code := runCLI(t, "audit", "verify", "--state", dir); code != 0 {
		t.Fatalf("audit verify after SIGTERM: exit %d %s", code, out)
	}
}
