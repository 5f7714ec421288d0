package gateway_test

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/promcp/promcp-device/capabilities"
	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/gateway"
	"github.com/promcp/promcp-device/gateway/gatewaytest"
	"github.com/promcp/promcp-device/manifests/manifesttest"
	"github.com/promcp/promcp-device/promcp"
	"github.com/promcp/promcp-device/server"
	"github.com/promcp/promcp-device/sim"
	"github.com/promcp/promcp-device/simtest"
)

// vocabulary returns words an intent may use on g's capabilities: their
// names, tools, locations and tags, whole, cut short and lengthened (the
// prefix rule), in another case, and a few that name nothing.
func vocabulary(g *gatewaytest.Bench) []string {
	seen := map[string]bool{"open": true, "the": true, "nothing": true, "zone": true, "temp": true, "ZONE1": true, "": true}
	for _, c := range g.Set.All() {
		ws := append([]string{c.Name, c.Location, strings.TrimPrefix(c.ReadTool(), "read_")}, c.Tags...)
		if c.Do != nil {
			ws = append(ws, c.Do.Tool)
		}
		for _, w := range ws {
			seen[w] = true
			for _, part := range strings.FieldsFunc(w, func(r rune) bool { return r == '_' }) {
				seen[part] = true
				seen[part+"ing"] = true
				if len(part) > 5 {
					seen[part[:5]] = true
				}
			}
		}
	}
	out := make([]string, 0, len(seen))
	for w := range seen {
		out = append(out, w)
	}
	slices.Sort(out)
	return out
}

// randomIntent draws an intent from vocab: each field given or not.
func randomIntent(r *rand.Rand, vocab []string, locations []string) promcp.Intent {
	pick := func() string { return vocab[r.IntN(len(vocab))] }
	var in promcp.Intent
	if r.IntN(2) == 0 {
		in.Action = pick()
		if r.IntN(3) == 0 {
			in.Action = "set the " + in.Action + " " + pick()
		}
	}
	if r.IntN(3) == 0 {
		in.Target = pick()
	}
	for range r.IntN(3) {
		in.SemanticTags = append(in.SemanticTags, pick())
	}
	if r.IntN(3) == 0 {
		in.Location = locations[r.IntN(len(locations))]
	}
	return in
}

// TestCanDoIndex: on the greenhouse and a generated gateway of 200
// capabilities, the actions can_do's index matches to random intents
// (3,000; 600 under the race detector), with their scores and order, are
// those a scan of every action finds, and the related reads it finds by
// tag are those a scan finds.
func TestCanDoIndex(t *testing.T) {
	for name, g := range map[string]*gatewaytest.Bench{
		"greenhouse": gatewaytest.Serve(t, manifesttest.Load(t, greenhouseManifest), gatewaytest.Options{Clock: clock.NewManual(epoch),
			Hardware: func(w *sim.World) capabilities.HardwareFuncs { return simtest.Lines(t, w, simtest.Hardware(w)) }}),
		"perf200": perfBench(t, 200),
	} {
		t.Run(name, func(t *testing.T) {
			vocab := vocabulary(g)
			locations := []string{"", "nowhere", "ZONE1"}
			for _, c := range g.Set.All() {
				locations = append(locations, c.Location)
			}
			r := rand.New(rand.NewPCG(28, 3))
			matched, intents := 0, 3000
			if raceEnabled {
				intents = 600 // ten times slower: the same checks, fewer intents
			}
			for range intents {
				in := randomIntent(r, vocab, locations)
				indexed, scanned := gateway.CanDoMatches(g.Gateway, in)
				if !slices.Equal(indexed, scanned) {
					t.Fatalf("intent %+v: the index matches %v, a scan %v", in, indexed, scanned)
				}
				matched += len(indexed)
			}
			for _, c := range g.Set.All() {
				if c.Do == nil {
					continue
				}
				for _, l := range locations {
					indexed, scanned := gateway.CanDoRelated(g.Gateway, c.Name, l)
					if !slices.Equal(indexed, scanned) {
						t.Fatalf("%s in %q: the index relates %v, a scan %v", c.Name, l, indexed, scanned)
					}
				}
			}
			t.Logf("%d matches over %d random intents", matched, intents)
			if matched == 0 {
				t.Fatal("no intent matched anything: the comparison proves nothing")
			}
		})
	}
}

