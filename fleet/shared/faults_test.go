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

	"github.com/nats-io/nats.go"

	"github.com/promcp/promcp-device/fleet/shared"
	"github.com/promcp/promcp-device/fleet/shared/sharedtest"
	"github.com/promcp/promcp-device/idempotency"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/policy"
	"github.com/promcp/promcp-device/promcp"
)

// TestFaults: the faults seen running a fleet by hand (issue 24), each
// through real NATS with TLS and per-node keys. Timings are reported,
// not asserted.
func TestFaults(t *testing.T) {
	f := startFleet(t, 2*time.Second)
	t.Run("rate counted once", func(t *testing.T) { testRateOnce(t, f) })
	t.Run("takeover after lease", func(t *testing.T) { testTakeover(t, f) })
	t.Run("two claims of one gateway", func(t *testing.T) { testTwoClaims(t, f) })
	t.Run("lost replies", func(t *testing.T) { testLostReplies(t, f) })
	t.Run("local calls need no hub", func(t *testing.T) { testLocalNoHub(t, f) }) // last: stops two hub nodes
}

// rateDecide evaluates a claim with a rate limit of max per hour.
func rateDecide(c policy.Claim, max int) func(ctx context.Context, v policy.View) policy.Decision {
	return func(_ context.Context, v policy.View) policy.Decision {
		req := policy.Request{Action: c.Action, Role: "operator", Now: c.Now,
			Rules: &manifests.ActionPolicy{Tool: c.Action, RateLimit: &manifests.RateLimit{Max: max, Per: time.Hour}}}
		v.Apply(&req)
		return policy.Evaluator{}.Evaluate(req)
	}
}

// testRateOnce: a fleet rate limit of 5 per hour admits 5 actuations of
// one gateway, then refuses: its own actuations, in its local history
// and in the fleet record, are counted once (it admitted 3).
func testRateOnce(t *testing.T, f *fleet) {
	ctx := context.Background()
	g := f.gws[2]
	admitted := 0
	for i := range 6 {
		c := claim("do_five")
		res, d, err := g.res.Reserve(ctx, c, rateDecide(c, 5))
		if err != nil {
			t.Fatal(err)
		}
		if res != nil {
			if err := g.res.Commit(ctx, res, time.Now(), true); err != nil {
				t.Fatal(err)
			}
			admitted++
			continue
		}
		if i < 5 {
			t.Fatalf("actuation %d of a limit of 5 per hour refused: %s (%s)", i+1, d.Permission, d.Reason)
		}
		if d.Permission != promcp.RateLimited {
			t.Fatalf("sixth actuation: %s (%s), want rate_limited", d.Permission, d.Reason)
		}
	}
	if admitted != 5 {
		t.Fatalf("admitted %d of 6 under a limit of 5 per hour, want 5", admitted)
	}
}

// testTakeover: a gateway that reserved and crashed (never settles)
// holds the actuator for its lease only (1 s here): another gateway's
// claim takes the record over once it lapses, reading the clock on every
// pass (it waited until its own deadline before), and backs off while the
// hub still holds it.
func testTakeover(t *testing.T, f *fleet) {
	ctx := context.Background()
	c := claim("do_lease1")
	crashed, d, err := f.gws[0].res.Reserve(ctx, c, cooldownDecide(c, 0))
	if err != nil || crashed == nil {
		t.Fatalf("first claim: %s (%s) %v", d.Permission, d.Reason, err)
	}
	start := time.Now()
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c2 := claim("do_lease1")
	res, d, err := f.gws[1].res.Reserve(wctx, c2, cooldownDecide(c2, 0))
	if err != nil || res == nil {
		t.Fatalf("claim over a crashed gateway's lapsed pending record: %s (%s) %v", d.Permission, d.Reason, err)
	}
	t.Logf("taken over %s after the crashed gateway's claim (lease 1 s)", time.Since(start).Round(time.Millisecond))
	if err := f.gws[1].res.Commit(ctx, res, time.Now(), true); err != nil {
		t.Fatal(err)
	}
	// The crashed claim's late settle is refused: the record is no
	// longer its own.
	if err := f.gws[0].res.Commit(ctx, crashed, time.Now(), true); err == nil {
		t.Fatal("a settle of a record taken over succeeded")
	}
}

