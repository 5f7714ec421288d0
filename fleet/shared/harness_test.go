package shared_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/promcp/promcp-device/fleet/shared"
	"github.com/promcp/promcp-device/fleet/shared/sharedtest"
	"github.com/promcp/promcp-device/idempotency"
	"github.com/promcp/promcp-device/policy"
)

// TestFaultHarness: the faults of issue 24 as scenarios on one fleet
// (three hub members, four gateways, every link through a proxy that
// cuts, delays, drops replies or freezes a node). Concurrent clients
// record a history of operations; each scenario's history is checked
// against the fleet's invariants (History.Check: rate limits fleet-wide,
// an idempotency key executed at most once, nothing executed after its
// deadline, no reservation outliving its lease, no healthy gateway
// refused as unreachable). Timings and counts are logged as a table,
// never asserted: the machine may be loaded.
func TestFaultHarness(t *testing.T) {
	f := startProxiedFleetOf(t, 4, 2*time.Second)
	rows := map[string]sharedtest.Figures{}
	var order []string
	// scenario runs one; healthy are the gateways that the fault leaves
	// healthy, hub quorum included: none of them may be refused as
	// unreachable or without quorum.
	scenario := func(name string, run func(t *testing.T, f *fleet, h *sharedtest.History) time.Time, healthy ...string) {
		order = append(order, name)
		t.Run(name, func(t *testing.T) {
			h := &sharedtest.History{}
			heal := run(t, f, h)
			for _, v := range append(h.Check(limits), h.CheckHealthy(healthy)...) {
				t.Error(v)
			}
			rows[name] = h.Figures(heal)
			logFailures(t, h)
			settleFleet(t, f)
		})
	}
	scenario("rate limit fleet-wide", scenarioRate, "gw1", "gw2", "gw3", "gw4")
	scenario("two claims of one gateway", scenarioTwoClaims, "gw1#0", "gw1#1", "gw1#2")
	scenario("lease takeover after a crashed claimant", scenarioTakeover, "gw1", "gw2")
	scenario("one dead gateway among many", scenarioDeadGateway, "gw1", "gw2", "gw3")
	scenario("lost replies", scenarioLostReplies)
	scenario("stalled leader", scenarioStalledLeader)
	scenario("hub outage with local actions", scenarioHubOutage) // last: loses the hub quorum
	t.Logf("fault scenarios (figures, not asserted):\n%s", sharedtest.Table(rows, order))
}

// limits are the rate limits of testRules, checked fleet-wide.
var limits = map[string]sharedtest.Limit{"do_fleetrate": {Max: 5, Per: time.Hour}}

// settleFleet waits until every gateway's shared claims go through again
// after a scenario (an election and a lease may have to pass: minutes).
func settleFleet(t *testing.T, f *fleet) {
	t.Helper()
	for _, g := range f.gws {
		action := "do_shared_settle_" + g.name + "_" + newKey()
		if err := sharedtest.Poll(4*time.Minute, func(context.Context) error {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if d, err := act(ctx, g, claim(action), 0); err != nil || !d.Allowed() {
				return fmt.Errorf("%s (%s) err=%v", d.Permission, d.Reason, err)
			}
			return nil
		}); err != nil {
			t.Fatalf("%s: no shared claim after the scenario: %v", g.name, err)
		}
	}
}

var keySeq atomic.Int64

func newKey() string { return fmt.Sprintf("k%d", keySeq.Add(1)) }

// actuation is how long an actuator of the scenarios takes: reservations
// that overlap show as executions at once.
const actuation = 20 * time.Millisecond

