package gateway_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	pgpio "periph.io/x/conn/v3/gpio"
	pi2c "periph.io/x/conn/v3/i2c"

	"github.com/promcp/promcp-device/capabilities"
	"github.com/promcp/promcp-device/gateway"
	"github.com/promcp/promcp-device/gateway/gatewaytest"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/manifests/manifesttest"
	"github.com/promcp/promcp-device/policy"
	"github.com/promcp/promcp-device/promcp"
	"github.com/promcp/promcp-device/sim"
	"github.com/promcp/promcp-device/simtest"
)

// addrWrites counts register writes per I2C address.
type addrWrites struct {
	pi2c.BusCloser
	n map[uint16]*atomic.Int64
}

func (a addrWrites) Tx(addr uint16, wb, rb []byte) error {
	if len(wb) > 1 && len(rb) == 0 {
		if c := a.n[addr]; c != nil {
			c.Add(1)
		}
	}
	return a.BusCloser.Tx(addr, wb, rb)
}

// raceBench serves testdata/race on the simulator, in process, on a manual
// clock, with every device answering 1 ms late (the slow fault): do_*
// calls that overlap stay in flight together. writes counts the register
// writes per I²C address.
type raceBench struct {
	*bench
	writes map[uint16]*atomic.Int64
}

// serveRace serves testdata/race under its policy, simulated on a manual
// clock at monday10, as o says.
func serveRace(t *testing.T, o gatewaytest.Options) *bench {
	t.Helper()
	m := manifesttest.Load(t, "testdata/race/race.yml")
	o.Gateway.Policy = manifesttest.LoadPolicy(t, "testdata/race/race.policy.yml", m)
	return serveAt(t, m, monday10, o)
}

func newRaceBench(t *testing.T) *raceBench {
	t.Helper()
	writes := map[uint16]*atomic.Int64{0x20: new(atomic.Int64), 0x21: new(atomic.Int64)}
	b := serveRace(t, gatewaytest.Options{Hardware: func(w *sim.World) capabilities.HardwareFuncs {
		for _, dev := range []string{"dimmer", "blind", "heater_relay", "vent_motor"} {
			if err := w.Inject(dev, manifests.Fault{Kind: manifests.FaultSlow, Delay: time.Millisecond}); err != nil {
				t.Fatal(err)
			}
		}
		return wrapI2C(simtest.Hardware(w), func(bus pi2c.BusCloser) pi2c.BusCloser { return addrWrites{bus, writes} })
	}})
	return &raceBench{bench: b, writes: writes}
}

func (b *raceBench) call(t *testing.T, tool string, args map[string]any) map[string]any {
	t.Helper()
	return b.callAs(t.Context(), t, tool, args)
}

// outcome is "success", "partial", or the permission of a refusal.
func outcome(body map[string]any) string {
	if p, _ := body["permission"].(string); p != "" && p != "allowed" {
		return p
	}
	s, _ := body["status"].(string)
	return s
}

// overlap runs the calls at once and counts their outcomes.
func (b *raceBench) overlap(t *testing.T, calls []func() map[string]any) map[string]int {
	t.Helper()
	var mu sync.Mutex
	got := map[string]int{}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, call := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			o := outcome(call())
			mu.Lock()
			got[o]++
			mu.Unlock()
		}()
	}
	close(start)
	wg.Wait()
	return got
}

// race sends callers overlapping calls of tool, each with its own key
// and value, and returns the register writes at addr and the outcomes.
func (b *raceBench) race(t *testing.T, tool string, addr uint16, callers int) (int64, map[string]int) {
	t.Helper()
	before := b.writes[addr].Load()
	var calls []func() map[string]any
	for i := range callers {
		calls = append(calls, func() map[string]any {
			return b.call(t, tool, map[string]any{"value": 10 + i, "idempotency_key": key()})
		})
	}
	got := b.overlap(t, calls)
	return b.writes[addr].Load() - before, got
}

var keySeq atomic.Int64

func key() string { return fmt.Sprintf("k-%d", keySeq.Add(1)) }

