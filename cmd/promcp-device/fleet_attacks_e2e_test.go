//go:build !nofleet

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/promcp/promcp-device/fleet/shared"
	"github.com/promcp/promcp-device/fleet/trust"
)

// The eight attacks of issue 22, run against the README's fleet (three
// `hub --fleet` members, two edge gateways and a thin-edge one, every
// link on TLS, credentials from `fleet init`) by the real binary built
// with -tags natsserver. The attacker is a small nats.go client holding
// gateway gw2's own credentials (its nkey seed and the fleet CA), which
// connects to hub1's client port as a thief does (over the edge's own
// leaf link the edge's leaf server would drop what the hub refuses,
// silently). Each attack is refused by NATS, with a line in hub1's log
// naming the identity (gw2) and the subject, or by a hub's or gateway's
// check; nothing is actuated and no shared record changes. Then gw2 is
// revoked and the thief's next connection is refused.
func TestFleetAttacksThroughTheBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the binary with -tags natsserver and runs a six-process fleet (~1-2 min)")
	}
	t.Parallel()
	f := &taggedFleet{bin: buildTagged(t), dir: t.TempDir(), start: time.Now(), state: true}
	f.writeFiles(t)
	// The vent is admin-only here: a routed call claiming admin is what
	// attack 1 tries.
	f.pol = f.write(t, "greenhouse.policy.yml", `version: 1
roles: [viewer, operator, supervisor, admin]
actions:
  do_set_fan_speed:
    shared: site_fans
    cooldown: 5m
  do_set_heater:
    shared: true
  do_set_vent:
    roles: [admin]
`)
	f.startAll(t)
	root := httpSession(t, f.fleetURL, mcp.LATEST_PROTOCOL_VERSION)
	f.canDo(t, root)
	x := &attack{f: f, t: t, hubURL: "nats://" + f.hubClient(t, 0)}
	x.thief = x.connect(t, "gw2")
	hub := x.connect(t, "hub1")
	js, err := jetstream.NewWithDomain(hub, "hub")
	if err != nil {
		t.Fatal(err)
	}
	x.lease, err = js.KeyValue(t.Context(), shared.LeaseBucket)
	if err != nil {
		t.Fatal(err)
	}
	x.js, x.hub = js, hub
	t.Run("1_routed_call_as_admin", x.routedAdmin)
	t.Run("2_purge_shared_cooldown", x.purgeCooldown)
	t.Run("3_state_denial_of_service", x.stateDoS)
	t.Run("3b_own_turn_on_shared_equipment", x.ownTurn)
	t.Run("4_intercept_routed_calls", x.intercept)
	t.Run("5_spoof_can_do", func(t *testing.T) { x.spoofCanDo(t, root) })
	t.Run("6_fake_gateway", func(t *testing.T) { x.fakeGateway(t, root) })
	t.Run("7_forged_audit", x.forgeAudit)
	t.Run("8_eavesdrop", func(t *testing.T) { x.eavesdrop(t, root) })
	t.Run("revoked_thief_refused", x.revoked)
	t.Logf("whole attack test %v", time.Since(f.start).Round(time.Millisecond))
}

// attack is the thief's side of the attack test: its connection with
// gw2's credentials, and a hub member's view of the records.
type attack struct {
	f      *taggedFleet
	t      *testing.T
	hubURL string
	thief  *nats.Conn
	hub    *nats.Conn
	js     jetstream.JetStream
	lease  jetstream.KeyValue
	mu     sync.Mutex
	errs   []string // the thief's asynchronous errors (NATS's refusals)
	// Where hub1's log and errs stood before the last attempt (mark).
	logMark, errMark int
}

// fansKey is the one cooldown record of the site's fans (shared: site_fans).
const fansKey = "cooldown.equipment-site_fans.do_set_fan_speed"

