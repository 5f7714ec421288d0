package fleet_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/promcp/promcp-device/fleet"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/promcp"
	"github.com/promcp/promcp-device/server"
)

// A gateway cut from the hub keeps serving its own endpoint and knows it
// is isolated; the fleet reports it unreachable; when the link returns it
// is back in the fleet within seconds, with nothing done by hand.
func TestFleetPartitionAndHeal(t *testing.T) {
	// No advertising: the only path from gw1 to the hub is the proxy.
	h := startHub(t, true)
	// This test looks at the fleet while gw1 is cut but still registered:
	// its entry must outlive the cut phase (slow under -race).
	setRegistryTTL(t, h, time.Minute)
	cut := startGateway(t, "gw1", "north", h.leafURLs[0], true)
	startGateway(t, "gw2", "north", h.leafURLs[1], false)
	startGateway(t, "gw3", "north", h.leafURLs[2], false)
	hubView := watchAll(t, h.nc, "hub1", manifests.RoleHub, 3, nil)
	gwView := watchAll(t, cut.nc, "gw1", manifests.RoleEdge, 3, cut.linkUp)
	intent := promcp.CanDoRequest{Intent: promcp.Intent{Action: "do_set_pump"}}
	if rep := hubView.CanDo(t.Context(), intent, ""); rep.Metadata.ResponsesReceived != 3 {
		t.Fatalf("before the cut: %+v", rep.Metadata.MeshMetadata)
	}

	if n := gwView.PeerCount(t.Context()); n != 3 {
		t.Errorf("gw1's peer count before the cut = %d, want 3", n)
	}
	cut.proxy.Cut()
	detect := eventually(t, 2*time.Minute, "gw1 sees its hub link down", func() bool { return !cut.linkUp() })
	t.Logf("link loss detected by the gateway in %s", detect)

	// Its own endpoint keeps working: a read and an action that needs no quorum.
	readsAndSetsPump(t, "local, while cut,", "", "cut-1", func(tool string, args map[string]any, out any) { localCall(t, cut, tool, args, out) })
	// Its quorum count is itself alone (a min_peers: 2 action is refused).
	eventually(t, 2*time.Minute, "gw1's peer count down to itself", func() bool { return gwView.PeerCount(t.Context()) == 1 })
	// It says where it stands, and coordinates what it can reach: itself.
	rep := gwView.CanDo(t.Context(), intent, "")
	if rep.Metadata.PartitionState != fleet.StateIsolated || rep.Metadata.ResponsesReceived != 1 || len(rep.Candidates) != 1 {
		t.Errorf("gw1's can_do while cut = %+v, %d candidates", rep.Metadata.MeshMetadata, len(rep.Candidates))
	}
	// The fleet reports it unreachable.
	rep = hubView.CanDo(t.Context(), intent, "")
	if rep.Metadata.ResponsesReceived != 2 || len(rep.Blocked) != 1 || rep.Blocked[0].DeviceID != "gw1" ||
		rep.Blocked[0].Permission != promcp.SourceUnreachable || rep.Metadata.PartitionState != fleet.StateSuspected {
		t.Errorf("hub's can_do while gw1 is cut = %+v blocked %+v", rep.Metadata.MeshMetadata, rep.Blocked)
	}
	st := fleet.Mesh{View: hubView}.Status(t.Context())
	if st.MeshSize != 3 || st.Reachable != 2 {
		t.Errorf("mesh_status while cut = %+v", st)
	}

	cut.proxy.Heal()
	healed := eventually(t, 2*time.Minute, "gw1 back in the fleet", func() bool {
		return hubView.CanDo(t.Context(), intent, "").Metadata.ResponsesReceived == 3
	})
	t.Logf("healed: the hub's can_do reaches gw1 again %s after the link returned", healed)
	if rep := gwView.CanDo(t.Context(), intent, ""); rep.Metadata.PartitionState != fleet.StateHealthy {
		eventually(t, 2*time.Minute, "gw1 healthy again", func() bool {
			return gwView.CanDo(t.Context(), intent, "").Metadata.PartitionState == fleet.StateHealthy
		})
	}
}