// TestReservationCooldownOverlap: 8 overlapping do_set_dimmer calls with
// distinct keys and values on a slow bus, in 150 rounds a cooldown apart:
// exactly one register write and one success per round, 7 cooldown_active.
func TestReservationCooldownOverlap(t *testing.T) {
	const rounds, callers = 150, 8
	b := newRaceBench(t)
	for round := range rounds {
		if w, got := b.race(t, "do_set_dimmer", 0x20, callers); w != 1 || got["success"] != 1 || got["cooldown_active"] != callers-1 {
			t.Fatalf("round %d: %d register writes, outcomes %v; want 1 write, 1 success and %d cooldown_active", round, w, got, callers-1)
		}
		b.clk.Advance(time.Hour)
	}
}

// TestReservationRateLimitOverlap: a rate limit of 3 per hour, 8
// overlapping calls per round, 100 rounds an hour apart: exactly 3 writes.
func TestReservationRateLimitOverlap(t *testing.T) {
	const rounds, callers, limit = 100, 8, 3
	b := newRaceBench(t)
	for round := range rounds {
		if w, got := b.race(t, "do_set_blind", 0x21, callers); w != limit || got["success"] != limit || got["rate_limited"] != callers-limit {
			t.Fatalf("round %d: %d register writes, outcomes %v; want %d writes and successes, %d rate_limited", round, w, got, limit, callers-limit)
		}
		b.clk.Advance(time.Hour)
	}
}

// TestReservationInterlockOverlap: heater on and vent open, each refused
// while the other is on, raced by 8 callers per round on slow pins for 80
// rounds: never both on; exactly one on after each round, every call for
// it a success, every call for the other policy_denied.
func TestReservationInterlockOverlap(t *testing.T) {
	const rounds, callers = 80, 8
	b := newRaceBench(t)
	pins := map[string]pgpio.PinIO{}
	for _, p := range []string{"GPIO5", "GPIO6"} {
		pin, err := b.w.Pin(t.Context(), p)
		if err != nil {
			t.Fatal(err)
		}
		pins[p] = pin
	}
	for round := range rounds {
		var calls []func() map[string]any
		for i := range callers {
			tool := []string{"do_set_heater", "do_set_vent"}[i%2]
			calls = append(calls, func() map[string]any {
				return b.call(t, tool, map[string]any{"value": true, "idempotency_key": key()})
			})
		}
		got := b.overlap(t, calls)
		heater, vent := pins["GPIO5"].Read() == pgpio.High, pins["GPIO6"].Read() == pgpio.High
		if heater && vent {
			t.Fatalf("round %d: heater and vent both on; outcomes %v", round, got)
		}
		// The first reservation wins: the calls for its actuator run one
		// after the other and succeed, those for the other are denied.
		if heater == vent || got["success"] != callers/2 || got["policy_denied"] != callers/2 {
			t.Fatalf("round %d: heater %t vent %t, outcomes %v; want exactly one on, %d success and %d policy_denied", round, heater, vent, got, callers/2, callers/2)
		}
		for _, tool := range []string{"do_set_heater", "do_set_vent"} {
			if r := b.call(t, tool, map[string]any{"value": false, "idempotency_key": key()}); outcome(r) != "success" {
				t.Fatalf("round %d: switching off with %s = %v", round, tool, r)
			}
		}
		b.clk.Advance(time.Second)
	}
}