// doShared is one do_* of action by client through r: claim (a rate
// limit of rate per hour when rate > 0, else no cooldown), execute,
// commit; recorded in h.
func doShared(ctx context.Context, h *sharedtest.History, client string, r policy.Reserver, action string, rate int) sharedtest.Outcome {
	op := h.Invoke(client, action, "")
	c := claim(action)
	decide := cooldownDecide(c, 0)
	if rate > 0 {
		decide = rateDecide(c, rate)
	}
	invoked := time.Now()
	rule, isShared := testRules(c)
	lease := shared.LeaseFor(ctx, rule, invoked)
	unit := action // a shared actuator is one for the fleet
	if !isShared {
		unit, lease = client+"/"+action, 0 // a local one is the gateway's own
	}
	res, d, err := r.Reserve(ctx, c, decide)
	switch {
	case err != nil:
		h.End(op, sharedtest.Failed, err.Error())
		return sharedtest.Failed
	case res == nil:
		h.End(op, sharedtest.Failed, string(d.Permission)+": "+d.Reason)
		return sharedtest.Failed
	}
	granted := time.Now()
	dl, _ := ctx.Deadline()
	h.Executed(sharedtest.Exec{Client: client, Action: action, Deadline: dl})
	actuating := time.NewTimer(actuation) // the actuator moving, on real time
	<-actuating.C
	settle := time.Now()
	err = r.Commit(ctx, res, settle, true)
	h.Held(sharedtest.Hold{Client: client, Unit: unit, Invoked: invoked, Granted: granted, Settle: settle, Committed: err == nil, Lease: lease})
	if err != nil {
		h.End(op, sharedtest.Unknown, "executed, commit: "+err.Error())
		return sharedtest.Unknown
	}
	h.End(op, sharedtest.OK, "")
	return sharedtest.OK
}

// clients runs n concurrent loops of body (loop i, pass j) until stop is
// closed or each made passes passes (0: no bound); wait waits for them.
func clients(n, passes int, stop <-chan struct{}, body func(i, j int)) (wait func()) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			for j := 0; passes == 0 || j < passes; j++ {
				select {
				case <-stop:
					return
				default:
				}
				body(i, j)
			}
		})
	}
	return wg.Wait
}

// bounded is a context for one operation: long enough for an election.
func bounded() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}

// scenarioRate: two clients on each gateway race for a fleet rate limit
// of 5 per hour, one gateway's links delayed 20 ms: at most 5 execute
// fleet-wide (each gateway's own actuations counted once).
func scenarioRate(t *testing.T, f *fleet, h *sharedtest.History) time.Time {
	for _, p := range f.hub.Links("gw2") {
		p.Delay(20 * time.Millisecond)
	}
	defer func() {
		for _, p := range f.hub.Links("gw2") {
			p.Delay(0)
		}
	}()
	const action = "do_fleetrate" // one per fleet: the limit is the rule's
	clients(2*len(f.gws), 2, nil, func(i, _ int) {
		g := f.gws[i%len(f.gws)]
		ctx, cancel := bounded()
		defer cancel()
		doShared(ctx, h, g.name, g.res, action, 5)
	})()
	t.Logf("admitted %d of %d under a fleet limit of 5 per hour", len(h.Execs()), len(h.Ops()))
	return time.Time{}
}

// scenarioTwoClaims: three processes of one gateway (three States of gw1)
// claim one actuator with no cooldown, five times each: their
// reservations never execute at once.
func scenarioTwoClaims(t *testing.T, f *fleet, h *sharedtest.History) time.Time {
	g := f.gws[0]
	rs := []policy.Reserver{g.res}
	for range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		st, err := shared.Open(ctx, g.leaf.Conn(t), shared.Config{Gateway: g.name, Timeout: 2 * time.Second})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, st.Reserver(policy.NewLocalReserver(policy.NewMemoryState()), testRules))
	}
	action := "do_shared_two_" + newKey()
	clients(len(rs), 5, nil, func(i, _ int) {
		ctx, cancel := bounded()
		defer cancel()
		doShared(ctx, h, fmt.Sprintf("%s#%d", g.name, i), rs[i], action, 0)
	})()
	return time.Time{}
}