// testTwoClaims: two claims of one gateway (two processes, or a restart,
// on one key) do not overwrite each other's pending record: the second
// waits for the first (it was refused policy_denied before), then goes.
func testTwoClaims(t *testing.T, f *fleet) {
	ctx := context.Background()
	g := f.gws[0]
	octx, cancel := context.WithTimeout(ctx, 20*time.Second)
	st, err := shared.Open(octx, g.leaf.Conn(t), shared.Config{Gateway: g.name})
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	other := st.Reserver(policy.NewLocalReserver(policy.NewMemoryState()), testRules)
	c := claim("do_shared_two")
	first, d, err := g.res.Reserve(ctx, c, cooldownDecide(c, 0))
	if err != nil || first == nil {
		t.Fatalf("first claim: %s (%s) %v", d.Permission, d.Reason, err)
	}
	short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	res, d, err := other.Reserve(short, claim("do_shared_two"), cooldownDecide(claim("do_shared_two"), 0))
	cancel()
	if res != nil || err == nil || !strings.Contains(err.Error(), "in progress on do_shared_two at gateway gw1") {
		t.Fatalf("second claim of gw1 while its first holds: res=%v %s (%s) err=%v, want a wait ended by the context", res, d.Permission, d.Reason, err)
	}
	got := make(chan error, 1)
	go func() {
		c := claim("do_shared_two")
		res, d, err := other.Reserve(ctx, c, cooldownDecide(c, 0))
		if err == nil && res == nil {
			err = fmt.Errorf("refused: %s (%s)", d.Permission, d.Reason)
		}
		if err == nil {
			err = other.Commit(ctx, res, time.Now(), true)
		}
		got <- err
	}()
	if err := g.res.Commit(ctx, first, time.Now(), true); err != nil {
		t.Fatalf("first claim's commit: %v", err)
	}
	if err := <-got; err != nil {
		t.Fatalf("second claim after the first committed: %v", err)
	}
}

type routedKey struct{}

