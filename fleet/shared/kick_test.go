package shared_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/promcp/promcp-device/fleet/natsembed"
	"github.com/promcp/promcp-device/fleet/shared"
	"github.com/promcp/promcp-device/fleet/shared/sharedtest"
)

// TestKickRestoresJetStream makes the state seen in the field (issue 24):
// a leaf linked to a healthy hub member whose JetStream requests all get
// "no responders". The member's $JS.hub.API.> mapping, the interest it
// sends the leaf (nine subjects), is removed, so the leaf holds no interest for the hub's
// JetStream while its link stays up. The gateway's shared state, with
// natsembed.KickLeaf as its Kick, closes the link after the link grace;
// the leaf relinks (the mapping is added again on every new link) and the
// hub answers. Figures are logged, not asserted.
func TestKickRestoresJetStream(t *testing.T) {
	hub := sharedtest.StartHub(t)
	hub.WaitReady(3 * time.Minute)
	leaf := hub.StartLeaf("gw9")
	var kicks atomic.Int32
	cfg := shared.Config{Gateway: "gw9", Linked: leaf.Linked, LinkGrace: time.Second,
		Kick: func() (string, error) { kicks.Add(1); return natsembed.KickLeaf(leaf.Server) }}
	var st *shared.State
	if err := sharedtest.Poll(3*time.Minute, func(ctx context.Context) error {
		s, err := shared.Open(ctx, leaf.Conn(t), cfg)
		st = s
		return err
	}); err != nil {
		t.Fatalf("open: %v", err)
	}
	if err := sharedtest.Poll(time.Minute, func(ctx context.Context) error { return shared.ReadLease(ctx, st, "k") }); err != nil {
		t.Fatalf("read before the fault: %v", err)
	}

	member := dropJSInterest(t, hub, "gw9")
	// The fault holds: JetStream requests from the gateway's own
	// connection (not the shared state's, so nothing kicks) get no
	// responders while the link is up.
	js, err := jetstream.NewWithDomain(leaf.Conn(t), "hub")
	if err != nil {
		t.Fatal(err)
	}
	if err := sharedtest.Poll(time.Minute, func(ctx context.Context) error {
		_, err := js.Stream(ctx, "KV_"+shared.LeaseBucket)
		if errors.Is(err, nats.ErrNoResponders) && leaf.Linked() {
			return nil
		}
		return fmt.Errorf("want no responders through an up link, got %v (linked %v)", err, leaf.Linked())
	}); err != nil {
		t.Fatal(err)
	}
	if kicks.Load() != 0 {
		t.Fatalf("%d kicks before the shared state saw the fault", kicks.Load())
	}

	start := time.Now()
	var noResp int
	if err := sharedtest.Poll(2*time.Minute, func(ctx context.Context) error {
		err := shared.ReadLease(ctx, st, "k")
		if errors.Is(err, nats.ErrNoResponders) {
			noResp++
		}
		return err
	}); err != nil {
		t.Fatalf("JetStream not back after the fault on %s: %v (%d kicks)", member, err, kicks.Load())
	}
	if kicks.Load() == 0 {
		t.Fatal("JetStream came back with no kick: the fault did not hold")
	}
	t.Logf("linked to %s with no JetStream interest: answered again after %v, %d reads got no responders, %d kicks, now via %s",
		member, time.Since(start).Round(time.Millisecond), noResp, kicks.Load(), leaf.Member())
}

// dropJSInterest removes the JetStream domain mappings on the hub member
// leaf gw is linked to, which withdraws that link's interest in the
// hub's JetStream ($JS.hub.API.…); it returns the member's name.
func dropJSInterest(t *testing.T, hub *sharedtest.Hub, gw string) string {
	t.Helper()
	for i := 0; i < 3; i++ {
		ns := hub.Node(i)
		if ns == nil {
			continue
		}
		lz, err := ns.Leafz(nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range lz.Leafs {
			if l.Name != gw {
				continue
			}
			acc, err := ns.LookupAccount(l.Account)
			if err != nil {
				t.Fatal(err)
			}
			// The sources nats-server maps for a domain (jetstream_api.go,
			// generateJSMappingTable).
			removed := 0
			for _, sfx := range []string{"INFO", "STREAM.>", "CONSUMER.>", "DIRECT.>", "META.>", "SERVER.>", "ACCOUNT.>", "$KV.>", "$OBJ.>"} {
				if acc.RemoveMapping("$JS." + shared.DefaultHubDomain + ".API." + sfx) {
					removed++
				}
			}
			if removed == 0 {
				t.Fatalf("%s: no JetStream domain mapping in account %s", ns.Name(), l.Account)
			}
			return ns.Name()
		}
	}
	t.Fatalf("no hub member has a link from %s", gw)
	return ""
}
