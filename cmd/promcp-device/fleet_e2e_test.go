//go:build !nofleet

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
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
	// The fleet's keys and certificates, by the binary: the hub accepts
	// its own nkey and the two gateways', over TLS only.
	dir := t.TempDir()
	fdir := filepath.Join(dir, "fleet")
	if out, err := exec.Command(binary, "fleet", "init", fdir, "--hubs", "hub1", "--gateways", "gw_a").CombinedOutput(); err != nil {
		t.Fatalf("fleet init: %v\n%s", err, out)
	}
	if out, err := exec.Command(binary, "fleet", "init", fdir, "--hubs", "hub1").CombinedOutput(); err == nil || !strings.Contains(string(out), "refusing to overwrite") {
		t.Fatalf("fleet init over a fleet: %v\n%s", err, out)
	}
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	hf, err := manifests.LoadFleet(write("hub1.yml", "version: 1\nrole: hub\ngateway: hub1\nlisten: {client: 127.0.0.1:0, cluster: 127.0.0.1:0, leaf: 127.0.0.1:0}\n"+
		"http: 127.0.0.1:0\nidentity: fleet/hub1/hub1.nk\nca: fleet/hub1/ca.crt\ncert: fleet/hub1/hub1.crt\nkey: fleet/hub1/hub1.key\nidentities: fleet/identities\n"))
	if err != nil {
		t.Fatal(err)
	}
	hcfg := natsembed.HubFromFleet(hf)
	hcfg.Cluster, hcfg.StoreDir, hcfg.Ping = "", t.TempDir(), manifests.FleetPing{Interval: time.Second, MaxMissed: 2} // a lone member
	hub, err := natsembed.StartHub(hcfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hub.Shutdown)
	nc, err := natsembed.ConnectSelf(hub, hcfg)
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
	gwFile := func(id, zone, extra string) string {
		return write(id+".yml", "version: 1\nrole: thin-edge\ngateway: "+id+"\nzone: "+zone+"\nhubs: ["+hub.ClientURL()+"]\n"+extra+
			"identity: fleet/"+id+"/"+id+".nk\nca: fleet/"+id+"/ca.crt\n")
	}
	fa := gwFile("gw_a", "north", "http: 127.0.0.1:0\n")
	// gw_b is added while the hub runs: the hub reloads the identities.
	if out, err := exec.Command(binary, "fleet", "add-gateway", fdir, "gw_b").CombinedOutput(); err != nil || !strings.Contains(string(out), "identity: gw_b/gw_b.nk") {
		t.Fatalf("fleet add-gateway: %v\n%s", err, out)
	}
	fb := gwFile("gw_b", "south", "")
	// gw_a's simulation starts a week ago: its fleet runs on that clock too.
	simStart := time.Now().Add(-7 * 24 * time.Hour)
	url := startPrinting(t, `fleet endpoint .* on (http://\S+/mcp)`,
		"serve", "--sim", "--sim-start", simStart.Format(time.RFC3339), "--manifest", greenhouse, "--http", "127.0.0.1:0", "--log-level", "warn", "--fleet", fa)
	startHTTP(t, "--manifest", greenhouse, "--fleet", fb)
	// A third gateway with another fleet's identity: it keeps serving its
	// own endpoint, says in its log that the hub refused its identity,
	// and never joins (the fleet below counts two gateways).
	if out, err := exec.Command(binary, "fleet", "init", filepath.Join(dir, "other"), "--hubs", "x", "--gateways", "gw_c").CombinedOutput(); err != nil {
		t.Fatalf("fleet init: %v\n%s", err, out)
	}
	fc := write("gw_c.yml", "version: 1\nrole: thin-edge\ngateway: gw_c\nzone: north\nhubs: ["+hub.ClientURL()+"]\nidentity: other/gw_c/gw_c.nk\nca: fleet/gw_a/ca.crt\n")
	gwc := startLogged(t, "--manifest", greenhouse, "--fleet", fc)
	for refused := time.Now().Add(20 * time.Second); !strings.Contains(gwc.logText(), "the hub refused this gateway's identity"); {
		if time.Now().After(refused) {
			t.Fatalf("gw_c with another fleet's identity logged no refusal:\n%s", gwc.logText())
		}
		select { // poll its log
		case <-time.After(100 * time.Millisecond):
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		}
	}

	root := httpSession(t, url, mcp.LATEST_PROTOCOL_VERSION)
	var rep map[string]any
	deadline := time.Now().Add(2 * time.Minute)
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
	// One clock: the fleet can_do gw_a coordinates is stamped on gw_a's
	// (simulated) clock, a week behind the real one, not on real time.
	if ts, err := time.Parse(time.RFC3339Nano, fmt.Sprint(meta["timestamp"])); err != nil || !ts.Before(simStart.Add(24*time.Hour)) {
		t.Errorf("fleet can_do stamped %v (%v), want gw_a's simulated clock (started at %s)", meta["timestamp"], err, simStart.Format(time.RFC3339))
	}
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

	checkManifestPages(t, url, []string{"gw_a", "gw_b"})

	// audit tail --fleet dials the hub as a hub member, over TLS; without
	// the member's identity the hub refuses it.
	if _, errOut, code := runCLI(t, "audit", "tail", "--fleet", "--nats", hub.ClientURL(), "--identity", filepath.Join(fdir, "hub1", "hub1.nk"),
		"--ca", filepath.Join(fdir, "ca.crt"), "-n", "5"); code != 0 {
		t.Errorf("audit tail --fleet as hub1: exit %d: %s", code, errOut)
	}
	if _, errOut, code := runCLI(t, "audit", "tail", "--fleet", "--nats", hub.ClientURL(), "-n", "5", "--timeout", "3s"); code != 1 {
		t.Errorf("audit tail --fleet without an identity: exit %d: %s; want 1", code, errOut)
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
	if out, err := exec.Command(binary, "fleet", "add-gateway", fdir, "gw_d").CombinedOutput(); err != nil {
		t.Fatalf("fleet add-gateway gw_d: %v\n%s", err, out)
	}
	fd := gwFile("gw_d", "west", "")
	sd := stdioSession(t, mcp.LATEST_PROTOCOL_VERSION, "--manifest", greenhouse, "--fleet", fd)
	var ms fleet.MeshStatus
	for deadline := time.Now().Add(3 * time.Minute); ; {
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

// manifestRPC posts physmcp/manifest with params to the fleet endpoint
// url and decodes the answer.
func manifestRPC(t *testing.T, url string, params map[string]any) (page fleet.ManifestPage, rpcErr *mcp.JSONRPCErrorDetails) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 31, "method": "physmcp/manifest", "params": params})
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ans struct {
		Result *fleet.ManifestPage      `json:"result"`
		Error  *mcp.JSONRPCErrorDetails `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&ans); err != nil {
		t.Fatalf("physmcp/manifest %v: %v", params, err)
	}
	if ans.Result != nil {
		page = *ans.Result
	}
	return page, ans.Error
}

// checkManifestPages pages through physmcp/manifest on the fleet
// endpoint url one gateway a page, and checks it lists want in id order
// and refuses a bad cursor and a bad limit by their parameter.
func checkManifestPages(t *testing.T, url string, want []string) {
	t.Helper()
	var got []string
	params := map[string]any{"limit": 1}
	for range len(want) + 1 {
		page, e := manifestRPC(t, url, params)
		if e != nil {
			t.Fatalf("physmcp/manifest %v: %+v", params, e)
		}
		if len(page.Gateways) != 1 || page.Total != len(want) {
			t.Fatalf("physmcp/manifest %v: %d gateways of %d, want 1 of %d", params, len(page.Gateways), page.Total, len(want))
		}
		got = append(got, page.Gateways[0].GatewayID)
		if page.NextCursor == "" {
			break
		}
		params = map[string]any{"limit": 1, "cursor": page.NextCursor}
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("physmcp/manifest pages list %v, want %v", got, want)
	}
	if page, e := manifestRPC(t, url, nil); e != nil || len(page.Gateways) != len(want) || page.NextCursor != "" {
		t.Errorf("physmcp/manifest without params (default page size): %+v, %+v", page, e)
	}
	for _, bad := range []struct {
		params map[string]any
		names  string
	}{
		{map[string]any{"cursor": "not a cursor!"}, "params.cursor"},
		{map[string]any{"cursor": "Z3c6Li4v"}, "params.cursor"}, // "gw:../": no gateway id
		{map[string]any{"limit": 0}, "params.limit"},
		{map[string]any{"limit": 501}, "params.limit"},
		{map[string]any{"page": 2}, "params"},
	} {
		_, e := manifestRPC(t, url, bad.params)
		if e == nil || e.Code != mcp.INVALID_PARAMS || !strings.Contains(e.Message, bad.names) {
			t.Errorf("physmcp/manifest %v: %+v; want invalid params naming %s", bad.params, e, bad.names)
		}
	}
}
