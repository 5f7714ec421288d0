package shared_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/promcp/promcp-device/audit"
	"github.com/promcp/promcp-device/fleet/shared"
	"github.com/promcp/promcp-device/fleet/shared/sharedtest"
)

// testAudit: a gateway's records reach FLEET_AUDIT; written while the
// gateway is cut off from the hub they wait on the gateway and arrive
// after healing, each once although some were forwarded twice.
func testAudit(t *testing.T, f *fleet) {
	g := f.gws[1]
	ctx := context.Background()
	fwd, err := g.state.Forwarder(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer fwd.Close(ctx)
	log, err := audit.OpenWith(filepath.Join(t.TempDir(), "audit.jsonl"), audit.Options{OnWrite: fwd.OnWrite})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	appendCall := func(key string) {
		t.Helper()
		for _, ev := range []string{audit.EventAttempt, audit.EventResult} {
			if err := log.Append(ctx, audit.Record{Event: ev, Tool: "do_valve", Key: key, Caller: "agent"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	hub := f.hub.Connect()
	appendCall("online-0")
	waitFleetAudit(t, hub, g.name, func(recs []shared.FleetRecord) bool { return len(recs) == 2 })

	g.leaf.Cut(t)
	for i := range 10 {
		appendCall(fmt.Sprintf("offline-%d", i))
	}
	// The same call's records forwarded again (a retry after a restart):
	// stored once.
	for _, ev := range []string{audit.EventAttempt, audit.EventResult} {
		if err := fwd.Forward(ctx, audit.Record{Seq: 99, Event: ev, Tool: "do_valve", Key: "offline-3"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := log.Append(ctx, audit.Record{Event: audit.EventRefused, Tool: "do_valve", Reason: "sentinel"}); err != nil {
		t.Fatal(err)
	}
	if err := sharedtest.Poll(10*time.Second, func(context.Context) error {
		if n := fwd.Pending(); n > 0 {
			return fmt.Errorf("%d records not in the gateway's stream while cut", n)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if recs := gatewayRecords(t, hub, g.name); len(recs) != 2 {
		t.Fatalf("hub has %d of %s's records while it is cut off, want the 2 from before", len(recs), g.name)
	}
	g.leaf.Heal(t)
	start := time.Now()
	recs := waitFleetAudit(t, hub, g.name, func(recs []shared.FleetRecord) bool {
		return len(recs) > 0 && recs[len(recs)-1].Record.Reason == "sentinel"
	})
	t.Logf("offline records reached the hub %s after the link healed", time.Since(start).Round(time.Millisecond))
	if len(recs) != 2+20+1 {
		t.Fatalf("hub has %d of %s's records after healing, want 23 (2 online, 20 offline, the sentinel; duplicates dropped)", len(recs), g.name)
	}
	seen := map[string]bool{}
	for _, r := range recs {
		id := shared.MsgID(g.name, r.Record)
		if seen[id] {
			t.Fatalf("record %s stored twice in FLEET_AUDIT", id)
		}
		seen[id] = true
	}
}

func gatewayRecords(t *testing.T, nc *nats.Conn, gw string) []shared.FleetRecord {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	all, err := shared.TailFleet(ctx, nc, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []shared.FleetRecord
	for _, r := range all {
		if r.Gateway == gw {
			out = append(out, r)
		}
	}
	return out
}

func waitFleetAudit(t *testing.T, nc *nats.Conn, gw string, done func([]shared.FleetRecord) bool) []shared.FleetRecord {
	t.Helper()
	var recs []shared.FleetRecord
	if err := sharedtest.Poll(20*time.Second, func(context.Context) error {
		recs = gatewayRecords(t, nc, gw)
		if done(recs) {
			return nil
		}
		return fmt.Errorf("FLEET_AUDIT holds %d records of %s", len(recs), gw)
	}); err != nil {
		t.Fatal(err)
	}
	return recs
}
