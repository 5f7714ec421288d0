package fleet_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/promcp/promcp-device/fleet"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/promcp"
)

// Three hub members, three edge gateways: a real MCP client on the fleet
// endpoint sees one can_do over the fleet, each gateway's tools in its
// group, and the mesh methods; any gateway can coordinate too.
func TestFleetEndpoint(t *testing.T) {
	_, gws, v := fleetOf(t, "hub1", "north", "south", "south")
	_, url := endpoint(t, v, fleet.EndpointConfig{Version: "test"})
	root := mcpClient(t, url+"/mcp", nil)

	tools, err := root.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil || len(tools.Tools) != 1 || tools.Tools[0].Name != "can_do" || !strings.Contains(tools.Tools[0].Description, "gw2 zone south at /mcp/gw2") {
		t.Fatalf("root tools = %+v, %v", tools, err)
	}
	rep := canDo(t, root, map[string]any{"action": "do_set_pump", "value": true})
	if !rep.Feasible || len(rep.Candidates) != 3 || len(rep.Blocked) != 0 {
		t.Fatalf("fleet can_do = %+v", rep)
	}
	var sources []string
	for _, c := range rep.Candidates {
		sources = append(sources, c.Source)
		if c.Capability != "do_"+c.DeviceID+"_set_pump" || c.Permission != promcp.Allowed {
			t.Errorf("candidate %+v", c)
		}
	}
	slices.Sort(sources)
	if !slices.Equal(sources, []string{"gw1/pump_relay", "gw2/pump_relay", "gw3/pump_relay"}) {
		t.Errorf("sources = %v", sources)
	}
	m := rep.Metadata.MeshMetadata
	if m == nil || m.CoordinatorNode != "hub1" || m.PeersConsulted != 3 || m.ResponsesReceived != 3 || m.ResponsesDroppedLate != 0 ||
		m.MeshSizeEstimate != 3 || m.PartitionState != fleet.StateHealthy {
		t.Errorf("metadata = %+v", m)
	}
	if _, ok := rep.Context.CurrentObservations["read_gw2_pump"]; !ok {
		t.Errorf("observations not under fleet names: %v", rep.Context.CurrentObservations)
	}

	// A zone narrows the fan-out to the gateways there.
	rep = canDo(t, root, map[string]any{"action": "do_set_pump", "location": "south"})
	if rep.Metadata.MeshMetadata.PeersConsulted != 2 {
		t.Errorf("location south consulted %d gateways, want 2", rep.Metadata.MeshMetadata.PeersConsulted)
	}

	// Gateway gw2's group: its tools under fleet names, within the limits.
	g2 := mcpClient(t, url+"/mcp/gw2", nil)
	gt, err := g2.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	dos := 0
	for _, tl := range gt.Tools {
		names = append(names, tl.Name)
		if strings.HasPrefix(tl.Name, "do_") {
			dos++
		}
	}
	slices.Sort(names)
	want := []string{"can_do", "do_gw2_set_pump", "read_gw2_humidity", "read_gw2_lux", "read_gw2_pump", "read_gw2_temperature"}
	if !slices.Equal(names, want) || len(names) > 8 || dos > 5 {
		t.Fatalf("gw2 group tools = %v, want %v", names, want)
	}
	readsAndSetsPump(t, "routed", "gw2_", "fleet-key-1", func(tool string, args map[string]any, out any) { call(t, g2, tool, args, out) })
	// It ran on gw2 and nowhere else.
	var local promcp.ReadResult
	localCall(t, gws[1], "read_pump", nil, &local)
	if local.Value != true {
		t.Errorf("gw2's pump after the routed do = %v", local.Value)
	}

	// The mesh methods answer on the fleet endpoint.
	var st struct {
		Result fleet.MeshStatus `json:"result"`
	}
	rpc(t, url+"/mcp", "physmcp/mesh_status", &st)
	if st.Result.MeshSize != 3 || st.Result.Reachable != 3 || st.Result.PartitionState != fleet.StateHealthy || st.Result.Node != "hub1" {
		t.Errorf("mesh_status = %+v", st.Result)
	}
	var peers struct {
		Result struct {
			Peers []fleet.Peer `json:"peers"`
		} `json:"result"`
	}
	rpc(t, url+"/mcp/gw1", "physmcp/list_peers", &peers)
	if len(peers.Result.Peers) != 3 || peers.Result.Peers[0].DeviceID != "gw1" || peers.Result.Peers[0].Status != "alive" {
		t.Errorf("list_peers = %+v", peers.Result)
	}

	// Any node coordinates: gw3 asks the fleet through its own leaf.
	v3 := watchAll(t, gws[2].nc, "gw3", manifests.RoleEdge, 3, gws[2].linkUp)
	rep = v3.CanDo(t.Context(), promcp.CanDoRequest{Intent: promcp.Intent{Action: "do_set_pump"}}, "")
	if len(rep.Candidates) != 3 || rep.Metadata.CoordinatorNode != "gw3" || rep.Metadata.ResponsesReceived != 3 {
		t.Errorf("can_do coordinated by gw3 = %+v", rep.Metadata.MeshMetadata)
	}
}

// rpc posts a JSON-RPC request for method to url and decodes the answer.
func rpc(t *testing.T, url, method string, out any) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": method})
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
}