// scenarioTakeover: gw3 reserves an actuator with a 1 s lease and
// freezes (a crash, seen from the network); gw1 and gw2 claim it until
// one takes it over; gw3 thaws and its late commit is refused.
func scenarioTakeover(t *testing.T, f *fleet, h *sharedtest.History) time.Time {
	action := "do_lease1_" + newKey()
	crashed := f.gws[2]
	c := claim(action)
	invoked := time.Now()
	res, d, err := crashed.res.Reserve(context.Background(), c, cooldownDecide(c, 0))
	if err != nil || res == nil {
		t.Fatalf("crashing claimant's reservation: %s (%s) %v", d.Permission, d.Reason, err)
	}
	granted := time.Now()
	h.Executed(sharedtest.Exec{Client: crashed.name, Action: action})
	frozen := h.Mark("gw3 frozen")
	f.hub.Freeze(crashed.name)
	var took atomic.Bool
	stop := make(chan struct{})
	wait := clients(2, 0, stop, func(i, _ int) {
		ctx, cancel := bounded()
		defer cancel()
		if doShared(ctx, h, f.gws[i].name, f.gws[i].res, action, 0) == sharedtest.OK && !took.Swap(true) {
			t.Logf("taken over %s after the claimant froze (lease 1 s)", time.Since(frozen).Round(time.Millisecond))
			close(stop)
		}
	})
	// Bounded: each pass is; one takes the record over once its lease
	// lapses (minutes allowed under load).
	if err := sharedtest.Poll(3*time.Minute, func(context.Context) error {
		if took.Load() {
			return nil
		}
		return errors.New("no gateway took the crashed claim over")
	}); err != nil {
		close(stop)
		wait()
		f.hub.Thaw(crashed.name)
		t.Fatal(err)
	}
	wait()
	heal := h.Mark("gw3 thawed")
	f.hub.Thaw(crashed.name)
	ctx, cancel := bounded()
	defer cancel()
	settle := time.Now()
	err = crashed.res.Commit(ctx, res, settle, true)
	h.Held(sharedtest.Hold{Client: crashed.name, Unit: action, Invoked: invoked, Granted: granted, Settle: settle, Committed: err == nil,
		Lease: time.Second})
	if err == nil {
		t.Error("the crashed claimant's late commit succeeded over a record taken over")
	}
	return heal
}

// scenarioDeadGateway: gw4 freezes while the other gateways act on a
// shared actuator and on local ones: none of them is refused as
// unreachable or without quorum.
func scenarioDeadGateway(t *testing.T, f *fleet, h *sharedtest.History) time.Time {
	h.Mark("gw4 frozen")
	f.hub.Freeze("gw4")
	defer f.hub.Thaw("gw4")
	action := "do_shared_alive_" + newKey()
	healthy := f.gws[:3]
	clients(2*len(healthy), 6, nil, func(i, j int) {
		g := healthy[i%len(healthy)]
		ctx, cancel := bounded()
		defer cancel()
		if j%2 == 0 {
			doShared(ctx, h, g.name, g.res, action, 0)
			return
		}
		doShared(ctx, h, g.name, g.res, "do_local_alive", 0)
	})()
	return h.Mark("gw4 thawed")
}

