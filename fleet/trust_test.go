package fleet_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/promcp/promcp-device/fleet"
	"github.com/promcp/promcp-device/fleet/natsembed"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/promcp"
	"github.com/promcp/promcp-device/server"
)

// rogue is a client of the hub that sends what a stolen gateway
// credential could send: it holds node's own nkey and the fleet CA.
func rogue(t *testing.T, h *testHub, node string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(h.servers[0].ClientURL(), natsembed.ClientOptions(node, nodeTrust(t, h.dir, node))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// routedRequest sends a routed call body on subj and decodes the
// gateway's result.
func routedRequest(t *testing.T, nc *nats.Conn, subj string, body map[string]any) (*mcp.CallToolResult, *nats.Msg) {
	t.Helper()
	b, _ := json.Marshal(body)
	// The reply subject names the gateway asked (promcp.call.<gw>.<entry>
	// → _INBOX.<entry>.<gw>.…): the only inbox it may answer on.
	parts := strings.Split(subj, ".")
	inbox := fleet.ReplyPrefix(parts[3], parts[2]) + ".rogue"
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := nc.PublishRequest(subj, inbox, b); err != nil {
		t.Fatal(err)
	}
	msg, err := sub.NextMsg(10 * time.Second)
	if err != nil {
		t.Fatalf("request on %s: %v", subj, err)
	}
	var res mcp.CallToolResult
	if msg.Header.Get("Nats-Service-Error-Code") == "" {
		if err := json.Unmarshal(msg.Data, &res); err != nil {
			t.Fatalf("result on %s: %s: %v", subj, msg.Data, err)
		}
	}
	return &res, msg
}

// Attack 1: a routed call that claims admin acts with what the gateway's
// route policy grants the node it came through (taken from the subject,
// which NATS binds to the sender), and the audit names the route.
func TestFleetTrustRouteCapsRole(t *testing.T) {
	h := startHub(t, false)
	gw1 := startGateway(t, "gw1", "north", h.leafURLs[0], false, func(c *fleet.MemberConfig) {
		c.Routes = map[string]string{"hub1": server.RoleOperator}
		c.RouteRole = server.RoleViewer
	})
	v := watchAll(t, h.nc, "hub1", manifests.RoleHub, 1, nil)

	// Through gw2 (a gateway's route: viewer here), claiming admin.
	rc := rogue(t, h, "gw2")
	res, _ := routedRequest(t, rc, fleet.CallSubject("gw1", "gw2"), map[string]any{"tool": "do_set_pump",
		"arguments": map[string]any{"value": true, "idempotency_key": "mallory-1"},
		"caller":    map[string]any{"name": "mallory", "role": "admin"}, "deadline": time.Now().Add(10 * time.Second)})
	var do promcp.DoResult
	b, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(b, &do)
	if do.Status == promcp.StatusSuccess || do.Permission != promcp.PermissionInsufficient {
		t.Fatalf("admin claimed through gw2's viewer route = %+v, want refused permission_insufficient", do)
	}
	// Through hub1 (capped at operator), claiming admin: runs as operator.
	ctx := server.WithCaller(t.Context(), server.Caller{Name: "sue", Role: server.RoleAdmin})
	if _, err := v.Call(ctx, "gw1", "do_set_pump", json.RawMessage(`{"value":true,"idempotency_key":"sue-1"}`), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	want := []server.Caller{{Name: "mallory", Role: server.RoleViewer, Via: "gw2"}, {Name: "sue", Role: server.RoleOperator, Via: "hub1"}}
	if got := gw1.local.Callers(); !slices.Equal(got, want) {
		t.Fatalf("gw1 ran the calls as %+v, want %+v", got, want)
	}
	var routes []string
	for _, r := range gw1.audit.Records() {
		routes = append(routes, r.Event+" "+r.Caller+" ("+r.Role+") via "+r.Via)
	}
	for _, w := range []string{"mallory (viewer) via gw2", "sue (operator) via hub1"} {
		if !slices.ContainsFunc(routes, func(s string) bool { return strings.HasSuffix(s, w) }) {
			t.Errorf("gw1's audit %q has no record %q", routes, w)
		}
	}
}

// Attack 4 and 8, as far as the protocol goes: the old shared subjects
// carry nothing any more. Routed calls and can_do go to the owning
// gateway's own subjects (promcp.call.<gw>.<entry>,
// promcp.cando.<gw>.<entry>), which NATS lets only that gateway
// subscribe to.
func TestFleetTrustNoBroadcastSubjects(t *testing.T) {
	h, _, v := fleetOf(t, "hub1", "north", "south")
	rc := rogue(t, h, "gw2")
	ch := make(chan *nats.Msg, 64)
	for _, subj := range []string{"promcp.gw1.call", "promcp.gw2.call", "promcp.cando"} {
		sub, err := rc.ChanSubscribe(subj, ch)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sub.Unsubscribe() })
	}
	if err := rc.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Call(t.Context(), "gw1", "read_temperature", nil, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	rep := v.CanDo(t.Context(), promcp.CanDoRequest{Intent: promcp.Intent{Action: "set", Target: "pump"}}, "")
	if rep.Metadata.MeshMetadata.ResponsesReceived != 2 {
		t.Fatalf("can_do reached %d gateways, want 2", rep.Metadata.MeshMetadata.ResponsesReceived)
	}
	// Every message that crossed the hub before the flush has been
	// delivered to the rogue's subscriptions by now.
	if err := rc.Flush(); err != nil {
		t.Fatal(err)
	}
	if n := len(ch); n != 0 {
		m := <-ch
		t.Fatalf("a subscriber on the old subjects received %d messages, the first on %s", n, m.Subject)
	}
}

// Attack 5: an answer to gw2's can_do request that says it is gw1 is gw2's
// answer: the coordinator keys answers by the request it sent, so gw1's
// own answer is kept and the spoofed candidates carry gw2's name.
func TestFleetTrustCanDoSpoof(t *testing.T) {
	h, _, v := fleetOf(t, "hub1", "north", "south")
	rc := rogue(t, h, "gw2")
	spoof, _ := json.Marshal(map[string]any{"gateway_id": "gw1", "report": promcp.CapabilityReport{QueryID: "x",
		Candidates: []promcp.Candidate{{Capability: "do_unlock_door", Source: "gw1/door", Permission: promcp.Allowed, Confidence: 1}}}})
	// The rogue answers gw2's requests at once (it stands in for gw2,
	// whose own answer comes later and is then the duplicate).
	sub, err := rc.Subscribe(fleet.CanDoSubject("gw2", "*"), func(m *nats.Msg) { _ = m.Respond(spoof) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Unsubscribe() })
	if err := rc.Flush(); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		rep := v.CanDo(t.Context(), promcp.CanDoRequest{Intent: promcp.Intent{Action: "set", Target: "pump"}}, "")
		var gw1 []string
		for _, c := range rep.Candidates {
			if c.DeviceID == "gw1" {
				gw1 = append(gw1, c.Capability)
			}
			if strings.Contains(c.Capability, "unlock_door") && c.DeviceID != "gw2" {
				t.Fatalf("the spoofed candidate is attributed to %s: %+v", c.DeviceID, c)
			}
		}
		if !slices.Contains(gw1, "do_gw1_set_pump") {
			t.Fatalf("gw1's own answer was dropped: its candidates %v (report %+v)", gw1, rep.Candidates)
		}
	}
}

// The deadline: a gateway frozen after it received a routed do_* (here,
// held before it checks the deadline) and resumed after the entry node
// gave up drops the call unrun; the entry node reports the outcome
// unknown without waiting for a late answer.
func TestFleetTrustStaleCommandDropped(t *testing.T) {
	h := startHub(t, false)
	gw1 := startGateway(t, "gw1", "north", h.leafURLs[0], false)
	v := watchAll(t, h.nc, "hub1", manifests.RoleHub, 1, nil)
	frozen, resume := make(chan struct{}), make(chan struct{})
	fleet.SetPause(gw1.member, func() {
		select {
		case frozen <- struct{}{}:
			<-resume
		default:
		}
	})
	errc := make(chan error, 1)
	go func() {
		_, err := v.Call(server.WithCaller(t.Context(), server.Caller{Name: "sue", Role: server.RoleOperator}),
			"gw1", "do_set_pump", json.RawMessage(`{"value":true,"idempotency_key":"late-1"}`), 500*time.Millisecond)
		errc <- err
	}()
	<-frozen
	err := <-errc // the entry node's deadline passed while gw1 was frozen
	if err == nil {
		t.Fatal("the call answered while the gateway was frozen")
	}
	close(resume)
	eventually(t, 2*time.Minute, "gw1 drops the stale call", func() bool { return gw1.member.Stale() == 1 })
	for _, c := range gw1.local.Callers() {
		if c.Name == "sue" {
			t.Fatalf("gw1 ran the stale call: %+v", gw1.local.Callers())
		}
	}
	for _, r := range gw1.audit.Records() {
		if r.Key == "late-1" {
			t.Fatalf("gw1 audited the stale call: %+v", r)
		}
	}
	// gw1 still runs calls in time.
	fleet.SetPause(gw1.member, func() {})
	if _, err := v.Call(t.Context(), "gw1", "read_temperature", nil, 10*time.Second); err != nil {
		t.Fatalf("a call in time after the stale one: %v", err)
	}
}

// The deadline, frozen later: a gateway held after its deadline check,
// on its way into its own server (a paused local), does not run the call
// either: the call's context ends at the deadline.
func TestFleetTrustStaleCommandInLocal(t *testing.T) {
	h := startHub(t, false)
	gw1 := startGateway(t, "gw1", "north", h.leafURLs[0], false)
	v := watchAll(t, h.nc, "hub1", manifests.RoleHub, 1, nil)
	release := gw1.local.Hold("do_set_pump")
	defer release()
	_, err := v.Call(server.WithCaller(t.Context(), server.Caller{Name: "sue", Role: server.RoleOperator}), "gw1", "do_set_pump",
		json.RawMessage(`{"value":true,"idempotency_key":"late-2"}`), 500*time.Millisecond)
	if err == nil {
		t.Fatal("the call answered while the gateway was held")
	}
	release()
	eventually(t, 2*time.Minute, "gw1's held call returns", func() bool { return gw1.local.done.Load() == 1 })
	var read promcp.ReadResult
	localCall(t, gw1, "read_pump", nil, &read)
	if read.Value == true {
		t.Fatalf("gw1 set the pump after the deadline: %+v", read)
	}
	for _, r := range gw1.audit.Records() {
		if r.Key == "late-2" && r.Event != "refused" {
			t.Fatalf("gw1 ran the stale call: %+v", r)
		}
	}
}

// Attack 6, the protocol's half: a registry entry whose body names
// another gateway than its key is ignored (and logged); NATS refuses the
// key itself to any node but its own (fleetid).
func TestFleetTrustRegistryEntryNamesItsKey(t *testing.T) {
	h, _, v := fleetOf(t, "hub1", "north")
	js, err := jetstream.NewWithDomain(h.nc, fleet.HubDomain)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := js.KeyValue(t.Context(), fleet.RegistryBucket)
	if err != nil {
		t.Fatal(err)
	}
	alive, err := js.KeyValue(t.Context(), fleet.AliveBucket)
	if err != nil {
		t.Fatal(err)
	}
	fake, _ := json.Marshal(fleet.Info{GatewayID: "gw1", Profile: "full", ManifestHash: "fake",
		Tools: []mcp.Tool{mcp.NewTool("do_open_gate")}})
	if _, err := reg.Put(t.Context(), "gw.gw9", fake); err != nil {
		t.Fatal(err)
	}
	if _, err := alive.Put(t.Context(), "gw.gw9", []byte("fake")); err != nil {
		t.Fatal(err)
	}
	// A later real change shows the view has read past the fake entry.
	marker, _ := json.Marshal(fleet.Info{GatewayID: "gw8", Profile: "full", ManifestHash: "m"})
	if _, err := reg.Put(t.Context(), "gw.gw8", marker); err != nil {
		t.Fatal(err)
	}
	if _, err := alive.Put(t.Context(), "gw.gw8", []byte("m")); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "the view reads gw8", func() bool { _, ok := v.Gateway("gw8"); return ok })
	if _, ok := v.Gateway("gw9"); ok {
		t.Fatal("the view took gw9's key with gw1's entry")
	}
	if in, _ := v.Gateway("gw1"); in.ManifestHash == "fake" {
		t.Fatal("the fake entry replaced gw1's")
	}
}

