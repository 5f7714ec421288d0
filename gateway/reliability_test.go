package gateway_test

// Reliability of do_*: the retry storm, recovery after a crash, roles and
// the fail-closed audit, on the lab bench's simulated I2C dimmer. Actuations
// are counted at the simulated bus: every register write transaction.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	pi2c "periph.io/x/conn/v3/i2c"

	"github.com/promcp/promcp-device/audit"
	"github.com/promcp/promcp-device/capabilities"
	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/gateway/gatewaytest"
	"github.com/promcp/promcp-device/idempotency"
	"github.com/promcp/promcp-device/idempotency/boltstore"
	"github.com/promcp/promcp-device/manifests/manifesttest"
	"github.com/promcp/promcp-device/server"
	"github.com/promcp/promcp-device/sim"
	"github.com/promcp/promcp-device/simtest"
)

var (
	stormKeys = flag.Int("storm.keys", 1000, "TestRetryStorm: distinct idempotency keys")
	stormDups = flag.Int("storm.dups", 10, "TestRetryStorm: concurrent calls per key")
)

// writeCounter counts register writes (a transaction that writes more than
// the register address and reads nothing) on a simulated I2C bus.
type writeCounter struct {
	pi2c.BusCloser
	writes *atomic.Int64
	// mangle, if set, changes what a register write puts on the bus (a
	// device that does not take the value it was sent).
	mangle func(wb []byte) []byte
}

func (w writeCounter) Tx(addr uint16, wb, rb []byte) error {
	if len(wb) > 1 && len(rb) == 0 {
		w.writes.Add(1)
		if w.mangle != nil {
			wb = w.mangle(append([]byte(nil), wb...))
		}
	}
	return w.BusCloser.Tx(addr, wb, rb)
}

// dimmerBench serves lab-bench.yml on the simulator in real time, in
// process; writes counts the register writes on its I²C bus.
type dimmerBench struct {
	*bench
	writes *atomic.Int64
}

// newDimmerBench serves lab-bench.yml on the simulator, in process.
func newDimmerBench(t *testing.T, opts ...server.Option) *dimmerBench {
	t.Helper()
	return newMangledBench(t, nil, opts...)
}

// newMangledBench is newDimmerBench with register writes changed by mangle.
func newMangledBench(t *testing.T, mangle func([]byte) []byte, opts ...server.Option) *dimmerBench {
	t.Helper()
	m := manifesttest.Load(t, "../manifests/examples/lab-bench.yml")
	// Under -race thousands of concurrent calls queue on one simulated
	// bus longer than the manifest's 100 ms transaction timeout allows.
	for i := range m.Buses {
		m.Buses[i].Timeout = 10 * time.Second
	}
	writes := new(atomic.Int64)
	hw := func(w *sim.World) capabilities.HardwareFuncs {
		return wrapI2C(simtest.Lines(t, w, simtest.Hardware(w)), // the bench's serial-line scale
			func(bus pi2c.BusCloser) pi2c.BusCloser { return writeCounter{bus, writes, mangle} })
	}
	return &dimmerBench{bench: serveReal(t, m, gatewaytest.Options{Hardware: hw, Server: opts}), writes: writes}
}

