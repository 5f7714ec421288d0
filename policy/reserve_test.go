package policy_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/policy"
	"github.com/promcp/promcp-device/promcp"
)

// actuator is a simulated device whose write takes a random number of
// scheduler turns, so that callers overlap in many different ways.
type actuator struct {
	mu    sync.Mutex
	value any
	at    time.Time
}

func (a *actuator) read() policy.Reading {
	a.mu.Lock()
	defer a.mu.Unlock()
	return policy.Reading{Value: a.value, Time: a.at, Quality: promcp.QualityGood, TTL: time.Second}
}

func (a *actuator) write(v any, at time.Time, turns int) {
	for range turns {
		runtime.Gosched()
	}
	a.mu.Lock()
	a.value, a.at = v, at
	a.mu.Unlock()
}

// race runs n callers of action with value at once against r and returns
// the permissions they got (allowed means written and committed).
func race(t *testing.T, r policy.Reserver, n int, reqs func(i int) (policy.Claim, func(policy.View) policy.Request, *actuator)) []promcp.Permission {
	t.Helper()
	out := make([]promcp.Permission, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			claim, build, dev := reqs(i)
			<-start
			for range rand.IntN(4) {
				runtime.Gosched()
			}
			res, d, err := r.Reserve(context.Background(), claim, func(_ context.Context, v policy.View) policy.Decision {
				return policy.Evaluator{}.Evaluate(build(v))
			})
			if err != nil {
				t.Error(err)
				return
			}
			out[i] = d.Permission
			if res == nil {
				return
			}
			dev.write(d.Value, claim.Now, rand.IntN(20))
			if err := r.Commit(context.Background(), res, claim.Now, d.Value); err != nil {
				t.Error(err)
			}
		}()
	}
	close(start)
	wg.Wait()
	return out
}

func count(ps []promcp.Permission) map[promcp.Permission]int {
	m := map[promcp.Permission]int{}
	for _, p := range ps {
		m[p]++
	}
	return m
}

func numberRequest(action string, rules *manifests.ActionPolicy, dev *actuator, value float64, at time.Time) (policy.Claim, func(policy.View) policy.Request) {
	claim := policy.Claim{Action: action, Read: "read_x", Unit: policy.Unit{action}, Value: value, Window: time.Hour, Now: at}
	return claim, func(v policy.View) policy.Request {
		cur := dev.read()
		req := policy.Request{Action: action, Type: manifests.TypeNumber, Value: value, HasValue: true,
			Current: &cur, CurrentRead: "read_x", Role: "operator", Rules: rules, Peers: 1, Now: at}
		v.Apply(&req)
		return req
	}
}

// TestReserveCooldownUnderOverlap: 16 callers with distinct values on one
// actuator with a cooldown, in 400 rounds a cooldown apart: exactly one
// write per round, every other caller cooldown_active.
func TestReserveCooldownUnderOverlap(t *testing.T) {
	const callers = 16
	overlapRounds(t, &manifests.ActionPolicy{Tool: "do_x", Cooldown: time.Minute}, 400, callers, time.Minute,
		map[promcp.Permission]int{promcp.Allowed: 1, promcp.CooldownActive: callers - 1})
}

// TestReserveRateLimitUnderOverlap: a rate limit of 3 per hour, 16 callers
// at once, 300 rounds an hour apart: exactly 3 writes per round.
func TestReserveRateLimitUnderOverlap(t *testing.T) {
	const callers, limit = 16, 3
	overlapRounds(t, &manifests.ActionPolicy{Tool: "do_x", RateLimit: &manifests.RateLimit{Max: limit, Per: time.Hour}}, 300, callers, time.Hour,
		map[promcp.Permission]int{promcp.Allowed: limit, promcp.RateLimited: callers - limit})
}

// TestReserveRateLimitDuringCommit: callers that arrive while a commit is
// recording its actuation (as bbolt does, with an fsync) must not count it
// twice (in the history and as still pending) and so refuse a caller the
// limit allows. Limit 2: the first caller commits, 8 late callers arrive
// during its Record, and exactly one of them is allowed, every round.
func TestReserveRateLimitDuringCommit(t *testing.T) {
	const late, limit = 8, 2
	rules := &manifests.ActionPolicy{Tool: "do_x", RateLimit: &manifests.RateLimit{Max: limit, Per: time.Hour}}
	dev := &actuator{value: 0.0}
	at := now
	for round := range 50 {
		var wg sync.WaitGroup
		out := make([]promcp.Permission, late)
		var once sync.Once
		st := &hookState{MemoryState: policy.NewMemoryState()}
		st.r = policy.NewLocalReserver(st)
		st.recorded = func() {
			once.Do(func() {
				for i := range late {
					wg.Add(1)
					go func() {
						defer wg.Done()
						out[i] = reserveAndCommit(t, st.r, "do_x", rules, dev, float64(i+2), at)
					}()
				}
				for range 200 { // let them decide while this commit is recording
					runtime.Gosched()
				}
			})
		}
		first := reserveAndCommit(t, st.r, "do_x", rules, dev, 1, at)
		wg.Wait()
		got := count(append(out, first))
		if want := map[promcp.Permission]int{promcp.Allowed: limit, promcp.RateLimited: late + 1 - limit}; !maps.Equal(got, want) {
			t.Fatalf("round %d: %v, want %v", round, got, want)
		}
		at = at.Add(time.Hour)
	}
}