// TestCanDoReuse interleaves, on the policy bench (a cooldown, a rate
// limit, a time window, an interlock, roles, a dead bus), actuations,
// clock moves, the door moving (read at once, before the answers kept
// age out) and can_do questions from two roles, and checks after every
// question that the answer can_do gave (given again or not) is the one a
// fresh evaluation gives now: equal in every field but valid_until, which
// may be earlier than the fresh one's but never later, and not past. A
// reused answer that allowed what is now refused (a stale allow) fails it.
func TestCanDoReuse(t *testing.T) {
	b := newPolicyBench(t)
	r := rand.New(rand.NewPCG(28, 6))
	intents := []promcp.Intent{
		{Action: "do_set_pump"}, {Action: "do_set_pump", Value: true}, {Action: "do_set_fan", Value: true},
		{Action: "do_set_light_level", Value: 95.0}, {Action: "do_set_light_level", Value: 20.0},
		{Action: "do_set_valve"}, {Target: "light"}, {SemanticTags: []string{"light"}}, {Action: "set pump"},
		{Action: "do_set_siren", Value: true}, {Action: "do_set_backup_light", Value: 10.0},
	}
	steps := []time.Duration{0, 0, 0, 0, 100 * time.Millisecond, 700 * time.Millisecond, 3 * time.Second, time.Minute, 5 * time.Minute, 40 * time.Minute}
	reused, asked := 0, 0
	for i := range 1500 {
		switch op := r.IntN(10); {
		case op == 0:
			b.clk.Advance(steps[r.IntN(len(steps))])
		case op == 2 && r.IntN(2) == 0:
			// The door moves and a read_* samples it at once: a pump
			// answer kept from before (its interlock) must not be given.
			if err := b.w.Drive("GPIO6", r.IntN(2) == 0); err != nil {
				t.Fatal(err)
			}
			b.body("read_door_closed", map[string]any{"max_age_ms": 0})
		case op == 1:
			tools := []struct {
				tool  string
				value any
			}{{"do_set_pump", true}, {"do_set_pump", false}, {"do_set_fan", true}, {"do_set_light_level", 50.0}, {"do_set_light_level", 95.0}}
			x := tools[r.IntN(len(tools))]
			b.do(x.tool, x.value)
		default:
			role := []string{"", "operator", "supervisor", "viewer"}[r.IntN(4)]
			ctx := server.WithCaller(t.Context(), server.Caller{Role: role})
			req := promcp.CanDoRequest{Intent: intents[r.IntN(len(intents))], Scope: "local"}
			first, fresh, again := gateway.CanDoAndFresh(ctx, b.Gateway, req)
			asked++
			if again {
				reused++
			}
			compareAnswers(t, i, req, first, fresh, b.clk.Now())
		}
	}
	t.Logf("%d questions, %d answered again", asked, reused)
	if reused == 0 || reused == asked {
		t.Fatalf("%d of %d answers given again: the test exercises nothing", reused, asked)
	}
}

// compareAnswers fails t unless first equals fresh but for valid_until,
// which must be after now and not after fresh's.
func compareAnswers(t *testing.T, step int, req promcp.CanDoRequest, first, fresh promcp.CapabilityReport, now time.Time) {
	t.Helper()
	firstUntil, freshUntil := validUntils(&first), validUntils(&fresh)
	a, _ := json.Marshal(first)
	b, _ := json.Marshal(fresh)
	if string(a) != string(b) {
		t.Fatalf("step %d, %+v: the answer given differs from a fresh one:\ngiven %s\nfresh %s", step, req.Intent, a, b)
	}
	for i := range firstUntil {
		if firstUntil[i].After(freshUntil[i]) || !firstUntil[i].After(now) && freshUntil[i].After(now) {
			t.Fatalf("step %d, %+v: valid_until %d given %v, fresh %v, now %v", step, req.Intent, i, firstUntil[i], freshUntil[i], now)
		}
	}
}

// validUntils takes the valid_until instants out of rep.
func validUntils(rep *promcp.CapabilityReport) []time.Time {
	var out []time.Time
	for i := range rep.Candidates {
		out = append(out, rep.Candidates[i].ValidUntil)
		rep.Candidates[i].ValidUntil = time.Time{}
	}
	for i := range rep.Blocked {
		if u := rep.Blocked[i].ValidUntil; u != nil {
			out = append(out, *u)
			rep.Blocked[i].ValidUntil = nil
		}
	}
	return out
}