// testLocalNoHub: with StoreFor, a gateway's own (direct) calls are
// deduplicated on the gateway with no request to the hubs' service, and
// take as long with two of three hub nodes down as with all up (paired
// figures, reported); a routed call's key is claimed on the hub, and
// during the outage it is refused without running (never "alone").
func testLocalNoHub(t *testing.T, f *fleet) {
	g := f.gws[0]
	store := g.state.StoreFor(idempotency.NewMemory(time.Hour, nil), time.Hour,
		func(ctx context.Context) bool { return ctx.Value(routedKey{}) != nil })
	watch := f.hub.Connect()
	defer watch.Close()
	var asked, probed atomic.Int64
	probe := shared.ServiceSubject(g.name, "probe")
	sub, err := watch.Subscribe(shared.ServiceSubject(g.name, "*"), func(m *nats.Msg) {
		if m.Subject == probe {
			probed.Add(1)
			return
		}
		asked.Add(1)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	_ = watch.Flush()
	// The watcher's interest reaches the hub node the gateway's requests
	// enter by only once the routes have propagated it (Flush covers the
	// watcher's own node): probe through the gateway's leaf until the
	// watcher sees one, or it could miss the requests it is here to count
	// (CI once counted 1 of a routed call's 2).
	gwConn := g.leaf.Conn(t)
	if err := sharedtest.Poll(2*time.Minute, func(context.Context) error {
		_ = gwConn.Publish(probe, nil)
		_ = gwConn.Flush()
		if probed.Load() == 0 {
			return errors.New("the watcher has not seen a probe through the gateway's leaf")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int64
	act := func(context.Context, idempotency.Attempt) ([]byte, bool, error) {
		runs.Add(1)
		return []byte("ok"), true, nil
	}
	round := func(label string) time.Duration {
		const n = 20
		start := time.Now()
		for i := range n {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if _, _, err := store.Do(ctx, fmt.Sprintf("local-%s-%d", label, i), "do_x", act); err != nil {
				t.Fatalf("local call %d (%s): %v", i, label, err)
			}
			cancel()
		}
		return time.Since(start) / n
	}
	up := round("up")
	_ = watch.Flush()
	if n := asked.Load(); n != 0 {
		t.Errorf("%d requests to the hubs' service for 20 local calls, want none", n)
	}
	routedCtx := context.WithValue(context.Background(), routedKey{}, true)
	if _, _, err := store.Do(routedCtx, "routed-up", "do_x", act); err != nil {
		t.Fatalf("routed call with the hub up: %v", err)
	}
	// The watcher sees the routed call's requests (its claim and its
	// outcome) while every hub node is up: counted before the outage, which
	// may cut the watcher's own connection.
	if err := sharedtest.Poll(time.Minute, func(context.Context) error {
		if n := asked.Load(); n < 2 {
			return fmt.Errorf("%d requests to the hubs' service seen", n)
		}
		return nil
	}); err != nil || asked.Load() != 2 {
		t.Errorf("%d requests to the hubs' service for one routed call, want 2 (its claim and outcome): %v", asked.Load(), err)
	}
	f.hub.Stop(1)
	f.hub.Stop(2)
	down := round("down")
	t.Logf("local do_* idempotency, per call: hub up %s, two of three hub nodes down %s", up, down)
	before := runs.Load()
	ctx, cancel := context.WithTimeout(routedCtx, 10*time.Second)
	defer cancel()
	_, _, err = store.Do(ctx, "routed-down", "do_x", act)
	if !errors.Is(err, shared.ErrClaimUnknown) || runs.Load() != before {
		t.Fatalf("routed call with no hub quorum: err=%v, ran %d times; want ErrClaimUnknown and no run", err, runs.Load()-before)
	}
}

// testLostReplies: a reservation whose reply is lost, and whose read
// back fails too, is recognised as this claim's own on the next pass (it
// refused itself policy_denied before: a retry was a new claim, over its
// own orphan); a settle whose reply is lost is recognised as applied.
func testLostReplies(t *testing.T, f *fleet) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g := f.gws[1]
	octx, ocancel := context.WithTimeout(ctx, 20*time.Second)
	st, err := shared.Open(octx, g.leaf.Conn(t), shared.Config{Gateway: g.name})
	ocancel()
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var lost []string
	lose := map[string]int{"reserve": 1, "settle": 1}
	loseRead := false
	shared.LoseReplies(st, func(op string) error {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case op == "read" && loseRead:
			loseRead = false
			lost = append(lost, op)
			return context.DeadlineExceeded
		case lose[op] > 0:
			lose[op]--
			loseRead = op == "reserve"
			lost = append(lost, op)
			return context.DeadlineExceeded
		}
		return nil
	})
	res := st.Reserver(policy.NewLocalReserver(policy.NewMemoryState()), testRules)
	c := claim("do_shared_lost")
	if d, err := act(ctx, &gateway{res: res}, c, 0); err != nil || !d.Allowed() {
		t.Fatalf("claim whose reserve and settle replies were lost: %s (%s) %v (lost %v)", d.Permission, d.Reason, err, lost)
	}
	if len(lost) != 3 {
		t.Fatalf("lost %v, want a reserve reply, its read back and a settle reply", lost)
	}
	// The record is committed: another gateway is held by its cooldown.
	c2 := claim("do_shared_lost")
	if d, err := act(ctx, f.gws[2], c2, time.Hour); err != nil || d.Permission != promcp.CooldownActive {
		t.Fatalf("after the actuation: %s (%s) %v, want cooldown_active", d.Permission, d.Reason, err)
	}
}