// One gateway frozen (it took the request, then stopped, as a stopped
// process would): the fleet can_do returns at the budget with the others'
// candidates, reports the frozen one unreachable, and drops its answer
// when it comes.
func TestFleetCanDoSlowGateway(t *testing.T) {
	_, gws, v := fleetOf(t, "hub1", "north", "north", "north")
	slow := gws[2]
	frozen := make(chan struct{})
	fleet.SetPause(slow.member, func() { <-frozen })
	var once sync.Once
	release := func() { once.Do(func() { close(frozen) }) }
	defer release()

	start := time.Now()
	rep := v.CanDo(t.Context(), promcp.CanDoRequest{Intent: promcp.Intent{Action: "do_set_pump"}}, "")
	took := time.Since(start)
	// It returns (while gw3 is still frozen: it does not wait for it), not
	// before the budget; how long after it is a figure, not asserted.
	if took < testBudget {
		t.Errorf("can_do took %s, want at least the %s budget", took, testBudget)
	}
	t.Logf("can_do with one gateway frozen returned after %s (budget %s)", took, testBudget)
	if len(rep.Candidates) != 2 || rep.Metadata.ResponsesReceived != 2 || rep.Metadata.PeersConsulted != 3 ||
		rep.Metadata.PartitionState != fleet.StateSuspected {
		t.Fatalf("report = %+v %+v", rep.Candidates, rep.Metadata.MeshMetadata)
	}
	if len(rep.Blocked) != 1 || rep.Blocked[0].DeviceID != "gw3" || rep.Blocked[0].Permission != promcp.SourceUnreachable {
		t.Fatalf("blocked = %+v", rep.Blocked)
	}
	for _, c := range rep.Candidates {
		if c.DeviceID == "gw3" {
			t.Fatalf("the slow gateway's candidate is in the report: %+v", c)
		}
	}
	// Its answer comes after the budget: counted as dropped, never returned.
	release()
	eventually(t, 2*time.Minute, "the late answer counted", func() bool { return v.LateAnswers() == 1 })

	// Once it answers in time again, all three are back; and the fan-out
	// ends as soon as all have answered, long before the budget.
	start = time.Now()
	rep = v.CanDo(t.Context(), promcp.CanDoRequest{Intent: promcp.Intent{Action: "do_set_pump"}}, "")
	if len(rep.Candidates) != 3 || !raceEnabled && time.Since(start) >= testBudget {
		t.Errorf("after release: %d candidates in %s", len(rep.Candidates), time.Since(start))
	}
}

// One gateway whose own can_do is stuck (a slow bus) answers within its
// share of the coordinator's budget, saying it did not finish: the
// coordinator hears from it before the budget, blocks it with that reason
// and does not take it for a partition.
func TestFleetCanDoAnswersWithinShare(t *testing.T) {
	_, gws, v := fleetOf(t, "hub1", "north", "north")
	stuck := gws[1]
	release := stuck.local.Hold("can_do")
	defer release()
	rep := v.CanDo(t.Context(), promcp.CanDoRequest{Intent: promcp.Intent{Action: "do_set_pump"}}, "")
	mm := rep.Metadata.MeshMetadata
	if mm.ResponsesReceived != 2 || mm.PartitionState != fleet.StateHealthy || len(rep.Candidates) != 1 {
		t.Fatalf("report = %+v %+v", rep.Candidates, mm)
	}
	if len(rep.Blocked) != 1 || rep.Blocked[0].DeviceID != "gw2" || !strings.Contains(rep.Blocked[0].Reason, "within its share") {
		t.Fatalf("blocked = %+v", rep.Blocked)
	}
	if n := stuck.member.SlowAnswers(); n != 1 {
		t.Errorf("SlowAnswers = %d, want 1", n)
	}
}

// A routed do_* whose answer is lost is partial with the same key and is
// not retried; the same key later returns the gateway's one outcome.
func TestFleetRoutedDoLostReply(t *testing.T) {
	_, gws, v := fleetOf(t, "hub1", "north")
	g := gws[0]
	_, url := endpoint(t, v, fleet.EndpointConfig{Version: "test", CallTimeout: 300 * time.Millisecond})
	c := mcpClient(t, url+"/mcp/gw1", nil)
	release := g.local.Hold("do_set_pump")
	var do promcp.DoResult
	call(t, c, "do_gw1_set_pump", map[string]any{"value": true, "idempotency_key": "lost-1"}, &do)
	if do.Status != promcp.StatusPartial || do.IdempotencyKey != "lost-1" || !strings.Contains(do.Reason, `same idempotency_key "lost-1"`) {
		t.Fatalf("lost reply = %+v", do)
	}
	release()
	// The held call now runs once on the gateway; the same key returns its outcome.
	eventually(t, 2*time.Minute, "the same key answered by the gateway", func() bool {
		var again promcp.DoResult
		call(t, c, "do_gw1_set_pump", map[string]any{"value": true, "idempotency_key": "lost-1"}, &again)
		return again.Status == promcp.StatusSuccess && again.Replayed
	})

	// A gateway that is gone (its process and leaf stopped, its entry
	// still registered): the call is not delivered, and says so.
	g.leaf.Shutdown()
	// (Until the hub has dropped the leaf's interest the call may time out:
	// partial, with the same key, which is safe to repeat.)
	eventually(t, 2*time.Minute, "a call to a gateway that is gone fails as source_unreachable", func() bool {
		var gone promcp.DoResult
		call(t, c, "do_gw1_set_pump", map[string]any{"value": false, "idempotency_key": "gone-1"}, &gone)
		if gone.Status != promcp.StatusPartial && (gone.Status != promcp.StatusFailed || gone.Permission != promcp.SourceUnreachable) {
			t.Fatalf("call to a gateway that is gone = %+v", gone)
		}
		return gone.Status == promcp.StatusFailed
	})
}
