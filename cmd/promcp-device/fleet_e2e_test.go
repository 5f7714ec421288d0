package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/promcp/promcp-device/fleet"
	"github.com/promcp/promcp-device/fleet/natsembed"
	"github.com/promcp/promcp-device/fleet/shared"
	"github.com/promcp/promcp-device/manifests"
)

// Two gateways run by the real binary join a hub as thin-edge members; a
// real MCP client on the fleet endpoint the first one serves asks the
// fleet, reads and acts through a gateway's group, and gets the mesh
// methods. (The hub runs in the test process: the binary the tests build
// has no embedded server; hub and edge need -tags natsserver.)
func TestFleetThroughTheBinary(t *testing.T) {
	t.Parallel()
	// The hub accepts only its own user and the two gateways' (the
	// credentials every fleet file needs unless it says insecure: true).
	hubUser := manifests.FleetUser{User: "hub1", Password: "hub1-test-secret"}
	hub, err := natsembed.StartHub(natsembed.HubConfig{Name: "hub1", Client: "127.0.0.1:0", Leaf: "127.0.0.1:0", StoreDir: t.TempDir(),
		Ping: manifests.FleetPing{Interval: time.Second, MaxMissed: 2}, Users: []manifests.FleetUser{hubUser,
			{User: "gw_a", Password: "gw_a-test-secret"}, {User: "gw_b", Password: "gw_b-test-secret"},
		{User: "gw_d", Password: "gw_d-test-secret"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hub.Shutdown)
	nc, err := natsembed.Connect(hub, "test", natsembed.UserInfo(hubUser)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := fleet.SetupHub(ctx, nc, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := shared.Open(ctx, nc, shared.Config{Gateway: "hub1", Replicas: 1}); err != nil { // as promcp-device hub --replicas 1 does
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("gw_a.credentials", "gw_a\ngw_a-test-secret\n")
	write("gw_b.credentials", "gw_b\ngw_b-test-secret\n")
	fa := write("gw_a.yml", "version: 1\nrole: thin-edge\ngateway: gw_a\nzone: north\nhubs: ["+hub.ClientURL()+"]\nhttp: 127.0.0.1:0\ncredentials: gw_a.credentials\n")
	fb := write("gw_b.yml", "version: 1\nrole: thin-edge\ngateway: gw_b\nzone: south\nhubs: ["+hub.ClientURL()+"]\ncredentials: gw_b.credentials\n")
	url := startPrinting(t, `fleet endpoint .* on (http://\S+/mcp)`,
		"serve", "--sim", "--manifest", greenhouse, "--http", "127.0.0.1:0", "--log-level", "warn", "--fleet", fa)
	startHTTP(t, "--manifest", greenhouse, "--fleet", fb)
	// A third gateway whose password the hub does not know: it keeps
	// serving its own endpoint, says in its log that the hub refused its
	// credentials, and never joins (the fleet below counts two gateways).
	write("gw_c.credentials", "gw_c\nguessed\n")
	fc := write("gw_c.yml", "version: 1\nrole: thin-edge\ngateway: gw_c\nzone: north\nhubs: ["+hub.ClientURL()+"]\ncredentials: gw_c.credentials\n")
	gwc := startLogged(t, "--manifest", greenhouse, "--fleet", fc)
	for refused := time.Now().Add(20 * time.Second); !strings.Contains(gwc.logText(), "the hub refused this gateway's credentials"); {
		if time.Now().After(refused) {
			t.Fatalf("gw_c with a wrong password logged no refusal:\n%s", gwc.logText())
		}
		select { // poll its log
		case <-time.After(100 * time.Millisecond):
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		}
	}

	root := httpSession(t, url, mcp.LATEST_PROTOCOL_VERSION)
	var rep map[string]any
	deadline := time.Now().Add(30 * time.Second)
	for {
		rep, _ = root.call("can_do", map[string]any{"intent": map[string]any{"action": "do_set_heater", "value": true}})
		meta, _ := rep["metadata"].(map[string]any)
		if meta["responses_received"] == 2.0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the fleet never reached both gateways: %v", rep)
		}
		select { // poll until both gateways have registered
		case <-time.After(200 * time.Millisecond):
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		}
	}
	meta := rep["metadata"].(map[string]any)
	if meta["coordinator_node"] != "gw_a" || meta["peers_consulted"] != 2.0 || meta["mesh_size_estimate"] != 2.0 || meta["partition_state"] != "healthy" {
		t.Errorf("metadata = %v", meta)
	}
	sources := map[string]bool{}
	for _, c := range rep["candidates"].([]any) {
		cand := c.(map[string]any)
		sources[cand["source"].(string)] = true
		if !strings.HasPrefix(cand["capability"].(string), "do_"+cand["device_id"].(string)+"_") {
			t.Errorf("candidate %v: capability not under its gateway's name", cand)
		}
	}
	if !sources["gw_a/heater_relay"] || !sources["gw_b/heater_relay"] {
		t.Errorf("candidate sources = %v, want gw_a/heater_relay and gw_b/heater_relay", sources)
	}

	// gw_b's tools come in groups within the density limits.
	g := httpSession(t, strings.TrimSuffix(url, "/mcp")+"/mcp/gw_b", mcp.LATEST_PROTOCOL_VERSION)
	dos := 0
	for _, tl := range g.tools {
		if strings.HasPrefix(tl.Name, "do_") {
			dos++
		}
	}
	if len(g.tools) > 8 || dos > 5 || len(g.tools) < 2 {
		t.Fatalf("group gw_b serves %d tools, %d do_*", len(g.tools), dos)
	}
	var read string
	for _, tl := range g.tools {
		if strings.HasPrefix(tl.Name, "read_gw_b_") {
			read = tl.Name
			break
		}
	}
	body, isErr := g.call(read, nil)
	if isErr || body["quality"] == "error" {
		t.Errorf("%s through the fleet = %v", read, body)
	}

	// An action through the fleet: decided and run by gw_b, once per key.
	acted := false
	for _, name := range []string{"gw_b", "gw_b_2", "gw_b_3"} {
		gs := httpSession(t, strings.TrimSuffix(url, "/mcp")+"/mcp/"+name, mcp.LATEST_PROTOCOL_VERSION)
		found := false
		for _, tl := range gs.tools {
			found = found || tl.Name == "do_gw_b_set_heater"
		}
		if !found {
			continue
		}
		args := map[string]any{"value": false, "idempotency_key": "fleet-e2e-1"}
		first, _ := gs.call("do_gw_b_set_heater", args)
		again, _ := gs.call("do_gw_b_set_heater", args)
		if first["status"] != "success" || again["status"] != "success" || again["replayed"] != true {
			t.Errorf("do_gw_b_set_heater through the fleet: %v, then %v", first, again)
		}
		acted = true
		break
	}
	if !acted {
		t.Fatal("no group of gw_b serves do_gw_b_set_heater")
	}

	// The mesh methods answer on the fleet endpoint.
	req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "physmcp/mesh_status"})
	resp, err := http.Post(url, "application/json", bytes.NewReader(req))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct {
		Result fleet.MeshStatus `json:"result"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || st.Result.MeshSize != 2 || st.Result.Reachable != 2 ||
		st.Result.Quorum.AlivePeers != 2 {
		t.Errorf("mesh_status = %+v, %v", st.Result, err)
	}
	// The fleet endpoint is behind a gateway's Origin check: a foreign
	// browser origin is refused, on /mcp (mesh methods included) and on a
	// gateway's group.
	for _, u := range []string{url, url + "/gw_b"} {
		if code, body := postRPC(t, u, "https://evil.example", "physmcp/mesh_status"); code != http.StatusForbidden {
			t.Errorf("physmcp/mesh_status on %s from a foreign origin: status %d, want 403: %s", u, code, body)
		}
	}

	// A gateway joined over stdio answers the mesh methods with the
	// fleet's view, on its MCP client's own session.
	write("gw_d.credentials", "gw_d\ngw_d-test-secret\n")
	fd := write("gw_d.yml", "version: 1\nrole: thin-edge\ngateway: gw_d\nzone: west\nhubs: ["+hub.ClientURL()+"]\ncredentials: gw_d.credentials\n")
	sd := stdioSession(t, mcp.LATEST_PROTOCOL_VERSION, "--manifest", greenhouse, "--fleet", fd)
	var ms fleet.MeshStatus
	for deadline := time.Now().Add(30 * time.Second); ; {
		if e := sd.meshCall("physmcp/mesh_status", 950, &ms); e != nil {
			t.Fatalf("physmcp/mesh_status over stdio with --fleet: %+v", e)
		}
		if ms.MeshSize == 3 && ms.Reachable == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("mesh_status over stdio never counted gw_d: %+v", ms)
		}
		select { // poll until gw_d has registered
		case <-time.After(200 * time.Millisecond):
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		}
	}
	if ms.Node != "gw_d" || ms.Role != "thin-edge" || ms.Reachable != 3 || ms.Quorum.AlivePeers != 3 {
		t.Errorf("mesh_status over stdio with --fleet = %+v", ms)
	}
}