// scenarioLostReplies: everything the hub sends gw2 is dropped for a
// while (its requests arrive, their replies are lost) as clients call
// hub-claimed idempotency keys and a shared actuator; each key is sent
// again until its outcome is known: none executes twice.
func scenarioLostReplies(t *testing.T, f *fleet, h *sharedtest.History) time.Time {
	g := f.gws[1]
	store := g.state.StoreFor(idempotency.NewMemory(time.Hour, nil), time.Hour, func(context.Context) bool { return true })
	keys := make([]string, 8)
	for i := range keys {
		keys[i] = "lost-" + newKey()
	}
	var known sync.Map
	call := func(key string) {
		op := h.Invoke(g.name, "do_idem", key)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _, err := store.Do(ctx, key, "do_idem", func(ctx context.Context, _ idempotency.Attempt) ([]byte, bool, error) {
			dl, _ := ctx.Deadline()
			h.Executed(sharedtest.Exec{Client: g.name, Action: "do_idem", Key: key, Deadline: dl})
			return []byte("ok"), true, nil
		})
		switch {
		case err == nil:
			known.Store(key, true)
			h.End(op, sharedtest.OK, "")
		case errors.Is(err, shared.ErrClaimUnknown):
			h.End(op, sharedtest.Unknown, "claim_unknown: "+err.Error())
		case errors.Is(err, context.DeadlineExceeded):
			h.End(op, sharedtest.Unknown, err.Error())
		default:
			h.End(op, sharedtest.Failed, err.Error())
		}
	}
	action := "do_shared_lost_" + newKey()
	h.Mark("replies to gw2 dropped")
	for _, p := range f.hub.Links(g.name) {
		p.DropBack()
	}
	clients(len(keys), 1, nil, func(i, _ int) { call(keys[i]) })()
	clients(2, 2, nil, func(int, int) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		doShared(ctx, h, g.name, g.res, action, 0)
	})()
	heal := h.Mark("replies restored")
	for _, p := range f.hub.Links(g.name) {
		p.Restore()
	}
	g.leaf.WaitLinked(t, true, 2*time.Minute)
	// Each key again, until its outcome is known (minutes allowed: a
	// claim left running waits for its owner's lease).
	for _, key := range keys {
		if err := sharedtest.Poll(3*time.Minute, func(context.Context) error {
			if _, ok := known.Load(key); ok {
				return nil
			}
			call(key)
			if _, ok := known.Load(key); ok {
				return nil
			}
			return fmt.Errorf("key %s: outcome still unknown", key)
		}); err != nil {
			t.Error(err)
		}
	}
	return heal
}

