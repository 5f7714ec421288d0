package fleet_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/promcp/promcp-device/fleet"
	"github.com/promcp/promcp-device/manifests"
)

// registryHub is a single-member hub (JetStream domain hub, no trust) with
// the fleet's buckets and n registered gateways gw0001 … whose heartbeats
// are alive, written straight into the buckets (no member runs): what a
// gateway's view reads of a fleet of n.
func registryHub(t *testing.T, n int) *natsserver.Server {
	t.Helper()
	ns, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: -1, NoSigs: true, NoLog: true,
		JetStream: true, JetStreamDomain: fleet.HubDomain, StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	t.Cleanup(ns.Shutdown)
	if !ns.ReadyForConnections(time.Minute) {
		t.Fatal("the hub never accepted connections")
	}
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	// Heartbeats live an hour: none expires during the test.
	if err := fleet.SetupRegistry(ctx, nc, 1, time.Hour); err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.NewWithDomain(nc, fleet.HubDomain)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := js.KeyValue(ctx, fleet.RegistryBucket)
	if err != nil {
		t.Fatal(err)
	}
	alive, err := js.KeyValue(ctx, fleet.AliveBucket)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("gw%04d", i)
		in, _ := json.Marshal(fleet.Info{GatewayID: id, Zone: "north", Profile: "full", ManifestHash: "sha256:" + id})
		if _, err := reg.Put(ctx, "gw."+id, in); err != nil {
			t.Fatal(err)
		}
		if _, err := alive.Put(ctx, "gw."+id, []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	return ns
}

// Past the 1,024 keys nats-server answers in one batched direct get, a
// gateway's view still holds every registered gateway (the view a
// coordinator serves the fleet endpoint from), and a gateway that follows
// only itself still pings every live gateway for its peer count: the
// reads page instead of failing. A hub's view (a watch) holds them all too.
func TestFleetRegistryReadsPagePastTheServersBatchLimit(t *testing.T) {
	const n = 1100
	ns := registryHub(t, n)
	connect := func() *nats.Conn {
		nc, err := nats.Connect(ns.ClientURL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	full := fleet.Watch(connect(), fleet.ViewConfig{Node: "gw0001", Role: manifests.RoleEdge, Budget: testBudget})
	t.Cleanup(full.Close)
	select {
	case <-full.Ready():
	case <-time.After(3 * time.Minute):
		t.Fatalf("a gateway's full view never read a registry of %d gateways", n)
	case <-t.Context().Done():
		t.Fatal(t.Context().Err())
	}
	if got := len(full.Gateways()); got != n {
		t.Errorf("a gateway's full view holds %d gateways, want %d", got, n)
	}
	self := fleet.Watch(connect(), fleet.ViewConfig{Node: "gw0001", Role: manifests.RoleEdge, Budget: testBudget,
		Follow: []string{"gw0001"}})
	t.Cleanup(self.Close)
	select {
	case <-self.Ready():
	case <-time.After(3 * time.Minute):
		t.Fatal("a gateway's own view never read the registry")
	case <-t.Context().Done():
		t.Fatal(t.Context().Err())
	}
	if ids := fleet.PeerIDs(t.Context(), self); len(ids) != n {
		t.Errorf("a gateway following itself pings %d gateways for its peer count, want %d", len(ids), n)
	}
	// A hub's view watches (an ordered consumer per bucket), no batch
	// limit: it holds them all as well.
	hub := fleet.Watch(connect(), fleet.ViewConfig{Node: "hub1", Role: manifests.RoleHub, Budget: testBudget})
	t.Cleanup(hub.Close)
	eventually(t, 3*time.Minute, fmt.Sprintf("a hub's view holds %d gateways", n), func() bool { return len(hub.Gateways()) == n })
}

// A registry read is one request while the fleet fits the server's batch
// limit, and a few pages past it, never a request per gateway; explicit
// keys past the limit (a view following more than 1,024 gateways) are
// read in groups the server answers.
func TestFleetRegistryReadRequests(t *testing.T) {
	for _, n := range []int{3, 1100} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			ns := registryHub(t, n)
			nc, err := nats.Connect(ns.ClientURL())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(nc.Close)
			before := nc.Stats().OutMsgs
			got, err := fleet.LastPerKey(t.Context(), nc, fleet.AliveBucket, []string{"gw.*"})
			if err != nil {
				t.Fatal(err)
			}
			requests := nc.Stats().OutMsgs - before
			t.Logf("%d gateways: %d keys read in %d requests", n, got, requests)
			if got != n {
				t.Errorf("read %d heartbeats, want %d", got, n)
			}
			// One multi_last; past 1,024 keys the server refuses it (413)
			// and the read pages: 1 + ceil(n/1024) requests.
			if want := uint64(1); n <= 1024 && requests != want {
				t.Errorf("%d gateways read in %d requests, want %d", n, requests, want)
			}
			if limit := uint64(1 + (n+1023)/1024); requests > limit {
				t.Errorf("%d gateways read in %d requests, want at most %d", n, requests, limit)
			}
			keys := make([]string, 0, n+1)
			for i := 1; i <= n+1; i++ { // one more, never registered
				keys = append(keys, fmt.Sprintf("gw.gw%04d", i))
			}
			got, err = fleet.LastPerKey(t.Context(), nc, fleet.RegistryBucket, keys)
			if err != nil {
				t.Fatal(err)
			}
			if got != n {
				t.Errorf("read %d registry entries of %d keys, want %d", got, len(keys), n)
			}
		})
	}
}