func openStore(t *testing.T, dir string) *boltstore.Bolt {
	t.Helper()
	st, err := boltstore.OpenBolt(filepath.Join(dir, "idempotency.db"), time.Second, boltstore.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func openAudit(t *testing.T, dir string) *audit.Log {
	t.Helper()
	l, err := audit.Open(filepath.Join(dir, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// TestRetryStorm: keys × dups concurrent do_set_light_level calls (every
// key called dups times at once, 32 keys at a time) on the durable store
// and the audit log actuate exactly once per key, and every caller of a key
// gets the same response.
//
// The server's clock is a manual one that moves on to a wait's instant as
// soon as the wait starts: every actuation's settle time (50 ms on the
// dimmer, the actuations one after the other) passes at once instead of
// on the wall clock, so the test's length is its work, not minutes of
// waits that grow with the machine's load.
//
//	go test ./gateway -run TestRetryStorm -v -storm.keys 1000 -storm.dups 10
func TestRetryStorm(t *testing.T) {
	dir := t.TempDir()
	st := openStore(t, dir)
	clk := clock.NewManual(time.Now())
	go settleAtOnce(t.Context(), clk)
	b := newDimmerBench(t, server.WithStore(st, st.TTL()), server.WithAuditor(openAudit(t, dir)), server.WithClock(clk))
	keys, dups := *stormKeys, *stormDups
	bodies := make([][]string, keys)
	var wg sync.WaitGroup
	start := time.Now()
	sem := make(chan struct{}, 32) // keys in flight at once
	for k := range keys {
		bodies[k] = make([]string, dups)
		sem <- struct{}{}
		var kwg sync.WaitGroup
		for d := range dups {
			kwg.Go(func() {
				r := b.callAs(context.Background(), t, "do_set_light_level", map[string]any{
					"value": float64(k%200) * 0.5, "idempotency_key": fmt.Sprintf("storm-%d", k)})
				// Keys race on one dimmer, so a readback may show another
				// key's write: partial is an honest answer, failed is not.
				if r["status"] != "success" && r["status"] != "partial" {
					t.Errorf("key %d: %v", k, r)
				}
				delete(r, "replayed")
				raw, _ := json.Marshal(r)
				bodies[k][d] = string(raw)
			})
		}
		wg.Go(func() { kwg.Wait(); <-sem })
	}
	wg.Wait()
	elapsed := time.Since(start)
	if got := b.writes.Load(); got != int64(keys) {
		t.Errorf("%d register writes for %d keys × %d concurrent calls, want exactly %d", got, keys, dups, keys)
	}
	for k := range keys {
		for d := range dups {
			if bodies[k][d] != bodies[k][0] {
				t.Fatalf("key %d: response %d differs from response 0:\n%s\n%s", k, d, bodies[k][d], bodies[k][0])
			}
		}
	}
	n, _ := st.Len()
	t.Logf("retry storm: %d keys × %d concurrent calls = %d calls in %s (%.0f calls/s): %d actuations, %d stored outcomes, responses identical per key",
		keys, dups, keys*dups, elapsed.Round(time.Millisecond), float64(keys*dups)/elapsed.Seconds(), b.writes.Load(), n)
}

// settleAtOnce advances clk to each wait's instant as soon as it waits,
// until ctx ends.
func settleAtOnce(ctx context.Context, clk *clock.Manual) {
	for clk.WaitFor(ctx, 1) == nil {
		if at, ok := clk.NextWake(); ok {
			clk.Advance(at.Sub(clk.Now()))
		}
	}
}

// recoveringStore hands every action a recovering attempt, as the durable
// store does for a key a crashed process left in flight.
type recoveringStore struct{}

func (recoveringStore) Do(ctx context.Context, _, _ string, act idempotency.Action) ([]byte, bool, error) {
	out, _, err := act(ctx, idempotency.Attempt{Recovering: true, Started: time.Now()})
	return out, false, err
}

func TestRecoveryReadsBackInsteadOfActuating(t *testing.T) {
	b := newDimmerBench(t, server.WithStore(recoveringStore{}, time.Hour))
	// The simulated dimmer starts at 40 %.
	tests := []struct {
		name       string
		value      float64
		wantStatus string
	}{
		{"device holds the requested value", 40, "success"},
		{"device holds another value", 75, "partial"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := b.callAs(t.Context(), t, "do_set_light_level", map[string]any{"value": tc.value, "idempotency_key": "k-" + tc.name})
			if r["status"] != tc.wantStatus || r["recovered"] != true || r["applied_value"] != 40.0 || r["previous_value"] != nil {
				t.Fatalf("recovering do_set_light_level(%v) = %v; want %s, recovered, applied_value 40 (observed), previous unknown", tc.value, r, tc.wantStatus)
			}
		})
	}
	if got := b.writes.Load(); got != 0 {
		t.Fatalf("%d register writes while recovering, want 0", got)
	}
}

func TestViewerCannotDo(t *testing.T) {
	dir := t.TempDir()
	b := newDimmerBench(t, server.WithAuditor(openAudit(t, dir)))
	ctx := server.WithCaller(t.Context(), server.Caller{Name: "vera", Role: server.RoleViewer})
	r := b.callAs(ctx, t, "do_set_light_level", map[string]any{"value": 50, "idempotency_key": "v-1"})
	if r["status"] != "failed" || r["permission"] != "permission_insufficient" {
		t.Fatalf("viewer do_set_light_level = %v, want failed permission_insufficient", r)
	}
	if rd := b.callAs(ctx, t, "read_light_level", map[string]any{}); rd["quality"] != "good" {
		t.Fatalf("viewer read_light_level = %v, want a good reading", rd)
	}
	if b.writes.Load() != 0 {
		t.Fatal("a viewer's do_* reached the bus")
	}
	rep := b.callAs(ctx, t, "can_do", map[string]any{"intent": map[string]any{"target": "light_level", "value": 50}})
	blocked, _ := rep["blocked"].([]any)
	if rep["feasible"] != false || len(blocked) != 1 || blocked[0].(map[string]any)["permission"] != "permission_insufficient" {
		t.Fatalf("viewer can_do(light 50) = %v, want blocked permission_insufficient, as do_* answers", rep)
	}
}

func TestReadOnlyCanDoBlocksActions(t *testing.T) {
	b := newDimmerBench(t, server.WithReadOnly())
	rep := b.callAs(t.Context(), t, "can_do", map[string]any{"intent": map[string]any{"target": "light_level", "value": 50}})
	blocked, _ := rep["blocked"].([]any)
	if rep["feasible"] != false || len(blocked) != 1 || blocked[0].(map[string]any)["permission"] != "policy_denied" {
		t.Fatalf("read-only can_do(light 50) = %v, want blocked policy_denied", rep)
	}
}

type brokenAuditor struct{}

func (brokenAuditor) Append(context.Context, audit.Record) error { return errors.New("disk full") }

func TestAuditFailureFailsClosed(t *testing.T) {
	b := newDimmerBench(t, server.WithAuditor(brokenAuditor{}))
	r := b.callAs(t.Context(), t, "do_set_light_level", map[string]any{"value": 50, "idempotency_key": "a-1"})
	if r["status"] != "failed" || r["error"].(map[string]any)["code"] != "internal" {
		t.Fatalf("do with a broken audit log = %v, want failed internal", r)
	}
	if b.writes.Load() != 0 {
		t.Fatal("the device was written although the audit record could not be")
	}
}

// TestAuditRecordsEveryCall: an actuation writes attempt then result; a
// retry writes replayed; a refusal writes refused only (the attempt record
// follows the policy decision, so a refusal costs one record).
func TestAuditRecordsEveryCall(t *testing.T) {
	dir := t.TempDir()
	log := openAudit(t, dir)
	b := newDimmerBench(t, server.WithAuditor(log))
	ctx := server.WithCaller(t.Context(), server.Caller{Name: "olga", Role: server.RoleOperator})
	b.callAs(ctx, t, "do_set_light_level", map[string]any{"value": 60, "idempotency_key": "r-1"})
	b.callAs(ctx, t, "do_set_light_level", map[string]any{"value": 60, "idempotency_key": "r-1"})
	b.callAs(ctx, t, "do_set_light_level", map[string]any{"value": 150, "idempotency_key": "r-2"})
	log.Close()
	recs := readAudit(t, filepath.Join(dir, "audit.jsonl"))
	var events []string
	for _, r := range recs {
		events = append(events, r.Event+"/"+r.Key+"/"+r.Caller)
	}
	want := []string{"attempt/r-1/olga", "result/r-1/olga", "replayed/r-1/olga", "refused/r-2/olga"}
	if fmt.Sprint(events) != fmt.Sprint(want) {
		t.Fatalf("audit events = %v, want %v", events, want)
	}
	if recs[3].Permission != "out_of_range" || recs[1].Status != "success" || len(recs[1].Result) == 0 {
		t.Fatalf("records lack the decision or the result: %+v", recs)
	}
}

func TestSettleWaitsBeforeReadback(t *testing.T) {
	b := newDimmerBench(t)
	start := time.Now()
	r := b.callAs(t.Context(), t, "do_set_light_level", map[string]any{"value": 20})
	if took := time.Since(start); took < 50*time.Millisecond {
		t.Fatalf("do_set_light_level took %s, want at least the manifest's settle 50ms", took)
	}
	if r["status"] != "success" || r["applied_value"] != 20.0 || r["previous_value"] != 40.0 {
		t.Fatalf("do_set_light_level(20) = %v, want success 40 -> 20", r)
	}
}

// The settle wait runs on the server's clock: under a manual clock the call
// completes only once the clock has moved the manifest's 50ms on.
func TestSettleRunsOnTheServerClock(t *testing.T) {
	clk := clock.NewManual(time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC))
	b := newDimmerBench(t, server.WithClock(clk))
	done := make(chan map[string]any, 1)
	go func() { done <- b.callAs(t.Context(), t, "do_set_light_level", map[string]any{"value": 20}) }()
	wait, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := clk.WaitFor(wait, 1); err != nil {
		select {
		case r := <-done:
			t.Fatalf("do_set_light_level returned before settling: %v", r)
		default:
			t.Fatal(err)
		}
	}
	clk.Advance(49 * time.Millisecond)
	select {
	case r := <-done:
		t.Fatalf("do_set_light_level returned 1ms before its settle time: %v", r)
	default:
	}
	if clk.Waiting() != 1 {
		t.Fatalf("after 49ms the settle wait is gone (Waiting() = %d)", clk.Waiting())
	}
	clk.Advance(time.Millisecond)
	r := <-done
	if r["status"] != "success" || r["applied_value"] != 20.0 {
		t.Fatalf("do_set_light_level(20) = %v, want success at 20", r)
	}
}

func TestShutdownRefusesNewCalls(t *testing.T) {
	b := newDimmerBench(t)
	if err := b.Server.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	r := b.callAs(t.Context(), t, "do_set_light_level", map[string]any{"value": 20, "idempotency_key": "s-1"})
	if r["status"] != "failed" || b.writes.Load() != 0 {
		t.Fatalf("do after Shutdown = %v (writes %d), want failed and no write", r, b.writes.Load())
	}
}

func readAudit(t *testing.T, path string) []audit.Record {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := audit.Verify(f); err != nil {
		t.Fatalf("audit verify: %v", err)
	}
	f.Seek(0, 0)
	recs, err := audit.Tail(f, 0)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// TestReadbackMismatchIsPartial: a device that holds another value than
// the one written (here: the dimmer caps at 80 %) gives partial with the
// value read back after the settle time, the previous value, and the hint
// that restores it.
func TestReadbackMismatchIsPartial(t *testing.T) {
	capAt80 := func(wb []byte) []byte {
		if wb[0] == 0x01 && wb[1] > 160 { // dimmer register, raw 0..200 is 0..100 %
			wb[1] = 160
		}
		return wb
	}
	b := newMangledBench(t, capAt80)
	r := b.callAs(t.Context(), t, "do_set_light_level", map[string]any{"value": 95, "idempotency_key": "m-1"})
	if r["status"] != "partial" || r["applied_value"] != 80.0 || r["previous_value"] != 40.0 ||
		r["compensation_hint"] != "do_set_light_level value=40" || r["reason"] == nil {
		t.Fatalf("do_set_light_level(95) on a dimmer that caps at 80 = %v; want partial, applied 80, previous 40, hint value=40", r)
	}
}
