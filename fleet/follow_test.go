package fleet_test

import (
	"slices"
	"testing"
	"time"

	"github.com/promcp/promcp-device/fleet"
	"github.com/promcp/promcp-device/manifests"
)

// A gateway's view that follows only itself (ViewConfig.Follow, what a
// gateway serving no fleet endpoint runs) holds its own registry entry,
// not the fleet's, while its peer count and mesh_status still count every
// live gateway (read from the heartbeats' keys, not held).
func TestFleetGatewayViewFollowsItself(t *testing.T) {
	_, gws, _ := fleetOf(t, "hub1", "north", "south", "south")
	gw1 := gws[0]
	v := fleet.Watch(gw1.nc, fleet.ViewConfig{Node: "gw1", Role: manifests.RoleEdge, LinkUp: gw1.linkUp,
		Budget: testBudget, Follow: []string{"gw1"}})
	t.Cleanup(v.Close)
	select { // every gateway was registered before the view started: its first read would hold them all
	case <-v.Ready():
	case <-time.After(3 * time.Minute):
		t.Fatal("the gateway's view never read the registry")
	case <-t.Context().Done():
		t.Fatal(t.Context().Err())
	}
	eventually(t, 3*time.Minute, "gw1's own entry", func() bool { _, ok := v.Gateway("gw1"); return ok })
	var ids []string
	for _, in := range v.Gateways() {
		ids = append(ids, in.GatewayID)
	}
	if !slices.Equal(ids, []string{"gw1"}) {
		t.Fatalf("a gateway's view holds %v, want only itself (gw1)", ids)
	}
	// The peer count pings every live gateway, followed or not.
	eventually(t, 3*time.Minute, "gw1 counts 3 peers", func() bool { return v.PeerCount(t.Context()) == 3 })
	m := fleet.Mesh{View: v, Member: gw1.member}
	var st fleet.MeshStatus
	eventually(t, 3*time.Minute, "gw1's mesh_status counts 3 gateways", func() bool {
		st = m.Status(t.Context())
		return st.MeshSize == 3 && st.Reachable == 3
	})
	for _, p := range st.Peers {
		if (p.DeviceID == "gw1") != (p.Profile == "full") {
			t.Errorf("peer %+v: want the registry entry (profile full) of gw1 only", p)
		}
	}
	// Without Follow (a coordinator's view), the same gateway holds all.
	full := watchAll(t, gw1.nc, "gw1", manifests.RoleEdge, 3, gw1.linkUp)
	if n := len(full.Gateways()); n != 3 {
		t.Errorf("a full view holds %d gateways, want 3", n)
	}
}