// hookState calls recorded after each Record, from inside it.
type hookState struct {
	*policy.MemoryState
	recorded func()
	r        *policy.LocalReserver
}

func (s *hookState) Record(action string, t time.Time) {
	s.MemoryState.Record(action, t)
	s.recorded()
}

// reserveAndCommit reserves one write of value and, allowed, writes and
// commits it; it returns the permission.
func reserveAndCommit(t *testing.T, r policy.Reserver, action string, rules *manifests.ActionPolicy, dev *actuator, value float64, at time.Time) promcp.Permission {
	claim, build := numberRequest(action, rules, dev, value, at)
	res, d, err := r.Reserve(context.Background(), claim, func(_ context.Context, v policy.View) policy.Decision {
		return policy.Evaluator{}.Evaluate(build(v))
	})
	if err != nil {
		t.Error(err)
		return ""
	}
	if res != nil {
		dev.write(d.Value, at, 0)
		if err := r.Commit(context.Background(), res, at, d.Value); err != nil {
			t.Error(err)
		}
	}
	return d.Permission
}

// overlapRounds runs rounds rounds, step apart, of callers at once asking
// to write one actuator under rules, and wants each round's permissions
// counted as want.
func overlapRounds(t *testing.T, rules *manifests.ActionPolicy, rounds, callers int, step time.Duration, want map[promcp.Permission]int) {
	t.Helper()
	r := policy.NewLocalReserver(policy.NewMemoryState())
	dev := &actuator{value: 0.0}
	at := now
	for round := range rounds {
		ps := race(t, r, callers, func(i int) (policy.Claim, func(policy.View) policy.Request, *actuator) {
			c, b := numberRequest("do_x", rules, dev, float64(i+1), at)
			return c, b, dev
		})
		if got := count(ps); !maps.Equal(got, want) {
			t.Fatalf("round %d: %v, want %v", round, got, want)
		}
		at = at.Add(step)
	}
}

// TestReserveTwoWayInterlockUnderOverlap: heater on is refused while the
// vent is open, and the vent opening while the heater is on. Callers
// switching either on race in 1,000 rounds; the two are never both on, and
// in each round exactly one of them is switched on.
func TestReserveTwoWayInterlockUnderOverlap(t *testing.T) {
	const rounds, callers = 1000, 8
	r := policy.NewLocalReserver(policy.NewMemoryState())
	heater, vent := &actuator{value: false}, &actuator{value: false}
	unit := policy.Unit{"do_set_heater", "do_set_vent"}
	rules := map[string]*manifests.ActionPolicy{
		"do_set_heater": {Tool: "do_set_heater", Interlocks: []manifests.Interlock{{Read: "read_vent", Equals: true,
			When: &manifests.ValueCondition{Equals: true}, Reason: "no heater while the vent is open"}}},
		"do_set_vent": {Tool: "do_set_vent", Interlocks: []manifests.Interlock{{Read: "read_heater", Equals: true,
			When: &manifests.ValueCondition{Equals: true}, Reason: "no vent while the heater runs"}}},
	}
	devs := map[string]*actuator{"do_set_heater": heater, "do_set_vent": vent}
	other := map[string]string{"do_set_heater": "do_set_vent", "do_set_vent": "do_set_heater"}
	read := map[string]string{"do_set_heater": "read_heater", "do_set_vent": "read_vent"}
	var both atomic.Int32
	at := now
	for round := range rounds {
		ps := race(t, r, callers, func(i int) (policy.Claim, func(policy.View) policy.Request, *actuator) {
			action := "do_set_heater"
			if i%2 == 1 {
				action = "do_set_vent"
			}
			claim := policy.Claim{Action: action, Read: read[action], Unit: unit, Value: true, Now: at}
			return claim, func(v policy.View) policy.Request {
				cur := devs[action].read()
				o := devs[other[action]].read()
				req := policy.Request{Action: action, Type: manifests.TypeBoolean, Value: true, HasValue: true,
					Current: &cur, CurrentRead: read[action], Role: "operator", Rules: rules[action], Peers: 1, Now: at,
					Readings: map[string]policy.Reading{read[other[action]]: o}}
				v.Apply(&req)
				return req
			}, devs[action]
		})
		h, v := heater.read().Value, vent.read().Value
		if h == true && v == true {
			both.Add(1)
			t.Fatalf("round %d: heater and vent both on (%v)", round, ps)
		}
		if h != true && v != true {
			t.Fatalf("round %d: neither is on (%v): one caller should have won", round, ps)
		}
		// Switch both off again: the safe direction, never interlocked.
		at = at.Add(time.Second)
		for _, a := range []string{"do_set_heater", "do_set_vent"} {
			claim := policy.Claim{Action: a, Read: read[a], Unit: unit, Value: false, Now: at}
			res, d, err := r.Reserve(context.Background(), claim, func(_ context.Context, view policy.View) policy.Decision {
				cur := devs[a].read()
				o := devs[other[a]].read()
				req := policy.Request{Action: a, Type: manifests.TypeBoolean, Value: false, HasValue: true, SafeValue: false,
					Current: &cur, CurrentRead: read[a], Role: "operator", Rules: rules[a], Peers: 1, Now: at,
					Readings: map[string]policy.Reading{read[other[a]]: o}}
				view.Apply(&req)
				return policy.Evaluator{}.Evaluate(req)
			})
			if err != nil || res == nil {
				t.Fatalf("round %d: switching %s off: %v %v", round, a, d, err)
			}
			devs[a].write(false, at, 0)
			if err := r.Commit(context.Background(), res, at, false); err != nil {
				t.Fatal(err)
			}
		}
		at = at.Add(time.Second)
	}
}