// A ping answer counts for the gateway that was asked: answering the
// micro service's ping as a registered gateway that is down (gw7) does
// not make it alive, nor raise the peer count a quorum.min_peers is held
// against.
func TestFleetTrustAliveByRequest(t *testing.T) {
	h, _, v := fleetOf(t, "hub1", "north")
	js, err := jetstream.NewWithDomain(h.nc, fleet.HubDomain)
	if err != nil {
		t.Fatal(err)
	}
	for bucket, val := range map[string]any{fleet.RegistryBucket: fleet.Info{GatewayID: "gw7", Profile: "full", ManifestHash: "h7"}, fleet.AliveBucket: "h7"} {
		kv, err := js.KeyValue(t.Context(), bucket)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(val)
		if _, err := kv.Put(t.Context(), "gw.gw7", b); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 2*time.Minute, "gw7 registered", func() bool { _, ok := v.Gateway("gw7"); return ok })
	rc := rogue(t, h, "gw2")
	pong, _ := json.Marshal(map[string]any{"name": fleet.ServiceName, "id": "x", "version": fleet.ServiceVersion,
		"metadata": map[string]string{"gateway_id": "gw7"}, "type": "io.nats.micro.v1.ping_response"})
	sub, err := rc.Subscribe("$SRV.PING.>", func(m *nats.Msg) { _ = m.Respond(pong) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Unsubscribe() })
	if err := rc.Flush(); err != nil {
		t.Fatal(err)
	}
	alive := v.Alive(t.Context(), testBudget)
	if !alive["gw1"] || alive["gw7"] {
		t.Fatalf("alive = %v, want gw1 only", alive)
	}
	if n := v.PeerCount(t.Context()); n != 1 {
		t.Fatalf("peer count = %d, want 1", n)
	}
}