// TestSafeValueDuringCooldown: the safe value is written during a cooldown
// and a rate limit that refuse every other value, and can_do says so.
func TestSafeValueDuringCooldown(t *testing.T) {
	b := newRaceBench(t)
	if r := b.call(t, "do_set_dimmer", map[string]any{"value": 50, "idempotency_key": key()}); outcome(r) != "success" {
		t.Fatalf("first dimmer write = %v", r)
	}
	if r := b.call(t, "do_set_dimmer", map[string]any{"value": 60, "idempotency_key": key()}); outcome(r) != "cooldown_active" {
		t.Fatalf("dimmer 60 in the cooldown = %v, want cooldown_active", r)
	}
	rep := canDo(t, b, "do_set_dimmer", 60.0)
	if !blockedWith(rep, "do_set_dimmer", "cooldown_active", "safe value 0") {
		t.Errorf("can_do(dimmer 60) = %v, want blocked cooldown_active whose details name the safe value 0", rep)
	}
	rep = canDo(t, b, "do_set_dimmer", 0.0)
	if !candidateWith(rep, "do_set_dimmer", "safe value") {
		t.Errorf("can_do(dimmer 0) = %v, want an allowed candidate saying 0 is the safe value", rep)
	}
	if r := b.call(t, "do_set_dimmer", map[string]any{"value": 0, "idempotency_key": key()}); outcome(r) != "success" || r["applied_value"] != 0.0 {
		t.Fatalf("dimmer to its safe value 0 in the cooldown = %v, want success", r)
	}

	// The pump's cooldown applies to starting it only (when {equals: true}).
	steps := []struct {
		value   bool
		advance time.Duration
		want    string
	}{
		{true, 0, "success"},
		{false, 0, "success"}, // stopping: the start cooldown does not apply
		{true, 0, "cooldown_active"},
		{true, 10 * time.Minute, "rate_limited"}, // 2 per hour used
		{false, 0, "success"},                    // the safe value passes the rate limit
	}
	for i, s := range steps {
		b.clk.Advance(s.advance)
		if r := b.call(t, "do_set_pump", map[string]any{"value": s.value, "idempotency_key": key()}); outcome(r) != s.want {
			t.Fatalf("step %d: do_set_pump(%t) = %v, want %s", i, s.value, r, s.want)
		}
	}
}

func canDo(t *testing.T, b *raceBench, action string, value any) map[string]any {
	t.Helper()
	return b.body("can_do", map[string]any{"intent": map[string]any{"action": action, "value": value}})
}

// listed says whether rep's list ("candidates" or "blocked") names action
// with permission perm and a field (reason, details) that contains text.
func listed(rep map[string]any, list, action, perm, field, text string) bool {
	entries, _ := rep[list].([]any)
	for _, it := range entries {
		e, _ := it.(map[string]any)
		f, _ := e[field].(string)
		if e["capability"] == action && e["permission"] == perm && strings.Contains(f, text) {
			return true
		}
	}
	return false
}

func blockedWith(rep map[string]any, action, perm, details string) bool {
	return listed(rep, "blocked", action, perm, "details", details)
}

func blockedReason(rep map[string]any, action, perm, reason string) bool {
	return listed(rep, "blocked", action, perm, "reason", reason)
}

func candidateWith(rep map[string]any, action, reason string) bool {
	return listed(rep, "candidates", action, "allowed", "reason", reason)
}

