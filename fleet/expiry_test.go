package fleet_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/promcp/promcp-device/fleet"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/promcp"
)

// testTTL is the registry TTL of the expiry test: ten of the harness's
// 500 ms heartbeats, so that a live gateway on a loaded machine never
// misses enough of them to expire.
const testTTL = 5 * time.Second

// setRegistryTTL brings h's registry bucket to entries living ttl past
// their last heartbeat.
func setRegistryTTL(t testing.TB, h *testHub, ttl time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := fleet.SetupRegistry(ctx, h.nc, 3, ttl); err != nil {
		t.Fatal(err)
	}
}

// A gateway that dies without leaving (its process gone: leaf server and
// connection, no deregistration) fails its calls at once as
// source_unreachable, drops out of the fleet endpoint within the
// registry's TTL while the others' tools stay, and is back on its own
// when it starts again.
func TestFleetCrashedGatewayExpires(t *testing.T) {
	h := startHub(t, false)
	setRegistryTTL(t, h, testTTL)
	var gws []*testGateway
	for i, id := range []string{"gw1", "gw2", "gw3"} {
		gws = append(gws, startGateway(t, id, "north", h.leafURLs[i], false))
	}
	v := watchAll(t, h.nc, "hub1", manifests.RoleHub, 3, nil)
	_, url := endpoint(t, v, fleet.EndpointConfig{Version: "test"})
	root := mcpClient(t, url+"/mcp", nil)
	gw1 := mcpClient(t, url+"/mcp/gw1", nil)
	gw2 := mcpClient(t, url+"/mcp/gw2", nil)
	var read promcp.ReadResult
	if call(t, gw1, "read_gw1_temperature", nil, &read); read.Quality != promcp.QualityGood {
		t.Fatalf("gw1 before the crash: %+v", read)
	}

	subj := fleet.CallSubject("gw1", "hub1")
	if interest(h, subj) == 0 {
		t.Fatal("the hub shows no interest in gw1's calls before the crash")
	}

	// gw1 crashes: its leaf server and connection go, its entry stays.
	killed := time.Now()
	gws[0].leaf.Shutdown()
	eventually(t, 2*time.Minute, "every hub member drops gw1's interest", func() bool { return interest(h, subj) == 0 })
	// Meanwhile its calls fail at once (no responders, not a timeout).
	if _, ok := v.Gateway("gw1"); !ok {
		t.Fatalf("gw1 expired %s after the crash, before its call could be tried (TTL %s)", time.Since(killed), testTTL)
	}
	call(t, gw1, "read_gw1_temperature", nil, &read)
	if read.Quality != promcp.QualityError || read.Error == nil || read.Error.Code != promcp.CodeSourceUnreachable ||
		!strings.Contains(read.Error.Message, "no responders") {
		t.Errorf("gw1's read after the crash = %+v %+v, want source_unreachable, no responders", read, read.Error)
	}

	// It leaves within the TTL (counted from its last heartbeat, before the
	// crash) and the watch's delivery; the bound here is generous.
	eventually(t, testTTL+20*time.Second, "gw1 gone from the fleet endpoint", func() bool {
		return !strings.Contains(rootDescription(t, root), "/mcp/gw1")
	})
	t.Logf("crashed gateway gone from the fleet's tools/list %s after the crash (registry TTL %s, heartbeat 500 ms)", time.Since(killed), testTTL)
	if _, ok := v.Gateway("gw1"); ok {
		t.Error("gw1 still in the view")
	}
	desc := rootDescription(t, root)
	for _, id := range []string{"gw2", "gw3"} {
		if !strings.Contains(desc, "/mcp/"+id) {
			t.Errorf("%s left with gw1: %s", id, desc)
		}
	}
	if tools, err := gw2.ListTools(t.Context(), mcp.ListToolsRequest{}); err != nil || !hasTool(tools.Tools, "read_gw2_temperature") {
		t.Errorf("gw2's group after gw1 expired: %v %v", tools, err)
	}
	if call(t, gw2, "read_gw2_temperature", nil, &read); read.Quality != promcp.QualityGood {
		t.Errorf("gw2's read after gw1 expired: %+v", read)
	}

	// gw1 starts again: it registers on its own.
	startGateway(t, "gw1", "north", h.leafURLs[0], false)
	back := eventually(t, 2*time.Minute, "gw1 back on the fleet endpoint", func() bool {
		return strings.Contains(rootDescription(t, root), "/mcp/gw1")
	})
	t.Logf("restarted gateway back %s after its restart", back)
	again := mcpClient(t, url+"/mcp/gw1", nil)
	if call(t, again, "read_gw1_temperature", nil, &read); read.Quality != promcp.QualityGood {
		t.Errorf("gw1 after its restart: %+v", read)
	}
}