// A gateway may create no JetStream consumer: NATS does not check a push
// consumer's deliver subject against its creator's permissions, so gw2
// could otherwise have the hub deliver its own registry entry, shaped as
// a routed call, on gw1's call subject as if hub1 sent it. Gateways read
// the registry and heartbeats by direct gets instead (View.pollOnce),
// and their views still follow the fleet.
func TestFleetTrustNoConsumerForGateways(t *testing.T) {
	h := startHub(t, false)
	gw1 := startGateway(t, "gw1", "north", h.leafURLs[0], false)
	gv := watchAll(t, gw1.nc, "gw1", manifests.RoleEdge, 1, nil)
	rc := rogue(t, h, "gw2")
	req, _ := json.Marshal(map[string]any{"stream_name": "KV_fleet_registry", "config": map[string]any{"name": "probe",
		"deliver_subject": fleet.CallSubject("gw1", "hub1"), "filter_subject": "$KV.fleet_registry.gw.gw2",
		"deliver_policy": "last_per_subject", "ack_policy": "none"}})
	for _, subj := range []string{"$JS.hub.API.CONSUMER.CREATE.KV_fleet_registry.probe.$KV.fleet_registry.gw.gw2",
		"$JS.API.CONSUMER.CREATE.KV_fleet_alive", "$JS.hub.API.CONSUMER.CREATE.KV_fleet_lease.probe"} {
		if err := rc.PublishRequest(subj, rc.NewRespInbox(), req); err != nil {
			t.Fatal(err)
		}
		if err := rc.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := rc.LastError(); err == nil || !strings.Contains(err.Error(), "CONSUMER.CREATE") {
			t.Fatalf("gw2 creating a consumer on %s: last error %v, want a permissions violation", subj, err)
		}
	}
	if _, ok := gv.Gateway("gw1"); !ok {
		t.Fatalf("gw1's own view (direct gets) has no gw1: %v", gv.Gateways())
	}
}
