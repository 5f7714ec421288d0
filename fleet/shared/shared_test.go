package shared_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/promcp/promcp-device/fleet/shared"
	"github.com/promcp/promcp-device/fleet/shared/sharedtest"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/policy"
	"github.com/promcp/promcp-device/promcp"
)

// gateway is one gateway of a test fleet: its leaf, its shared state and
// its reserver (a local reserver wrapped by the fleet's).
type gateway struct {
	name  string
	leaf  *sharedtest.Leaf
	state *shared.State
	res   policy.Reserver
	hist  *policy.MemoryState
}

// fleet is a hub of three nodes and three gateways behind leaf links.
type fleet struct {
	hub *sharedtest.Hub
	gws []*gateway
}

// rules marks every action whose name starts with do_shared shared, owned
// by gw1; do_quorum_* requires quorum; the rest is local.
func testRules(c policy.Claim) (shared.Rule, bool) {
	switch {
	case strings.HasPrefix(c.Action, "do_shared"):
		return shared.Rule{Owner: "gw1"}, true
	case strings.HasPrefix(c.Action, "do_quorum"):
		return shared.Rule{Owner: "gw1", Quorum: true}, true
	case strings.HasPrefix(c.Action, "do_five"):
		return shared.Rule{Owner: "gw1", RateLimit: &manifests.RateLimit{Max: 5, Per: time.Hour}}, true
	case strings.HasPrefix(c.Action, "do_lease1"):
		return shared.Rule{Owner: "gw1", Lease: time.Second}, true
	case strings.HasPrefix(c.Action, "do_fleetrate"):
		return shared.Rule{Owner: "gw1", RateLimit: &manifests.RateLimit{Max: 5, Per: time.Hour}}, true
	case strings.HasPrefix(c.Action, "do_rate"):
		return shared.Rule{Owner: "gw1", RateLimit: &manifests.RateLimit{Max: 2, Per: time.Hour}}, true
	}
	return shared.Rule{}, false
}

func startFleet(t testing.TB, timeout time.Duration) *fleet {
	t.Helper()
	return startFleetOf(t, 3, timeout)
}

// startFleetOf starts a hub and n gateways, gw1 to gw<n>. A fleet whose
// gateway cannot open its shared state (the hub's JetStream giving no
// responders through its leaf for a minute: seen about once in six
// starts with every route through a proxy, as the fault harness starts
// its fleet) is left and another one started, three at most.
func startFleetOf(t testing.TB, n int, timeout time.Duration) *fleet {
	t.Helper()
	return startFleetWith(t, n, timeout, sharedtest.StartHub)
}

// startProxiedFleetOf is startFleetOf with every route between hub
// members through a proxy (the fault harness freezes members).
func startProxiedFleetOf(t testing.TB, n int, timeout time.Duration) *fleet {
	t.Helper()
	return startFleetWith(t, n, timeout, sharedtest.StartProxiedHub)
}

func startFleetWith(t testing.TB, n int, timeout time.Duration, startHub func(testing.TB) *sharedtest.Hub) *fleet {
	t.Helper()
	var err error
	for try := 1; try <= 3; try++ {
		var f *fleet
		if f, err = tryFleet(t, n, timeout, startHub); err == nil {
			return f
		}
		t.Logf("fleet %d of 3 not usable: %v", try, err)
		for _, g := range f.gws {
			g.leaf.Server.Shutdown()
		}
		for i := range 3 {
			f.hub.Stop(i)
		}
	}
	t.Fatal(err)
	return nil
}

// tryFleet starts a hub and n gateways and opens their shared state.
func tryFleet(t testing.TB, n int, timeout time.Duration, startHub func(testing.TB) *sharedtest.Hub) (*fleet, error) {
	t.Helper()
	f := &fleet{hub: startHub(t)}
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("gw%d", i)
		leaf := f.hub.StartLeaf(name)
		g := &gateway{name: name, leaf: leaf, hist: policy.NewMemoryState()}
		nc := leaf.Conn(t)
		// Just after the leaf links, the hub's JetStream may not answer
		// through it yet (no responders): Open says so with
		// ErrUnreachable, and the test opens again until it binds, for
		// a minute at most (under load).
		var st *shared.State
		var err error
		start := time.Now()
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			st, err = shared.Open(ctx, nc, shared.Config{Gateway: name, LocalDomain: name, Timeout: timeout, Linked: leaf.Linked})
			cancel()
			if !errors.Is(err, shared.ErrUnreachable) || time.Since(start) > time.Minute {
				break
			}
			pause := time.NewTimer(250 * time.Millisecond) // a pause between attempts, not a wait for a condition
			<-pause.C
		}
		if err != nil {
			f.gws = append(f.gws, g)
			return f, fmt.Errorf("open %s: %w", name, err)
		}
		g.state = st
		g.res = st.Reserver(policy.NewLocalReserver(g.hist), testRules)
		f.gws = append(f.gws, g)
	}
	return f, nil
}