// TestReservePendingSeenBySnapshot: while a reservation is held, a
// snapshot (what can_do reads) counts it against the cooldown and shows it
// held; after Release, the cooldown is free again; after Commit it holds.
func TestReservePendingSeenBySnapshot(t *testing.T) {
	r := policy.NewLocalReserver(policy.NewMemoryState())
	rules := &manifests.ActionPolicy{Tool: "do_x", Cooldown: time.Minute}
	dev := &actuator{value: 0.0}
	claim, build := numberRequest("do_x", rules, dev, 5, now)
	decide := func(_ context.Context, v policy.View) policy.Decision { return policy.Evaluator{}.Evaluate(build(v)) }
	res, d, err := r.Reserve(t.Context(), claim, decide)
	if err != nil || res == nil {
		t.Fatalf("first reserve: %v %v", d, err)
	}
	v := r.Snapshot(claim)
	if d := (policy.Evaluator{}).Evaluate(build(v)); !v.Held() || d.Permission != promcp.CooldownActive || !strings.Contains(d.Reason, "actuating now") {
		t.Fatalf("snapshot while held: held %t, %s %q; want held, cooldown_active naming the call in progress", v.Held(), d.Permission, d.Reason)
	}
	// Decided later than the reservation began (a real clock moves on).
	_, later := numberRequest("do_x", rules, dev, 5, now.Add(2*time.Second))
	if d := (policy.Evaluator{}).Evaluate(later(v)); d.Permission != promcp.CooldownActive || !strings.Contains(d.Reason, "actuating now") {
		t.Fatalf("2 s into the reservation: %s %q; want cooldown_active naming the call in progress", d.Permission, d.Reason)
	}
	if err := r.Release(t.Context(), res); err != nil {
		t.Fatal(err)
	}
	if err := r.Release(t.Context(), res); err == nil {
		t.Fatal("releasing twice succeeded")
	}
	res, d, err = r.Reserve(t.Context(), claim, decide)
	if err != nil || res == nil {
		t.Fatalf("reserve after release: %v %v; a released reservation must not count", d, err)
	}
	if err := r.Commit(t.Context(), res, now, 5.0); err != nil {
		t.Fatal(err)
	}
	if res, d, _ := r.Reserve(t.Context(), claim, decide); res != nil || d.Permission != promcp.CooldownActive {
		t.Fatalf("reserve after commit: %v, want cooldown_active", d)
	}
}

