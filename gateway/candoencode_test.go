package gateway_test

import (
	"encoding/json"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/promcp/promcp-device/approval"
	"github.com/promcp/promcp-device/gateway"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/promcp"
	"github.com/promcp/promcp-device/server"
	"github.com/promcp/promcp-device/simtest"
)

// encodedAsker asks can_do through MCP on b, where an answer given again
// is sent from its kept encoding (server/candomemo.go), and checks every
// answer against what the gateway decides afresh at that moment.
type encodedAsker struct {
	t      *testing.T
	b      *bench
	c      *client.Client
	seenID map[string]bool
}

// ask asks intent; it returns the answer without its per-call parts
// (query_id, metadata.timestamp and total_latency_ms), as JSON, and
// whether it was an answer given again. It fails the test unless the
// per-call parts are this call's (a new query_id, the clock's time, the
// claim naming it, the stamp's body digest of this body) and the answer
// is what the gateway decides afresh now.
func (a *encodedAsker) ask(intent promcp.Intent) (string, bool) {
	a.t.Helper()
	hits := gateway.CanDoHits(a.b.Gateway)
	res, err := a.c.CallTool(a.t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "can_do",
		Arguments: map[string]any{"intent": intent}}})
	if err != nil || res.IsError {
		a.t.Fatalf("can_do(%+v): %v %v", intent, err, res)
	}
	again := gateway.CanDoHits(a.b.Gateway) > hits
	text := res.Content[0].(mcp.TextContent).Text
	var body map[string]any
	if err := json.Unmarshal([]byte(text), &body); err != nil {
		a.t.Fatal(err)
	}
	id, _ := body["query_id"].(string)
	if id == "" || a.seenID[id] {
		a.t.Fatalf("can_do(%+v): query_id %q, want a new one per call", intent, id)
	}
	a.seenID[id] = true
	meta := body["metadata"].(map[string]any)
	ts := a.b.clk.Now().UTC().Format(time.RFC3339Nano)
	if meta["timestamp"] != ts {
		a.t.Fatalf("can_do(%+v): metadata.timestamp %v, want the clock's %s (given again: %t)", intent, meta["timestamp"], ts, again)
	}
	var stamp struct {
		Body    string `json:"body"`
		Toulmin struct {
			Claim string `json:"claim"`
		} `json:"_toulmin"`
	}
	raw, _ := json.Marshal(res.Meta.AdditionalFields[server.ProvenanceKey])
	if err := json.Unmarshal(raw, &stamp); err != nil {
		a.t.Fatal(err)
	}
	if stamp.Body != promcp.BodyDigest([]byte(text)) || !strings.HasPrefix(stamp.Toulmin.Claim, "can_do at "+ts+":") {
		a.t.Fatalf("can_do(%+v): stamp body %s claim %q, want this body's digest %s and the time %s", intent, stamp.Body, stamp.Toulmin.Claim, promcp.BodyDigest([]byte(text)), ts)
	}
	delete(body, "query_id")
	delete(meta, "timestamp")
	delete(meta, "total_latency_ms")
	got, _ := json.Marshal(body)

	fresh := gateway.CanDoFresh(a.t.Context(), a.b.Gateway, promcp.CanDoRequest{Intent: intent, Scope: "local"})
	fresh.Normalize()
	raw, _ = json.Marshal(fresh)
	var fm map[string]any
	_ = json.Unmarshal(raw, &fm)
	delete(fm, "query_id")
	delete(fm["metadata"].(map[string]any), "timestamp")
	delete(fm["metadata"].(map[string]any), "total_latency_ms")
	want, _ := json.Marshal(fm)
	if !again && string(got) != string(want) {
		a.t.Fatalf("can_do(%+v), computed now:\n%s\nfresh:\n%s", intent, got, want)
	}
	if again && stripValidUntil(got) != stripValidUntil(want) {
		// A reused answer keeps the first answer's valid_until (earlier
		// than a fresh one's); every other field is the fresh answer's.
		a.t.Fatalf("can_do(%+v), given again from its kept encoding after a change:\n%s\nfresh:\n%s", intent, got, want)
	}
	return string(got), again
}

// stripValidUntil drops every valid_until from the answer's JSON.
func stripValidUntil(b []byte) string {
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	for _, list := range []string{"candidates", "blocked"} {
		for _, e := range m[list].([]any) {
			delete(e.(map[string]any), "valid_until")
		}
	}
	out, _ := json.Marshal(m)
	return string(out)
}