// cooldownDecide evaluates a claim as the gateway does, with a cooldown.
func cooldownDecide(c policy.Claim, cooldown time.Duration) func(ctx context.Context, v policy.View) policy.Decision {
	return func(_ context.Context, v policy.View) policy.Decision {
		req := policy.Request{Action: c.Action, Role: "operator", Now: c.Now,
			Rules: &manifests.ActionPolicy{Tool: c.Action, Cooldown: cooldown}}
		v.Apply(&req)
		return policy.Evaluator{}.Evaluate(req)
	}
}

func claim(action string) policy.Claim {
	return policy.Claim{Action: action, Unit: policy.Unit{action}, Window: time.Hour, Now: time.Now()}
}

func TestFleet(t *testing.T) {
	f := startFleet(t, 2*time.Second)
	t.Run("race", func(t *testing.T) { testRace(t, f) })
	t.Run("cut", func(t *testing.T) { testCut(t, f) })
	t.Run("idempotency", func(t *testing.T) { testIdempotency(t, f) })
	t.Run("store", func(t *testing.T) { testStoreConformance(t, f) })
	t.Run("audit", func(t *testing.T) { testAudit(t, f) })
	t.Run("rate", func(t *testing.T) { testRate(t, f) })
	t.Run("lease", func(t *testing.T) { testLease(t, f) })
	t.Run("skew", func(t *testing.T) { testSkew(t, f) })
	t.Run("trust", func(t *testing.T) { testTrust(t, f) })
}

// act reserves c on g with decide and commits it as an actuation now.
func act(ctx context.Context, g *gateway, c policy.Claim, cooldown time.Duration) (policy.Decision, error) {
	res, d, err := g.res.Reserve(ctx, c, cooldownDecide(c, cooldown))
	if err != nil || res == nil {
		return d, err
	}
	return d, g.res.Commit(ctx, res, time.Now(), true)
}

// testCut: a gateway cut off from the hub refuses shared and quorum
// claims partition_no_quorum, saying what it reaches, while its local
// claims proceed; once healed, shared claims proceed again.
func testCut(t *testing.T, f *fleet) {
	g := f.gws[2]
	g.leaf.Cut(t)
	// A gateway that starts while cut off gets its State and binds later.
	octx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	late, err := shared.Open(octx, g.leaf.Conn(t), shared.Config{Gateway: g.name, LocalDomain: g.name, Linked: g.leaf.Linked})
	cancel()
	if !errors.Is(err, shared.ErrUnreachable) || late == nil {
		t.Fatalf("Open while cut off = %v, %v; want a State and ErrUnreachable", late, err)
	}
	lateRes := late.Reserver(policy.NewLocalReserver(policy.NewMemoryState()), testRules)
	if d, err := act(context.Background(), &gateway{res: lateRes}, claim("do_shared_late"), 0); err != nil || d.Permission != promcp.PartitionNoQuorum {
		t.Fatalf("shared claim on a State opened while cut off: %s (%s) %v", d.Permission, d.Reason, err)
	}
	for _, action := range []string{"do_shared_cut", "do_quorum_cut"} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res, d, err := g.res.Reserve(ctx, claim(action), cooldownDecide(claim(action), 0))
		cancel()
		if err != nil || res != nil || d.Permission != promcp.PartitionNoQuorum {
			t.Fatalf("%s while cut: res=%v %s (%s) err=%v, want partition_no_quorum", action, res, d.Permission, d.Reason, err)
		}
		for _, want := range []string{"cut off from the hub", "replicas reachable: 0, required: 2"} {
			if !strings.Contains(d.Reason, want) {
				t.Errorf("%s reason %q does not say %q", action, d.Reason, want)
			}
		}
		if h := g.hist.History(action, time.Time{}); len(h) != 0 {
			t.Errorf("%s: refused claim left history %v", action, h)
		}
	}
	if !strings.Contains(mustReason(t, g, "do_quorum_cut"), "requires quorum") {
		t.Error("a quorum action's refusal does not say it requires quorum")
	}
	// can_do learns the same through Check; local claims check fine.
	chk := g.res.(shared.Checker)
	if d, ok := chk.Check(context.Background(), claim("do_shared_cut")); ok || d.Permission != promcp.PartitionNoQuorum {
		t.Fatalf("Check of a shared claim while cut: %v %s, want partition_no_quorum", ok, d.Permission)
	}
	if _, ok := chk.Check(context.Background(), claim("do_local_0")); !ok {
		t.Fatal("Check of a local claim while cut: not ok")
	}
	// Local-only claims go on.
	for i := range 5 {
		if d, err := act(context.Background(), g, claim(fmt.Sprintf("do_local_%d", i)), time.Hour); err != nil || !d.Allowed() {
			t.Fatalf("local claim while cut: %s (%s) err=%v", d.Permission, d.Reason, err)
		}
	}
	g.leaf.Heal(t)
	if d, err := act(context.Background(), g, claim("do_shared_cut"), 0); err != nil || !d.Allowed() {
		t.Fatalf("shared claim after healing: %s (%s) err=%v", d.Permission, d.Reason, err)
	}
	if d, err := act(context.Background(), &gateway{res: lateRes}, claim("do_shared_late"), 0); err != nil || !d.Allowed() {
		t.Fatalf("shared claim after healing, on the State opened while cut off: %s (%s) err=%v", d.Permission, d.Reason, err)
	}
	if _, ok := chk.Check(context.Background(), claim("do_shared_cut")); !ok {
		t.Fatal("Check of a shared claim after healing: not ok")
	}
}