// A gateway's manifest change, a join and a leave reach the sessions on
// the fleet endpoint as notifications/tools/list_changed.
func TestFleetToolsListChanged(t *testing.T) {
	h := startHub(t, false)
	g2 := startGateway(t, "gw2", "north", h.leafURLs[1], false)
	v := watchAll(t, h.nc, "hub1", manifests.RoleHub, 1, nil)
	_, url := endpoint(t, v, fleet.EndpointConfig{Version: "test"})
	rootNotes := make(chan mcp.JSONRPCNotification, 16)
	root := mcpClient(t, url+"/mcp", rootNotes)
	groupNotes := make(chan mcp.JSONRPCNotification, 16)
	group := mcpClient(t, url+"/mcp/gw2", groupNotes)

	// gw2 now serves one more tool.
	err := g2.srv.Read(server.ReadTool{Name: "read_soil", Description: "Soil moisture.", Unit: "%", Source: "bench-1/soil"},
		func(context.Context, server.ReadRequest) (promcp.ReadResult, error) {
			return promcp.ReadResult{Value: 31.0, Unit: "%", Timestamp: time.Now().UTC(), Quality: promcp.QualityGood}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if err := g2.member.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	waitListChanged(t, groupNotes, "gw2's group after its manifest changed")
	tools, err := group.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil || !hasTool(tools.Tools, "read_gw2_soil") {
		t.Fatalf("gw2's group after the change: %v %v", tools, err)
	}
	var soil promcp.ReadResult
	call(t, group, "read_gw2_soil", nil, &soil)
	if soil.Value != 31.0 {
		t.Errorf("read_gw2_soil = %+v", soil)
	}

	// A gateway joins: the fleet can_do names it, the root session hears.
	drain(rootNotes)
	startGateway(t, "gw4", "south", h.leafURLs[2], false)
	waitListChanged(t, rootNotes, "the root after gw4 joined")
	tools, err = root.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil || len(tools.Tools) != 1 || !strings.Contains(tools.Tools[0].Description, "gw4 zone south at /mcp/gw4") {
		t.Fatalf("root after gw4 joined: %+v %v", tools, err)
	}
	// gw2 leaves: its group's session hears its tools go.
	drain(groupNotes)
	g2.member.Close()
	waitListChanged(t, groupNotes, "gw2's group after it left")
}

func waitListChanged(t *testing.T, notes <-chan mcp.JSONRPCNotification, what string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case n := <-notes:
			if n.Method == mcp.MethodNotificationToolsListChanged {
				return
			}
		case <-timeout:
			t.Fatalf("no tools/list_changed for %s", what)
		}
	}
}

func drain(ch <-chan mcp.JSONRPCNotification) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

func hasTool(tools []mcp.Tool, name string) bool {
	for _, t := range tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// Losing one of three hub members fails no fleet can_do and loses no
// gateway for long: the one homed there fails over to another member.
func TestFleetHubMemberLoss(t *testing.T) {
	h, _, v := fleetOf(t, "coordinator", "north", "north", "north")
	_, url := endpoint(t, v, fleet.EndpointConfig{Version: "test"})
	c := mcpClient(t, url+"/mcp", nil)

	h.servers[2].Shutdown() // gw3's home
	back := eventually(t, 2*time.Minute, "all three gateways answer after hub3 stopped", func() bool {
		rep := canDo(t, c, map[string]any{"action": "do_set_pump"}) // fails the test if can_do itself fails
		return rep.Metadata.MeshMetadata.ResponsesReceived == 3
	})
	t.Logf("one hub member lost: every can_do answered; all gateways back after %s", back)
	// The registry (R3) still takes writes with two of three members: a
	// new gateway registers and is asked.
	startGateway(t, "gw4", "north", h.leafURLs[0], false)
	eventually(t, 2*time.Minute, "gw4 registered with two hub members", func() bool { return len(v.Gateways()) == 4 })
	if rep := canDo(t, c, map[string]any{"action": "do_set_pump"}); rep.Metadata.MeshMetadata.ResponsesReceived != 4 {
		t.Errorf("after gw4 joined: %+v", rep.Metadata.MeshMetadata)
	}
}