// hubClient is hub member i's client address, from its fleet file.
func (f *taggedFleet) hubClient(t *testing.T, i int) string {
	t.Helper()
	b, err := os.ReadFile(f.hubFiles[i])
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`listen: \{client: ([^,]+),`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("no client address in %s", f.hubFiles[i])
	}
	return string(m[1])
}

// connect connects to hub1 with node's own credentials from the fleet
// directory (its nkey seed, the fleet CA, its inbox prefix).
func (x *attack) connect(t *testing.T, node string) *nats.Conn {
	t.Helper()
	nc, err := x.dial(node)
	if err != nil {
		t.Fatalf("connecting as %s: %v", node, err)
	}
	t.Cleanup(nc.Close)
	return nc
}

func (x *attack) dial(node string) (*nats.Conn, error) {
	dir := filepath.Join(x.f.dir, "fleet", node)
	kp, err := trust.ReadSeed(filepath.Join(dir, node+".nk"))
	if err != nil {
		return nil, err
	}
	ca, err := trust.ReadCA(filepath.Join(dir, trust.CACertFile), time.Now())
	if err != nil {
		return nil, err
	}
	opts := append(trust.ClientOptions(node, kp, ca), nats.Name("attacker as "+node), nats.NoReconnect(),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			x.mu.Lock()
			x.errs = append(x.errs, err.Error())
			x.mu.Unlock()
		}))
	return nats.Connect(x.hubURL, opts...)
}

// mark notes where hub1's log and the thief's errors stand before an
// attempt: refusedByNATS looks at what came after.
func (x *attack) mark() {
	x.logMark = len(x.f.hubLogs[0]())
	x.mu.Lock()
	x.errMark = len(x.errs)
	x.mu.Unlock()
}

// publish sends data on subject as the thief (with a reply subject when
// reply is not ""), and waits until hub1 has processed it.
func (x *attack) publish(t *testing.T, subject, reply string, data any, hdr ...string) {
	t.Helper()
	x.mark()
	b, ok := data.([]byte)
	if !ok {
		b, _ = json.Marshal(data)
	}
	m := &nats.Msg{Subject: subject, Reply: reply, Data: b, Header: nats.Header{}}
	for i := 0; i+1 < len(hdr); i += 2 {
		m.Header.Set(hdr[i], hdr[i+1])
	}
	if err := x.thief.PublishMsg(m); err != nil {
		t.Fatalf("publish %s: %v", subject, err)
	}
	if err := x.thief.Flush(); err != nil {
		t.Fatalf("flush after %s: %v", subject, err)
	}
}

// refusedByNATS waits for hub1's log line refusing gw2 the subject (a
// publish or subscription violation, naming identity gw2 and the
// subject), and for NATS's refusal at the thief's connection, both after
// the last mark. A subject in the hub's JetStream domain is checked as
// the hub maps it ($JS.hub.API.STREAM.… as $JS.API.STREAM.…,
// $JS.hub.API.$KV.… as $KV.…).
func (x *attack) refusedByNATS(t *testing.T, kind, subject string) {
	t.Helper()
	want := subject
	if rest, ok := strings.CutPrefix(subject, "$JS.hub.API."); ok {
		want = "$JS.API." + rest
		if strings.HasPrefix(rest, "$KV.") {
			want = rest
		}
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if line := violation(x.f.hubLogs[0]()[x.logMark:], kind, "gw2", want); line != "" {
			x.mu.Lock()
			seen := slicesContainsFold(x.errs[x.errMark:], `"`+want+`"`)
			x.mu.Unlock()
			if seen {
				t.Logf("refused by NATS: %s", line)
				return
			}
		}
		if time.Now().After(deadline) {
			x.mu.Lock()
			errs := strings.Join(x.errs[x.errMark:], "\n")
			x.mu.Unlock()
			t.Fatalf("no %s violation of gw2 on %s in hub1's log, or no refusal at the client:\n%s\nclient errors:\n%s", kind, want, x.f.hubLogs[0]()[x.logMark:], errs)
		}
		select { // poll hub1's log
		case <-time.After(100 * time.Millisecond):
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		}
	}
}