func mustReason(t *testing.T, g *gateway, action string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, d, _ := g.res.Reserve(ctx, claim(action), cooldownDecide(claim(action), 0))
	return d.Reason
}

// testRace: three gateways race for a shared cooldown, hundreds of times;
// exactly one wins each round, the others are told cooldown_active. Under
// the race detector (which looks for data races, not for extra winners)
// 60 rounds keep the test within its time.
func testRace(t *testing.T, f *fleet) {
	rounds := 300
	if raceEnabled {
		rounds = 60
	}
	for round := range rounds {
		// Even rounds race on a new key (create path); odd rounds on the
		// key the previous winner released (update path).
		action := fmt.Sprintf("do_shared_%d", round/2)
		type result struct {
			res *policy.Reservation
			d   policy.Decision
			err error
			g   *gateway
		}
		out := make(chan result, len(f.gws))
		var start sync.WaitGroup
		start.Add(1)
		for _, g := range f.gws {
			go func() {
				start.Wait()
				c := claim(action)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				res, d, err := g.res.Reserve(ctx, c, cooldownDecide(c, time.Hour))
				out <- result{res, d, err, g}
			}()
		}
		start.Done()
		var winners []result
		for range f.gws {
			r := <-out
			if r.err != nil {
				t.Fatalf("round %d %s: %v", round, r.g.name, r.err)
			}
			if r.res != nil {
				winners = append(winners, r)
				continue
			}
			if r.d.Permission != promcp.CooldownActive {
				t.Fatalf("round %d %s: loser got %s (%s), want cooldown_active", round, r.g.name, r.d.Permission, r.d.Reason)
			}
		}
		if len(winners) != 1 {
			t.Fatalf("round %d: %d winners, want exactly 1", round, len(winners))
		}
		w := winners[0]
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		var err error
		if round%2 == 0 {
			err = w.g.res.Release(ctx, w.res) // nothing moved: the next round may go
		} else {
			err = w.g.res.Commit(ctx, w.res, time.Now(), true)
		}
		cancel()
		if err != nil {
			t.Fatalf("round %d: ending the winner's reservation: %v", round, err)
		}
	}
	// A committed actuation holds the cooldown for every gateway.
	for _, g := range f.gws {
		c := claim(fmt.Sprintf("do_shared_%d", (rounds-1)/2))
		res, d, err := g.res.Reserve(context.Background(), c, cooldownDecide(c, time.Hour))
		if err != nil || res != nil || d.Permission != promcp.CooldownActive {
			t.Fatalf("%s after a commit: res=%v d=%s (%s) err=%v, want cooldown_active", g.name, res, d.Permission, d.Reason, err)
		}
	}
}