// TestCanDoReportsReservationInProgress: while an action holds its
// reservation (here taken directly on the gateway's Reserver, as a do_*
// call writing on a slow bus would), can_do counts it: the same action is
// cooldown_active "actuating now", an action interlocked with it is
// policy_denied by the value being written, and an action tied to it that
// would be allowed says that do_* will wait, with a valid_until of at most
// a second. Once released, the answers are plain again.
func TestCanDoReportsReservationInProgress(t *testing.T) {
	res := policy.NewLocalReserver(policy.NewMemoryState())
	b := &raceBench{bench: serveRace(t, gatewaytest.Options{Gateway: gateway.GatewayOptions{Reserver: res}})}
	clk := b.clk

	allow := func(context.Context, policy.View) policy.Decision {
		return policy.Decision{Permission: "allowed", Value: true}
	}
	vent, _, err := res.Reserve(t.Context(), policy.Claim{Action: "do_set_vent", Read: "read_vent",
		Unit: policy.Unit{"do_set_heater", "do_set_vent"}, Value: true, Now: clk.Now()}, allow)
	if err != nil || vent == nil {
		t.Fatal(err)
	}
	dim, _, err := res.Reserve(t.Context(), policy.Claim{Action: "do_set_dimmer", Read: "read_dimmer",
		Unit: policy.Unit{"do_set_dimmer"}, Value: 40.0, Now: clk.Now()}, allow)
	if err != nil || dim == nil {
		t.Fatal(err)
	}

	if rep := canDo(t, b, "do_set_heater", true); !blockedReason(rep, "do_set_heater", "policy_denied", "being set now") {
		t.Errorf("can_do(heater on) while the vent is being opened = %v, want policy_denied by the value being written", rep)
	}
	rep := canDo(t, b, "do_set_heater", false)
	if !candidateWith(rep, "do_set_heater", "do_* waits for it") {
		t.Errorf("can_do(heater off) while the vent is being opened = %v, want allowed, saying do_* waits", rep)
	} else if vu := validUntil(t, rep); vu.After(clk.Now().Add(time.Second)) {
		t.Errorf("valid_until %s, want at most a second ahead while an action is in progress", vu)
	}
	rep = canDo(t, b, "do_set_dimmer", 50.0)
	if !blockedReason(rep, "do_set_dimmer", "cooldown_active", "actuating now") {
		t.Errorf("can_do(dimmer) while a dimmer write is in progress = %v, want cooldown_active, actuating now", rep)
	} else if bl := rep["blocked"].([]any)[0].(map[string]any); bl["valid_until"] != clk.Now().Add(time.Second).UTC().Format(time.RFC3339Nano) {
		t.Errorf("blocked valid_until = %v, want one second ahead (%s): the write in progress may fail and release", bl["valid_until"], clk.Now().Add(time.Second).UTC().Format(time.RFC3339Nano))
	}
	if r := b.call(t, "do_set_dimmer", map[string]any{"value": 50, "idempotency_key": key()}); outcome(r) != "cooldown_active" {
		t.Errorf("do_set_dimmer while another write is in progress = %v, want cooldown_active", r)
	}

	if err := res.Release(t.Context(), vent); err != nil {
		t.Fatal(err)
	}
	if err := res.Release(t.Context(), dim); err != nil {
		t.Fatal(err)
	}
	if rep := canDo(t, b, "do_set_heater", true); !candidateWith(rep, "do_set_heater", "") {
		t.Errorf("can_do(heater on) after the vent's reservation was released = %v, want allowed", rep)
	}
	if r := b.call(t, "do_set_dimmer", map[string]any{"value": 50, "idempotency_key": key()}); outcome(r) != "success" {
		t.Errorf("do_set_dimmer after the release = %v, want success (a released reservation does not count)", r)
	}
}

func validUntil(t *testing.T, rep map[string]any) time.Time {
	t.Helper()
	list, _ := rep["candidates"].([]any)
	c, _ := list[0].(map[string]any)
	s, _ := c["valid_until"].(string)
	vu, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("valid_until %q: %v", s, err)
	}
	return vu
}

// partitioned is a reserver whose replicated store cannot commit one
// action's claims now (as fleet/shared's when the hub has lost quorum).
type partitioned struct {
	*policy.LocalReserver
	action string
}

func (p partitioned) Check(_ context.Context, c policy.Claim) (policy.Decision, bool) {
	if c.Action != p.action {
		return policy.Decision{}, true
	}
	return policy.Decision{Permission: promcp.PartitionNoQuorum, Reason: "replicas reachable: 1, required: 2"}, false
}

// can_do asks a fleet reserver whether the shared record could be written
// now: an action do_* would refuse partition_no_quorum is blocked with
// that answer, not offered as a candidate; the others are unaffected.
func TestCanDoAsksTheFleetReserverForQuorum(t *testing.T) {
	res := partitioned{policy.NewLocalReserver(policy.NewMemoryState()), "do_set_dimmer"}
	b := &raceBench{bench: serveRace(t, gatewaytest.Options{Gateway: gateway.GatewayOptions{Reserver: res}})}
	if rep := canDo(t, b, "do_set_dimmer", 50.0); !blockedReason(rep, "do_set_dimmer", "partition_no_quorum", "replicas reachable: 1") {
		t.Errorf("can_do(dimmer) with the fleet record unwritable = %v, want blocked partition_no_quorum", rep)
	}
	if rep := canDo(t, b, "do_set_heater", false); !candidateWith(rep, "do_set_heater", "") {
		t.Errorf("can_do(heater off), not a shared action = %v, want a candidate", rep)
	}
}
