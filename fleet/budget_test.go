package fleet_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/nats-io/nats.go"

	"github.com/promcp/promcp-device/fleet"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/promcp"
	"github.com/promcp/promcp-device/server"
)

// peerLocal is a gateway whose can_do reads its fleet peer count first,
// as a policy with quorum.min_peers does.
type peerLocal struct {
	fleet.Local
	view *fleet.View
}

func (p peerLocal) Call(ctx context.Context, c server.Caller, tool string, args json.RawMessage) (*mcp.CallToolResult, error) {
	if tool == "can_do" {
		_ = p.view.PeerCount(ctx)
	}
	return p.Local.Call(ctx, c, tool, args)
}

// One gateway that never answers (registered and beating, its can_do
// requests swallowed) among healthy ones whose can_do reads the peer
// count: every fleet can_do has every healthy gateway in its answer. The
// peer count's pings wait for the silent gateway, so they must run in the
// background, not inside the healthy gateways' answers.
func TestFleetDeadGatewayHidesNoHealthy(t *testing.T) {
	_, gws, v := fleetOf(t, "hub1", "hall", "hall", "hall", "hall")
	dead := gws[3]
	fleet.Mute(dead.member)
	sub, err := dead.nc.Subscribe(fleet.CanDoSubject(dead.id, "*"), func(*nats.Msg) {})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Unsubscribe() })
	if err := dead.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	for _, g := range gws[:3] {
		gv := fleet.Watch(g.nc, fleet.ViewConfig{Node: g.id, Role: manifests.RoleEdge, Budget: testBudget, LinkUp: g.linkUp})
		t.Cleanup(gv.Close)
		eventually(t, 30*testBudget, g.id+" sees the fleet", func() bool { return len(gv.Gateways()) == 4 })
		g.local.Local = peerLocal{Local: g.local.Local, view: gv}
		gv.PeerCount(t.Context()) // as the gateway does when it joins: the count is kept from then on
	}
	const queries = 8
	missing, checked := 0, 0
	for q := range queries {
		// Under heavy load the silent gateway's heartbeat may lapse: it is
		// then gone from the registry and rightly not asked. It must be
		// reported unreachable whenever it was registered through the query.
		_, registered := v.Gateway(dead.id)
		rep := v.CanDo(t.Context(), promcp.CanDoRequest{Intent: promcp.Intent{Action: "read"}}, "")
		_, still := v.Gateway(dead.id)
		registered = registered && still
		silent := map[string]bool{}
		for _, b := range rep.Blocked {
			if b.Permission == promcp.SourceUnreachable && b.Capability == "*" {
				silent[b.DeviceID] = true
			}
		}
		for _, g := range gws[:3] {
			if silent[g.id] {
				missing++
				t.Logf("query %d: healthy %s missing: %s", q, g.id, rep.Metadata.Note)
			}
		}
		switch {
		case !registered:
			t.Logf("query %d: the silent gateway's registration lapsed (heartbeat late under load); not checked", q)
		case !silent[dead.id]:
			t.Errorf("query %d: the silent gateway was not reported unreachable", q)
		default:
			checked++
		}
	}
	t.Logf("healthy gateways missing: %d of %d answers over %d queries", missing, 3*queries, queries)
	if checked == 0 {
		t.Errorf("the silent gateway was registered through none of %d queries: nothing showed it reported unreachable", queries)
	}
	if missing > 0 {
		t.Fatalf("a healthy gateway was missing from %d of %d answers", missing, 3*queries)
	}
}