// scenarioStalledLeader: the leader of the lease bucket's stream freezes
// for 15 s (a SIGSTOP) while every gateway acts on a shared actuator and
// a quorum one; two of three members stay up, so the figures show how
// many actions failed while the others elected a new leader.
func scenarioStalledLeader(t *testing.T, f *fleet, h *sharedtest.History) time.Time {
	leader := -1
	if err := sharedtest.Poll(2*time.Minute, func(context.Context) error {
		if leader = f.hub.StreamLeader("KV_" + shared.LeaseBucket); leader < 0 {
			return errors.New("no leader of the lease bucket")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	name := f.hub.Name(leader)
	shared1, quorum := "do_shared_stall_"+newKey(), "do_quorum_stall_"+newKey()
	stop := make(chan struct{})
	wait := clients(2*len(f.gws), 0, stop, func(i, j int) {
		g := f.gws[i%len(f.gws)]
		ctx, cancel := bounded()
		defer cancel()
		action := shared1
		if j%2 == 1 {
			action = quorum
		}
		doShared(ctx, h, g.name, g.res, action, 0)
	})
	frozenAt := h.Mark(name + " frozen")
	stopWatch := watchLinks(t, f, frozenAt)
	defer stopWatch()
	f.hub.Freeze(name)
	stall := time.NewTimer(15 * time.Second) // the fault's length, on real time: the hubs elect on it
	<-stall.C
	heal := h.Mark(name + " thawed")
	f.hub.Thaw(name)
	after := len(h.Ops())
	// Bounded by count: a few more passes after the thaw, then stop.
	_ = sharedtest.Poll(2*time.Minute, func(context.Context) error {
		if len(h.Ops()) >= after+2*len(f.gws) {
			return nil
		}
		return errors.New("clients still waiting")
	})
	close(stop)
	wait()
	failed := map[string]int{}
	refused := 0
	for _, op := range h.Ops() {
		if op.Outcome == sharedtest.Failed && op.Invoked.Before(heal) {
			failed[op.Client+" "+firstWord(op.Reason)]++
			if strings.HasPrefix(op.Reason, "partition_no_quorum") {
				refused++
			}
		}
	}
	t.Logf("%s frozen 15 s: of %d actions, failed while two of three members were up: %d partition_no_quorum; by gateway and reason: %v",
		name, len(h.Ops()), refused, failed)
	return heal
}

// scenarioHubOutage: two hub members freeze (quorum lost); local actions
// go on in the time they take with the hub up (paired figures), shared
// ones are refused; the members thaw and shared actions come back.
func scenarioHubOutage(t *testing.T, f *fleet, h *sharedtest.History) time.Time {
	local := func(label string) time.Duration {
		start := time.Now()
		clients(len(f.gws), 5, nil, func(i, _ int) {
			g := f.gws[i]
			ctx, cancel := bounded()
			defer cancel()
			if doShared(ctx, h, g.name, g.res, "do_local_outage", 0) != sharedtest.OK {
				t.Errorf("%s: local action failed %s", g.name, label)
			}
		})()
		return time.Since(start) / 5
	}
	up := local("with the hub up")
	h.Mark("hub-1 and hub-2 frozen")
	f.hub.Freeze(f.hub.Name(1))
	f.hub.Freeze(f.hub.Name(2))
	down := local("with two of three hub members frozen")
	action := "do_quorum_outage_" + newKey()
	var refused atomic.Int64
	clients(len(f.gws), 2, nil, func(i, _ int) {
		g := f.gws[i]
		ctx, cancel := bounded()
		defer cancel()
		if doShared(ctx, h, g.name, g.res, action, 0) == sharedtest.Failed {
			refused.Add(1)
		}
	})()
	heal := h.Mark("thawed")
	f.hub.Thaw(f.hub.Name(1))
	f.hub.Thaw(f.hub.Name(2))
	var ops []sharedtest.Op
	for _, op := range h.Ops() {
		if op.Action == action {
			ops = append(ops, op)
		}
	}
	var longest time.Duration
	for _, op := range ops {
		if op.Outcome == sharedtest.OK {
			t.Errorf("%s: a shared action succeeded with two of three hub members frozen", op.Client)
		}
		longest = max(longest, op.Ended.Sub(op.Invoked))
	}
	t.Logf("local do_* per pass of %d gateways: hub up %s, two members frozen %s; %d of %d shared actions refused, longest %s (%s)",
		len(f.gws), up.Round(time.Millisecond), down.Round(time.Millisecond), refused.Load(), len(ops), longest.Round(time.Millisecond), reasonOf(ops))
	return heal
}

func reasonOf(ops []sharedtest.Op) string {
	for _, op := range ops {
		if op.Outcome == sharedtest.Failed {
			return op.Reason
		}
	}
	return "none refused"
}

// logFailures logs how many operations ended other than OK, by outcome
// and reason, with the longest of each.
func logFailures(t *testing.T, h *sharedtest.History) {
	type agg struct {
		n       int
		longest time.Duration
		sample  string
	}
	by := map[string]*agg{}
	for _, op := range h.Ops() {
		if op.Outcome == sharedtest.OK {
			continue
		}
		k := op.Outcome.String() + " " + firstWord(op.Reason)
		if by[k] == nil {
			by[k] = &agg{}
		}
		by[k].n++
		by[k].longest = max(by[k].longest, op.Ended.Sub(op.Invoked))
		by[k].sample = op.Reason
	}
	for k, a := range by {
		t.Logf("%s: %d, longest %s (last: %.240s)", k, a.n, a.longest.Round(time.Millisecond), a.sample)
	}
}

// firstWord is a reason's permission (or the start of its error).
func firstWord(s string) string {
	if i := strings.IndexAny(s, ": "); i > 0 {
		return s[:i]
	}
	return s
}

// watchLinks logs, until stop is called, each change of the hub member
// each gateway's leaf links to, with the time since t0.
func watchLinks(t *testing.T, f *fleet, t0 time.Time) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		last := map[string]string{}
		tick := time.NewTicker(50 * time.Millisecond) // sampling, not a wait
		defer tick.Stop()
		for {
			for _, g := range f.gws {
				m := g.leaf.Member()
				if m == "" {
					m = "(none)"
				}
				if last[g.name] != m {
					t.Logf("link %s -> %s at %s", g.name, m, time.Since(t0).Round(time.Millisecond))
					last[g.name] = m
				}
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	})
	return func() { close(done); wg.Wait() }
}