// testRate: a fleet-wide limit of 2 actuations per hour lets two
// gateways' actuations through and refuses the third gateway's
// rate_limited; a released reservation gives its slot back.
func testRate(t *testing.T, f *fleet) {
	ctx := context.Background()
	for i, g := range f.gws {
		d, err := act(ctx, g, claim("do_rate_a"), 0)
		if err != nil {
			t.Fatal(err)
		}
		if i < 2 && !d.Allowed() {
			t.Fatalf("%s, actuation %d of 2 allowed: %s (%s)", g.name, i+1, d.Permission, d.Reason)
		}
		if i == 2 {
			if d.Permission != promcp.RateLimited || !strings.Contains(d.Reason, "fleet-wide rate limit of 2") {
				t.Fatalf("%s, third actuation in the window: %s (%s), want rate_limited", g.name, d.Permission, d.Reason)
			}
			if !d.ValidUntil.After(time.Now().Add(59 * time.Minute)) {
				t.Fatalf("rate_limited valid_until %s, want about an hour from now", d.ValidUntil)
			}
		}
	}
	c := claim("do_rate_b")
	res, d, err := f.gws[0].res.Reserve(ctx, c, cooldownDecide(c, 0))
	if err != nil || res == nil {
		t.Fatalf("reserve: %s (%s) %v", d.Permission, d.Reason, err)
	}
	if err := f.gws[0].res.Release(ctx, res); err != nil {
		t.Fatal(err)
	}
	for _, g := range f.gws[1:] {
		if d, err := act(ctx, g, claim("do_rate_b"), 0); err != nil || !d.Allowed() {
			t.Fatalf("%s after a release gave its slot back: %s (%s) %v", g.name, d.Permission, d.Reason, err)
		}
	}
	if d, err := act(ctx, f.gws[0], claim("do_rate_b"), 0); err != nil || d.Permission != promcp.RateLimited {
		t.Fatalf("third actuation of do_rate_b: %s (%s) %v, want rate_limited", d.Permission, d.Reason, err)
	}
}

// testLease: while one gateway holds a reservation on a shared actuator,
// another gateway's claim waits for it (its context ends the wait), and
// goes ahead once the first commits.
func testLease(t *testing.T, f *fleet) {
	ctx := context.Background()
	g1, g2 := f.gws[0], f.gws[1]
	c := claim("do_shared_lease")
	held, d, err := g1.res.Reserve(ctx, c, cooldownDecide(c, 0))
	if err != nil || held == nil {
		t.Fatalf("first claim: %s (%s) %v", d.Permission, d.Reason, err)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	res, _, err := g2.res.Reserve(short, claim("do_shared_lease"), cooldownDecide(claim("do_shared_lease"), 0))
	cancel()
	if res != nil || err == nil || !strings.Contains(err.Error(), "in progress on do_shared_lease at gateway gw1") {
		t.Fatalf("claim while gw1 holds the actuator: res=%v err=%v, want a wait ended by the context", res, err)
	}
	got := make(chan error, 1)
	go func() {
		c := claim("do_shared_lease")
		res, d, err := g2.res.Reserve(ctx, c, cooldownDecide(c, 0))
		if err == nil && res == nil {
			err = fmt.Errorf("refused: %s (%s)", d.Permission, d.Reason)
		}
		if err == nil {
			err = g2.res.Commit(ctx, res, time.Now(), true)
		}
		got <- err
	}()
	if err := g1.res.Commit(ctx, held, time.Now(), true); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("claim after gw1 committed: %v", err)
	}
}

// testSkew: fleet ages are measured on the hub's clock. After a gateway
// actuates, a gateway whose clock runs an hour ahead still sees the
// actuation as just now (its 10-minute cooldown holds, and clears 10
// minutes from now on its own clock), not as an hour ago.
func testSkew(t *testing.T, f *fleet) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if d, err := act(ctx, f.gws[1], claim("do_shared_skew"), 10*time.Minute); err != nil || !d.Allowed() {
		t.Fatalf("first actuation: %s (%s) %v", d.Permission, d.Reason, err)
	}
	ahead := func() time.Time { return time.Now().Add(time.Hour) }
	st, err := shared.Open(ctx, f.gws[0].leaf.Conn(t), shared.Config{Gateway: "gw1", Clock: aheadClock{}})
	if err != nil {
		t.Fatal(err)
	}
	res := st.Reserver(policy.NewLocalReserver(policy.NewMemoryState()), testRules)
	c := claim("do_shared_skew")
	c.Now = ahead()
	_, d, err := res.Reserve(ctx, c, cooldownDecide(c, 10*time.Minute))
	if err != nil || d.Permission != promcp.CooldownActive {
		t.Fatalf("gateway with its clock an hour ahead: %s (%s) %v, want cooldown_active", d.Permission, d.Reason, err)
	}
	if until := d.ValidUntil.Sub(c.Now); until < 9*time.Minute || until > 10*time.Minute {
		t.Fatalf("cooldown clears %s after now on the ahead clock, want within 10 minutes", until)
	}
}

// aheadClock is the real clock an hour ahead.
type aheadClock struct{}

func (aheadClock) Now() time.Time                         { return time.Now().Add(time.Hour) }
func (aheadClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