// TestReserveWaitsForTiedActuator: a decision that allows the action while
// a tied actuator is reserved waits for it, and gives up when ctx ends.
func TestReserveWaitsForTiedActuator(t *testing.T) {
	r := policy.NewLocalReserver(policy.NewMemoryState())
	dev := &actuator{value: 0.0}
	unit := policy.Unit{"do_a", "do_b"}
	allow := func(context.Context, policy.View) policy.Decision { return policy.Decision{Permission: promcp.Allowed} }
	held, _, err := r.Reserve(t.Context(), policy.Claim{Action: "do_a", Unit: unit, Now: now}, allow)
	if err != nil || held == nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if res, _, err := r.Reserve(ctx, policy.Claim{Action: "do_b", Unit: unit, Now: now}, allow); res != nil || err == nil {
		t.Fatalf("reserve on a held unit with an ended context = %v, %v; want an error", res, err)
	}
	got := make(chan *policy.Reservation)
	go func() {
		res, _, _ := r.Reserve(t.Context(), policy.Claim{Action: "do_b", Unit: unit, Now: now}, allow)
		got <- res
	}()
	dev.write(1.0, now, 5)
	if err := r.Commit(t.Context(), held, now, 1.0); err != nil {
		t.Fatal(err)
	}
	if res := <-got; res == nil || res.Action != "do_b" {
		t.Fatalf("waiting reserve = %+v, want do_b reserved once do_a ended", res)
	}
}

// BenchmarkReserveCommit is the cost a do_* call pays for its reservation
// (decide with a cooldown and a rate limit, reserve, commit), uncontended
// and with 8 actuators in parallel.
func BenchmarkReserveCommit(b *testing.B) {
	rules := &manifests.ActionPolicy{Tool: "do_x", RateLimit: &manifests.RateLimit{Max: 1 << 30, Per: time.Minute}}
	run := func(b *testing.B, r *policy.LocalReserver, action string, at *time.Time) {
		dev := &actuator{value: 0.0}
		claim, build := numberRequest(action, rules, dev, 5, *at)
		res, d, err := r.Reserve(context.Background(), claim, func(_ context.Context, v policy.View) policy.Decision {
			return policy.Evaluator{}.Evaluate(build(v))
		})
		if err != nil || res == nil {
			b.Fatal(d, err)
		}
		if err := r.Commit(context.Background(), res, claim.Now, 5.0); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("one", func(b *testing.B) {
		r := policy.NewLocalReserver(policy.NewMemoryState())
		at := now
		for b.Loop() {
			at = at.Add(10 * time.Minute) // MemoryState keeps a day: 144 entries
			run(b, r, "do_x", &at)
		}
	})
	b.Run("parallel8", func(b *testing.B) {
		r := policy.NewLocalReserver(policy.NewMemoryState())
		var n atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			action := fmt.Sprintf("do_%d", n.Add(1)%8)
			at := now
			for pb.Next() {
				at = at.Add(10 * time.Minute)
				run(b, r, action, &at)
			}
		})
	})
}

// brokenState is a State whose history file cannot be read.
type brokenState struct{ *policy.MemoryState }

func (b brokenState) HistoryErr(action string, since time.Time) ([]time.Time, error) {
	return nil, fmt.Errorf("reading %s: input/output error", action)
}

// An actuation history that cannot be read fails closed: an action with a
// cooldown is refused (its cooldown cannot be checked), not decided on an
// empty history; the move to the safe value still goes ahead.
func TestUnreadableHistoryFailsClosed(t *testing.T) {
	r := policy.NewLocalReserver(brokenState{policy.NewMemoryState()})
	rules := &manifests.ActionPolicy{Tool: "do_heater", Cooldown: 30 * time.Minute}
	decide := func(value bool) policy.Decision {
		claim := policy.Claim{Action: "do_heater", Read: "read_heater", Unit: policy.Unit{"do_heater"}, Value: value, Window: time.Hour, Now: hist0}
		res, d, err := r.Reserve(context.Background(), claim, func(_ context.Context, v policy.View) policy.Decision {
			req := policy.Request{Action: "do_heater", Type: manifests.TypeBoolean, Value: value, HasValue: true, Role: "operator",
				Rules: rules, Peers: 1, Now: hist0, SafeValue: false}
			v.Apply(&req)
			return policy.Evaluator{}.Evaluate(req)
		})
		if err != nil {
			t.Fatal(err)
		}
		if res != nil {
			_ = r.Release(context.Background(), res)
		}
		return d
	}
	if d := decide(true); d.Allowed() || d.Permission != promcp.PolicyDenied || !strings.Contains(d.Reason, "cannot be read") {
		t.Fatalf("do_heater(true) with an unreadable history = %+v, want refused", d)
	}
	if d := decide(false); !d.Allowed() {
		t.Fatalf("do_heater(false), the safe value, with an unreadable history = %+v, want allowed", d)
	}
}

var hist0 = time.Date(2026, 7, 1, 6, 0, 0, 0, time.UTC)
