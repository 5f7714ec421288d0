package shared_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/promcp/promcp-device/fleet/shared"
	"github.com/promcp/promcp-device/promcp"
)

// leaseRec is a fleet_lease record as stored.
type leaseRec struct {
	Gateway string    `json:"gw"`
	Request string    `json:"req"`
	State   string    `json:"state"`
	Last    time.Time `json:"last"`
}

func readLease(t *testing.T, kv jetstream.KeyValue, key string) (leaseRec, uint64) {
	t.Helper()
	e, err := kv.Get(t.Context(), key)
	if err != nil {
		t.Fatalf("reading %s: %v", key, err)
	}
	var r leaseRec
	if err := json.Unmarshal(e.Value(), &r); err != nil {
		t.Fatal(err)
	}
	return r, e.Revision()
}

// ask sends op to the hubs' service as gateway gw (the subject names it;
// NATS lets only gw publish there) and returns the raw answer.
func ask(t *testing.T, nc *nats.Conn, gw, op string, body map[string]any) map[string]any {
	t.Helper()
	b, _ := json.Marshal(body)
	m, err := nc.Request(shared.ServiceSubject(gw, op), b, 5*time.Second)
	if err != nil {
		t.Fatalf("%s as %s: %v", op, gw, err)
	}
	var rep map[string]any
	if err := json.Unmarshal(m.Data, &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

// testTrust: shared records are written by the hubs, which check them.
// A record written past them with "last" in the future (attack 3) holds
// nobody back and is overwritten on the next claim; a writer cannot name
// a time; a gateway cannot settle another gateway's pending reservation,
// nor reserve over it within its lease, nor write the record of equipment it does not share.
func testTrust(t *testing.T, f *fleet) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	js, err := jetstream.NewWithDomain(f.hub.Connect(), "hub")
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, shared.LeaseBucket)
	if err != nil {
		t.Fatal(err)
	}
	g1, g2 := f.gws[0], f.gws[1]

	// A forged record (written straight into the bucket, as a gateway
	// could before NATS's permissions): last in 2099.
	key := "cooldown.gw1.do_shared_forged"
	forged, _ := json.Marshal(leaseRec{Gateway: "gw9", Request: "x", State: "released", Last: time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)})
	if _, err := kv.Put(ctx, key, forged); err != nil {
		t.Fatal(err)
	}
	d, err := act(ctx, g2, claim("do_shared_forged"), 10*time.Minute)
	if err != nil || d.Permission != promcp.Allowed {
		t.Fatalf("claim after a forged last in 2099 = %s (%s) %v, want allowed", d.Permission, d.Reason, err)
	}
	if rec, _ := readLease(t, kv, key); rec.Last.Year() == 2099 || rec.Gateway != "gw2" || rec.State != "committed" {
		t.Fatalf("the hubs kept the forged time: %+v", rec)
	}
	// The real actuation now holds the others back, as it should.
	if d, err := act(ctx, g1, claim("do_shared_forged"), 10*time.Minute); err != nil || d.Permission != promcp.CooldownActive {
		t.Fatalf("claim right after gw2's actuation = %s %v, want cooldown_active", d.Permission, err)
	}

	nc := g2.leaf.Conn(t)
	// A writer names no time: "last" in a request is not read.
	rep := ask(t, nc, "gw2", "reserve", map[string]any{"key": "cooldown.gw2.do_own", "rev": 0, "req": "r1", "last": "2099-01-01T00:00:00Z"})
	if rep["err"] != nil {
		t.Fatalf("reserve of gw2's own record: %v", rep)
	}
	own, ownRev := readLease(t, kv, "cooldown.gw2.do_own")
	if !own.Last.IsZero() || own.Gateway != "gw2" || own.State != "pending" {
		t.Fatalf("reserve with a writer's last = %+v, want no last", own)
	}
	// Nor can it keep the actuator reserved by reserving again over its
	// own pending reservation (within the lease): not written (answered as
	// a lost race, so that a second claim of gw2's waits for the first).
	if rep := ask(t, nc, "gw2", "reserve", map[string]any{"key": "cooldown.gw2.do_own", "rev": ownRev, "req": "r3"}); rep["err"] == nil {
		t.Fatalf("gw2 reserving again over its pending reservation = %v, want not written", rep)
	}
	if again, rev := readLease(t, kv, "cooldown.gw2.do_own"); rev != ownRev || again.Request != "r1" {
		t.Fatalf("gw2's pending reservation r1 after a reservation over it = %+v rev %d, want r1 unchanged at %d", again, rev, ownRev)
	}

	// gw1 holds a reservation; gw2 may not release or commit it.
	c := claim("do_shared_held")
	held, d, err := g1.res.Reserve(ctx, c, cooldownDecide(c, 0))
	if err != nil || held == nil {
		t.Fatalf("gw1's claim: %s %v", d.Permission, err)
	}
	hk := "cooldown.gw1.do_shared_held"
	before, rev := readLease(t, kv, hk)
	for _, as := range []map[string]any{
		{"key": hk, "rev": rev, "req": before.Request, "state": "released"},
		{"key": hk, "rev": rev, "req": "mine", "state": "committed"},
	} {
		if rep := ask(t, nc, "gw2", "settle", as); rep["refused"] != true {
			t.Fatalf("gw2 settling gw1's reservation %v = %v, want refused", as, rep)
		}
	}
	// Nor reserve over it (erasing it) within its lease.
	if rep := ask(t, nc, "gw2", "reserve", map[string]any{"key": hk, "rev": rev, "req": "mine"}); rep["err"] == nil {
		t.Fatalf("gw2 reserving over gw1's pending reservation = %v, want an error", rep)
	}
	if after, arev := readLease(t, kv, hk); after != before || arev != rev {
		t.Fatalf("gw1's record changed by gw2: %+v (rev %d) → %+v (rev %d)", before, rev, after, arev)
	}
	if err := g1.res.Commit(ctx, held, time.Now(), true); err != nil {
		t.Fatalf("gw1's own commit: %v", err)
	}

	// Equipment gw2 does not share (sharedtest: private-*) is not its to write.
	if rep := ask(t, nc, "gw2", "reserve", map[string]any{"key": "cooldown.private-x.do_y", "rev": 0, "req": "r2"}); rep["refused"] != true {
		t.Fatalf("gw2 reserving unshared equipment = %v, want refused", rep)
	}
	if rep := ask(t, nc, "gw2", "rate_take", map[string]any{"owner": "private-x", "action": "do_y", "max": 1, "per_ms": 60000}); rep["refused"] != true {
		t.Fatalf("gw2 taking a rate slot of unshared equipment = %v, want refused", rep)
	}
}