// violation is the log line of a kind ("Publish", "Subscription")
// violation by identity on subject, "" when there is none.
func violation(logs, kind, identity, subject string) string {
	for line := range strings.SplitSeq(logs, "\n") {
		if strings.Contains(line, kind+" Violation") && strings.Contains(line, " identity="+identity+" ") &&
			(strings.Contains(line, " subject="+subject) || strings.Contains(line, ` subject="`+subject+`"`)) {
			return line
		}
	}
	return ""
}

func slicesContainsFold(ss []string, sub string) bool {
	for _, s := range ss {
		if strings.Contains(strings.ToLower(s), strings.ToLower(sub)) {
			return true
		}
	}
	return false
}

// leaseRecord reads key of fleet_lease as a hub member: its revision and
// value (revision 0 when absent).
func (x *attack) leaseRecord(t *testing.T, key string) (uint64, map[string]any) {
	t.Helper()
	e, err := x.lease.Get(t.Context(), key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return 0, nil
	}
	if err != nil {
		t.Fatalf("reading %s: %v", key, err)
	}
	var v map[string]any
	if err := json.Unmarshal(e.Value(), &v); err != nil {
		t.Fatal(err)
	}
	return e.Revision(), v
}

// ask sends a shared-state operation to the hubs as the thief, on gw2's
// own service subject (the only one NATS lets it use), and returns the
// hubs' answer.
func (x *attack) ask(t *testing.T, op string, body map[string]any) map[string]any {
	t.Helper()
	b, _ := json.Marshal(body)
	m, err := x.thief.Request(shared.ServiceSubject("gw2", op), b, 10*time.Second)
	if err != nil {
		t.Fatalf("%s as gw2: %v", op, err)
	}
	var rep map[string]any
	if err := json.Unmarshal(m.Data, &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

// 1. A routed call to gw1's admin-only do_set_vent claiming admin: on
// hub1's subject NATS refuses it; on the thief's own route the gateway
// caps the claimed role at what a gateway's route may carry (its
// --role, operator), and refuses. The vent does not move.
func (x *attack) routedAdmin(t *testing.T) {
	before, _ := x.f.own["gw1"].call("read_vent", nil)
	call := func(entry string) map[string]any {
		return map[string]any{"tool": "do_set_vent", "arguments": map[string]any{"value": before["value"] != true, "idempotency_key": "attack-1-" + entry},
			"caller": map[string]any{"name": "mallory", "role": "admin"}, "deadline": time.Now().Add(10 * time.Second).UTC()}
	}
	x.publish(t, "promcp.call.gw1.hub1", "_INBOX.gw2.gw1.a1", call("hub1"))
	x.refusedByNATS(t, "Publish", "promcp.call.gw1.hub1")

	sub, err := x.thief.SubscribeSync("_INBOX.gw2.gw1.a2")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	x.publish(t, "promcp.call.gw1.gw2", "_INBOX.gw2.gw1.a2", call("gw2"))
	m, err := sub.NextMsg(30 * time.Second)
	if err != nil {
		t.Fatalf("no answer from gw1 to the routed call through gw2: %v", err)
	}
	var res struct {
		StructuredContent map[string]any `json:"structuredContent"`
	}
	_ = json.Unmarshal(m.Data, &res)
	if len(m.Data) == 0 || res.StructuredContent["status"] == "success" || res.StructuredContent["permission"] == "allowed" {
		t.Fatalf("gw1 ran do_set_vent for a caller claiming admin through gw2: %s", m.Data)
	}
	t.Logf("refused by gw1's route check: permission %v: %v", res.StructuredContent["permission"], res.StructuredContent["reason"])
	if after, _ := x.f.own["gw1"].call("read_vent", nil); after["value"] != before["value"] {
		t.Fatalf("gw1's vent moved: %v → %v", before["value"], after["value"])
	}
}

// 2. gw1 starts the site fans' cooldown; the thief tries to purge or
// delete that record: NATS refuses each, the record stays, and gw2's own
// do_set_fan_speed is still held back by the cooldown.
func (x *attack) purgeCooldown(t *testing.T) {
	if r, _ := x.f.own["gw1"].call("do_set_fan_speed", map[string]any{"value": 40.0, "idempotency_key": "attack-2-fans"}); r["status"] != "success" {
		t.Fatalf("gw1's own do_set_fan_speed: %v", r)
	}
	rev, rec := x.leaseRecord(t, fansKey)
	if rev == 0 {
		t.Fatalf("no record %s after gw1's actuation", fansKey)
	}
	for _, s := range []string{"$JS.API.STREAM.PURGE.KV_fleet_lease", "$JS.hub.API.STREAM.PURGE.KV_fleet_lease"} {
		x.publish(t, s, "_INBOX.gw2.x.p", map[string]any{"filter": "$KV.fleet_lease." + fansKey})
		x.refusedByNATS(t, "Publish", s)
	}
	x.publish(t, "$KV.fleet_lease."+fansKey, "", []byte{}, "KV-Operation", "PURGE", "Nats-Rollup", "sub")
	x.refusedByNATS(t, "Publish", "$KV.fleet_lease."+fansKey)
	x.publish(t, "$JS.API.STREAM.MSG.DELETE.KV_fleet_lease", "_INBOX.gw2.x.d", map[string]any{"seq": rev})
	x.refusedByNATS(t, "Publish", "$JS.API.STREAM.MSG.DELETE.KV_fleet_lease")
	if rev2, rec2 := x.leaseRecord(t, fansKey); rev2 != rev || fmt.Sprint(rec2) != fmt.Sprint(rec) {
		t.Fatalf("%s changed: rev %d %v → rev %d %v", fansKey, rev, rec, rev2, rec2)
	}
	if r, _ := x.f.own["gw2"].call("do_set_fan_speed", map[string]any{"value": 20.0, "idempotency_key": "attack-2-gw2"}); r["permission"] != "cooldown_active" {
		t.Fatalf("gw2's do_set_fan_speed inside gw1's cooldown: %v; want cooldown_active", r)
	}
}

// 3. A future "last", a fake pending record of a gateway that does not
// exist, the lease bucket's stream deleted: NATS refuses the writes and
// the deletion; through the hubs' service (the only write path) the
// thief cannot touch gw1's own heater record. Shared actions still run.
func (x *attack) stateDoS(t *testing.T) {
	rev, _ := x.leaseRecord(t, fansKey)
	x.publish(t, "$KV.fleet_lease."+fansKey, "", map[string]any{"gw": "gw2", "req": "x", "state": "released", "last": "2099-01-01T00:00:00Z"})
	x.refusedByNATS(t, "Publish", "$KV.fleet_lease."+fansKey)
	x.publish(t, "$JS.hub.API.$KV.fleet_lease.cooldown.gw1.do_set_heater", "", map[string]any{"gw": "gw9", "req": "x", "state": "pending"})
	x.refusedByNATS(t, "Publish", "$JS.hub.API.$KV.fleet_lease.cooldown.gw1.do_set_heater")
	for _, s := range []string{"$JS.API.STREAM.DELETE.KV_fleet_lease", "$JS.hub.API.STREAM.DELETE.KV_fleet_lease"} {
		x.publish(t, s, "_INBOX.gw2.x.del", nil)
		x.refusedByNATS(t, "Publish", s)
	}
	if rep := x.ask(t, "reserve", map[string]any{"key": "cooldown.gw1.do_set_heater", "rev": 0, "req": "fake"}); rep["refused"] != true {
		t.Fatalf("the hubs let gw2 reserve gw1's own heater record: %v", rep)
	} else {
		t.Logf("refused by the hubs' shared-state check: %v", rep["err"])
	}
	if _, err := x.js.Stream(t.Context(), "KV_"+shared.LeaseBucket); err != nil {
		t.Fatalf("the lease stream: %v", err)
	}
	if rev2, _ := x.leaseRecord(t, fansKey); rev2 != rev {
		t.Fatalf("%s rewritten (rev %d → %d)", fansKey, rev, rev2)
	}
	// (Heater on: off is its safe value, which passes without a record.)
	if r, _ := x.f.own["gw1"].call("do_set_heater", map[string]any{"value": true, "idempotency_key": "attack-3-heater"}); r["status"] != "success" {
		t.Fatalf("gw1's shared do_set_heater(true) after the attacks: %v", r)
	}
	if rev, _ := x.leaseRecord(t, "cooldown.gw1.do_set_heater"); rev == 0 {
		t.Fatal("gw1's heater record missing after its shared action")
	}
}

// 3b. On the equipment it really shares (the site's fans) the thief can
// take its own turn through the hubs' service, but not name a time (the
// hubs take theirs), not hold the reservation by reserving again within
// its lease, and the earlier actuation it overwrote stays counted.
func (x *attack) ownTurn(t *testing.T) {
	rev, before := x.leaseRecord(t, fansKey)
	rep := x.ask(t, "reserve", map[string]any{"key": fansKey, "rev": rev, "req": "thief-1", "last": "2099-01-01T00:00:00Z"})
	if rep["err"] != nil {
		t.Fatalf("gw2's own turn on the site's fans: %v", rep)
	}
	rev2, rec := x.leaseRecord(t, fansKey)
	last, _ := time.Parse(time.RFC3339Nano, fmt.Sprint(rec["last"]))
	if rec["gw"] != "gw2" || rec["state"] != "pending" || last.Year() == 2099 || last.After(time.Now().Add(time.Minute)) {
		t.Fatalf("gw2's reservation = %v; want gw2's pending record with the hub's last, not the writer's", rec)
	}
	if rec["last"] == nil || before["gw"] != "gw1" {
		t.Fatalf("gw1's actuation not carried in the record: before %v, after %v", before, rec)
	}
	// Not written: answered as a lost race (so that a second claim of
	// gw2's waits for its first), and the record stays thief-1's.
	if rep := x.ask(t, "reserve", map[string]any{"key": fansKey, "rev": rev2, "req": "thief-2"}); rep["err"] == nil {
		t.Fatalf("gw2 reserving again over its own pending reservation within the lease: %v; want not written", rep)
	} else {
		t.Logf("not written, by the hubs' lease check: %v", rep["err"])
	}
	if rev3, rec := x.leaseRecord(t, fansKey); rev3 != rev2 || rec["req"] != "thief-1" {
		t.Fatalf("gw2's pending reservation after a reservation over it: %v at %d; want thief-1 unchanged at %d", rec, rev3, rev2)
	}
	if rep := x.ask(t, "settle", map[string]any{"key": fansKey, "rev": rev2, "req": "thief-1", "state": "released"}); rep["err"] != nil {
		t.Fatalf("gw2 settling its own reservation: %v", rep)
	}
	if _, rec := x.leaseRecord(t, fansKey); fmt.Sprint(rec["last"]) == "" || rec["state"] != "released" {
		t.Fatalf("after gw2 released its turn: %v", rec)
	}
	if r, _ := x.f.own["gw3"].call("do_set_fan_speed", map[string]any{"value": 20.0, "idempotency_key": "attack-3b-gw3"}); r["permission"] != "cooldown_active" {
		t.Fatalf("gw3's do_set_fan_speed after gw2's released turn: %v; want cooldown_active (gw1's actuation still counts)", r)
	}
}

// 4. A queue subscription on gw3's call subject: NATS refuses it, and
// routed calls keep reaching gw3.
func (x *attack) intercept(t *testing.T) {
	x.mark()
	sub, err := x.thief.QueueSubscribeSync("promcp.call.gw3.*", "steal")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := x.thief.Flush(); err != nil {
		t.Fatal(err)
	}
	x.refusedByNATS(t, "Subscription", "promcp.call.gw3.*")
	g3 := groupWith(t, strings.TrimSuffix(x.f.fleetURL, "/mcp"), "gw3", "read_gw3_temperature_zone1")
	for range 5 {
		if body, isErr := g3.call("read_gw3_temperature_zone1", nil); isErr || body["quality"] == "error" {
			t.Fatalf("routed read to gw3 = %v", body)
		}
	}
	if n, _, _ := sub.Pending(); n != 0 {
		t.Fatalf("the thief received %d of gw3's calls", n)
	}
}

// 5. Answering can_do as gw1: NATS refuses the subscription to gw1's
// can_do subject and a reply on the subject of gw1's answers; the
// fleet's report has gw1's real answer and nothing the thief made up.
func (x *attack) spoofCanDo(t *testing.T, root *session) {
	x.mark()
	sub, err := x.thief.SubscribeSync("promcp.cando.gw1.*")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := x.thief.Flush(); err != nil {
		t.Fatal(err)
	}
	x.refusedByNATS(t, "Subscription", "promcp.cando.gw1.*")
	fake := map[string]any{"gateway_id": "gw1", "report": map[string]any{"candidates": []any{map[string]any{"capability": "do_unlock_door",
		"source": "door/lock", "permission": "allowed", "confidence": 1}}}}
	x.publish(t, "_INBOX.hub1.gw1.spoof.0", "", fake)
	x.refusedByNATS(t, "Publish", "_INBOX.hub1.gw1.spoof.0")
	rep := waitCanDo(t, root, heaterOff, "gw1's real can_do answer", func(r map[string]any) bool {
		return candidateSources(r)["gw1/heater_relay"]
	})
	if b, _ := json.Marshal(rep); strings.Contains(string(b), "unlock_door") {
		t.Fatalf("the fleet's can_do offers the thief's candidate: %s", b)
	}
}

// 6. Registering a fake gateway gw9: NATS refuses the registry and
// heartbeat writes; the registry has no gw9 and the fleet counts three.
func (x *attack) fakeGateway(t *testing.T, root *session) {
	entry := map[string]any{"gateway_id": "gw9", "zone": "north", "tools": []any{map[string]any{"name": "do_gw9_open_gate"}}}
	for _, s := range []string{"$KV.fleet_registry.gw.gw9", "$JS.hub.API.$KV.fleet_registry.gw.gw9", "$KV.fleet_alive.gw.gw9"} {
		x.publish(t, s, "", entry)
		x.refusedByNATS(t, "Publish", s)
	}
	reg, err := x.js.KeyValue(t.Context(), "fleet_registry")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Get(t.Context(), "gw.gw9"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("registry key gw.gw9: %v; want not found", err)
	}
	rep, _ := root.call("can_do", heaterOff)
	if m, _ := rep["metadata"].(map[string]any); m["mesh_size_estimate"] != 3.0 {
		t.Fatalf("fleet size after the fake registration: %v", m)
	}
}

// 7. A record forged on gw1's audit subjects: NATS refuses both the plain
// subject and the hub's source delivery subject; the fleet audit has
// gw1's real records and no forged one.
func (x *attack) forgeAudit(t *testing.T) {
	rec := map[string]any{"seq": 999, "time": time.Now().UTC(), "event": "result", "tool": "do_unlock_door", "caller": "sue", "role": "supervisor", "status": "ok"}
	for _, s := range []string{"promcp.audit.gw1", "promcp.audit.gw1.src.S.forged"} {
		x.publish(t, s, "", rec, "Nats-Msg-Id", "gw1/forged")
		x.refusedByNATS(t, "Publish", s)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		recs, err := shared.TailFleet(t.Context(), x.hub, "", 0)
		var gw1 int
		for _, r := range recs {
			if r.Record.Caller == "sue" || r.Record.Tool == "do_unlock_door" {
				t.Fatalf("forged record in the fleet audit: %+v", r)
			}
			if r.Gateway == "gw1" {
				gw1++
			}
		}
		if err == nil && gw1 > 0 {
			t.Logf("fleet audit: %d records, %d of gw1's, none forged", len(recs), gw1)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("gw1's records never reached the fleet audit: %d records, err %v", len(recs), err)
		}
		select { // poll: gateways forward their audit in the background
		case <-time.After(250 * time.Millisecond):
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		}
	}
}

// 8. Eavesdropping: NATS refuses subscriptions to promcp.> and to every
// subject, and the creation of a JetStream consumer; while the fleet
// routes calls and answers can_do the thief receives nothing.
func (x *attack) eavesdrop(t *testing.T, root *session) {
	var subs []*nats.Subscription
	for _, s := range []string{"promcp.>", ">", "_INBOX.>", "promcp.audit.>"} {
		x.mark()
		sub, err := x.thief.SubscribeSync(s)
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Unsubscribe()
		if err := x.thief.Flush(); err != nil {
			t.Fatal(err)
		}
		x.refusedByNATS(t, "Subscription", s)
		subs = append(subs, sub)
	}
	// Nor may it have JetStream deliver for it: no consumer (its deliver
	// subject would go unchecked), here one that would replay its own
	// registry entry on gw1's call subject.
	spy := "$JS.hub.API.CONSUMER.CREATE.KV_fleet_registry.spy.$KV.fleet_registry.gw.gw2"
	x.publish(t, spy, "_INBOX.gw2.x.c", map[string]any{"stream_name": "KV_fleet_registry",
		"config": map[string]any{"name": "spy", "deliver_subject": "promcp.call.gw1.hub1", "filter_subject": "$KV.fleet_registry.gw.gw2"}})
	x.refusedByNATS(t, "Publish", spy)
	g1 := groupWith(t, strings.TrimSuffix(x.f.fleetURL, "/mcp"), "gw1", "read_gw1_temperature_zone1")
	if body, isErr := g1.call("read_gw1_temperature_zone1", nil); isErr || body["quality"] == "error" {
		t.Fatalf("routed read to gw1 = %v", body)
	}
	root.call("can_do", heaterOff)
	if err := x.thief.Flush(); err != nil {
		t.Fatal(err)
	}
	for _, sub := range subs {
		if n, _, _ := sub.Pending(); n != 0 {
			m, _ := sub.NextMsg(0)
			t.Fatalf("the thief's subscription %s received %d messages (first on %s)", sub.Subject, n, m.Subject)
		}
	}
}

// revoked: gw2 revoked by the README's command; the thief's next
// connection with gw2's key is refused, and a hub logs the refusal with
// the identity.
func (x *attack) revoked(t *testing.T) {
	if out, err := exec.Command(x.f.bin, "fleet", "revoke", filepath.Join(x.f.dir, "fleet"), "gw2").CombinedOutput(); err != nil {
		t.Fatalf("fleet revoke: %v\n%s", err, out)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		nc, err := x.dial("gw2")
		if err != nil {
			if !strings.Contains(strings.ToLower(err.Error()), "authorization") {
				t.Fatalf("the revoked gw2's connection failed otherwise: %v", err)
			}
			t.Logf("the revoked gw2's connection refused: %v", err)
			break
		}
		nc.Close()
		if time.Now().After(deadline) {
			t.Fatal("the revoked gw2 still connects after 30 s")
		}
		select { // the hubs reload the identities file on their own time
		case <-time.After(200 * time.Millisecond):
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		}
	}
	logs := x.f.hubLogs[0]()
	for line := range strings.SplitSeq(logs, "\n") {
		if strings.Contains(line, "authentication error") && strings.Contains(line, "identity=gw2") && strings.Contains(line, "revoked=true") {
			t.Logf("hub1: %s", line)
			return
		}
	}
	t.Fatalf("hub1 did not log the refusal of the revoked gw2:\n%s", logs)
}