// twice asks intent until it is given again (from its kept encoding; the
// first answer after the gateway read anew is not kept, as the reading
// counts as a change) and returns it, equal to the answer before it but
// for the per-call parts.
func (a *encodedAsker) twice(intent promcp.Intent) string {
	a.t.Helper()
	prev, _ := a.ask(intent)
	for range 3 {
		next, again := a.ask(intent)
		if again {
			if next != prev {
				a.t.Fatalf("can_do(%+v) given again:\n%s\nbefore:\n%s", intent, next, prev)
			}
			return next
		}
		prev = next
	}
	a.t.Fatalf("can_do(%+v) asked four times at once was never given again: the test exercises nothing", intent)
	return ""
}

// changed asks intent after a change of its inputs: the answer must be
// computed anew (not given again), differ from before, and contain want.
func (a *encodedAsker) changed(what string, intent promcp.Intent, before, want string) {
	a.t.Helper()
	after, again := a.ask(intent)
	if again || after == before || !strings.Contains(after, want) {
		a.t.Errorf("after %s: can_do(%+v) given again %t, answer\n%s\nbefore:\n%s\nwant it to hold %s", what, intent, again, after, before, want)
	}
}

// TestCanDoEncodedAnswerEndsWithEachChange: an answer sent from its kept
// encoding is never sent after any input it depends on changed: the policy
// state (an actuation counted against a rate limit), a cooldown beginning
// and ending, an approved actuation (its new value), and a reading's
// quality; after each, can_do answers afresh, as the gateway decides now.
func TestCanDoEncodedAnswerEndsWithEachChange(t *testing.T) {
	signer := approval.NewRandomSigner()
	open := func(t *testing.T) (*bench, *encodedAsker) {
		b := newPolicyBenchWith(t, signer)
		return b, &encodedAsker{t: t, b: b, c: b.c, seenID: map[string]bool{}}
	}
	t.Run("policy state", func(t *testing.T) {
		b, a := open(t)
		fan := promcp.Intent{Action: "do_set_fan", Value: true}
		before := a.twice(fan)
		b.do("do_set_fan", true)
		a.changed("an actuation (the rate limit's count)", fan, before, `"current_window_remaining":1`)
	})
	t.Run("cooldown", func(t *testing.T) {
		b, a := open(t)
		pump := promcp.Intent{Action: "do_set_pump", Value: true}
		before := a.twice(pump)
		b.do("do_set_pump", true)
		a.changed("do_set_pump (a cooldown begins)", pump, before, `"permission":"cooldown_active"`)
		before, _ = a.ask(pump)
		b.clk.Advance(5*time.Minute + time.Second)
		a.changed("the cooldown's end", pump, before, `"permission":"allowed"`)
	})
	t.Run("approval", func(t *testing.T) {
		b, a := open(t)
		light := promcp.Intent{Action: "do_set_light_level", Value: 95.0}
		before := a.twice(light)
		tok := signer.Issue(approval.Grant{Tool: "do_set_light_level", Value: approval.Canonical(95), Key: "k1", Expires: b.clk.Now().Add(10 * time.Minute)})
		if r := b.body("do_set_light_level", map[string]any{"value": 95.0, "idempotency_key": "k1", "approval": tok}); r["status"] != "success" {
			t.Fatalf("approved do_set_light_level: %v", r)
		}
		a.changed("an approved actuation", light, before, `"value":95`)
	})
}

// TestCanDoEncodedAnswerEndsWithQuality: an answer sent from its kept
// encoding is not sent once a reading it was decided on changes quality
// (the sensor turns implausible, read anew within its TTL).
func TestCanDoEncodedAnswerEndsWithQuality(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBench(t, simtest.Manifest(t, faultBench))
		a := &encodedAsker{t: t, b: b, c: b.c, seenID: map[string]bool{}}
		pump := promcp.Intent{Action: "do_set_pump", Value: true}
		before := a.twice(pump)
		if err := b.w.Inject("climate", manifests.Fault{Kind: manifests.FaultImplausible}); err != nil {
			t.Fatal(err)
		}
		b.read("read_temperature", map[string]any{"max_age_ms": 0})
		a.changed("a reading turned degraded", pump, before, `"quality":"degraded"`)
		b.w.Clear("climate")
		b.read("read_temperature", map[string]any{"max_age_ms": 0})
	})
}