// rootDescription is the fleet can_do's description on the root endpoint:
// it names every registered gateway's group.
func rootDescription(t testing.TB, c *client.Client) string {
	t.Helper()
	tools, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil || len(tools.Tools) != 1 {
		t.Fatalf("root tools/list: %+v %v", tools, err)
	}
	return tools.Tools[0].Description
}

// interest is how many subscriptions (local, route or leaf) the members
// of h hold on subj, in the account the fleet uses.
func interest(h *testHub, subj string) int {
	n := 0
	for _, ns := range h.servers {
		n += ns.GlobalAccount().Interest(subj)
	}
	return n
}

// SetupHub makes the heartbeat bucket with the documented TTL, and
// refuses a TTL NATS cannot keep; stray keys in the buckets are ignored.
func TestFleetAliveBucketTTL(t *testing.T) {
	h := startHub(t, false)
	kv := hubBucket(t, h, fleet.AliveBucket)
	st, err := kv.Status(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if st.TTL() != fleet.RegistryTTL || st.LimitMarkerTTL() != fleet.RegistryTTL {
		t.Errorf("alive bucket: TTL %s, marker TTL %s; want %s", st.TTL(), st.LimitMarkerTTL(), fleet.RegistryTTL)
	}
	if err := fleet.SetupRegistry(t.Context(), h.nc, 3, 500*time.Millisecond); err == nil || !strings.Contains(err.Error(), "at least 1s") {
		t.Errorf("a TTL under 1 s = %v, want refused", err)
	}
	// Keys that name no gateway, written by anyone with access to the hub,
	// are ignored by the nodes watching.
	for _, b := range []jetstream.KeyValue{hubBucket(t, h, fleet.RegistryBucket), kv} {
		if _, err := b.Put(t.Context(), "gw", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	v := fleet.Watch(h.nc, fleet.ViewConfig{Node: "hub1", Role: manifests.RoleHub})
	t.Cleanup(v.Close)
	select {
	case <-v.Ready():
	case <-time.After(30 * time.Second):
		t.Fatal("the view never read the registry")
	}
	if gws := v.Gateways(); len(gws) != 0 {
		t.Errorf("gateways from keys that name none: %+v", gws)
	}
}

// A gateway whose heartbeat is longer than the registry's TTL allows
// heartbeats at a third of the TTL instead, so it does not expire while
// alive.
func TestFleetHeartbeatFollowsRegistryTTL(t *testing.T) {
	h := startHub(t, false)
	setRegistryTTL(t, h, testTTL)
	g := startGateway(t, "gw1", "north", h.leafURLs[0], false)
	leaf9, nc9 := startLeaf(t, "gw9", h.leafURLs[0], nil) // gw9's own credentials: gw1's may not register gw9
	// Joined once its link is up: a first registration that fails waits
	// for the next heartbeat, an hour here.
	js9, err := jetstream.NewWithDomain(nc9, fleet.HubDomain)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "gw9 reaches the hub's registry", func() bool {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		_, err := js9.KeyValue(ctx, fleet.AliveBucket)
		return leaf9.NumLeafNodes() > 0 && err == nil
	})
	m, err := fleet.Join(t.Context(), nc9, fleet.MemberConfig{GatewayID: "gw9", Zone: "north", Profile: "full", Upkeep: time.Hour}, g.local)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	kv := hubBucket(t, h, fleet.AliveBucket)
	revision := func() uint64 {
		e, err := kv.Get(t.Context(), "gw.gw9")
		if err != nil {
			return 0
		}
		return e.Revision()
	}
	first := uint64(0)
	eventually(t, 2*time.Minute, "gw9 registered", func() bool { first = revision(); return first > 0 })
	// Rewritten twice more, well before the hour: every TTL/3.
	seen := map[uint64]bool{first: true}
	eventually(t, 4*testTTL, "gw9 heartbeats twice", func() bool {
		if r := revision(); r > 0 {
			seen[r] = true
		}
		return len(seen) >= 3
	})
}

// hubBucket opens the fleet's key-value bucket name on hub h.
func hubBucket(t *testing.T, h *testHub, name string) jetstream.KeyValue {
	t.Helper()
	js, err := jetstream.NewWithDomain(h.nc, fleet.HubDomain)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(t.Context(), name)
	if err != nil {
		t.Fatalf("open the hub's %s bucket: %v", name, err)
	}
	return kv
}
