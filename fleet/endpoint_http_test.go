package fleet_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/fleet"
	"github.com/promcp/promcp-device/server"
)

const fleetInit = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// post sends body to url (with origin and session when not "") and
// returns the status, the session id header and the body.
func post(t *testing.T, url, origin, session, body string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header.Get("Mcp-Session-Id"), string(b)
}

func openSession(t *testing.T, url string) string {
	t.Helper()
	code, sid, body := post(t, url, "", "", fleetInit)
	if code != http.StatusOK || sid == "" {
		t.Fatalf("initialize on %s: status %d, session %q: %s", url, code, sid, body)
	}
	return sid
}

const fleetList = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`

// TestFleetEndpointHTTPProtections: the fleet endpoint (a hub's, over a
// real NATS hub and gateway) is served behind a gateway's own HTTP
// protections: a foreign browser Origin is refused with 403 on /mcp, on a
// gateway's group and for the mesh methods; sessions are capped over /mcp
// and every group together, the least recently used idle one ended to make
// room; idle sessions expire (sooner when never used after initialize);
// an oversized body gets 413; a group no gateway serves is 404.
func TestFleetEndpointHTTPProtections(t *testing.T) {
	_, _, v := fleetOf(t, "hub1", "north")
	clk := clock.NewManual(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	const idle, firstIdle = 10 * time.Minute, 2 * time.Minute
	_, base := endpoint(t, v, fleet.EndpointConfig{HTTP: server.HTTPConfig{
		AllowedOrigins: []string{"https://console.example"}, MaxBodyBytes: 64 << 10, Now: clk.Now,
		Sessions: server.SessionLimits{Total: 2, PerCaller: 2, IdleTTL: idle, FirstIdleTTL: firstIdle}}})
	root, group := base+"/mcp", base+"/mcp/gw1"

	// Origin: foreign refused before anything runs, allowed and loopback served.
	for _, u := range []string{root, group} {
		for _, body := range []string{fleetInit, `{"jsonrpc":"2.0","id":3,"method":"physmcp/mesh_status"}`} {
			if code, _, _ := post(t, u, "https://evil.example", "", body); code != http.StatusForbidden {
				t.Errorf("%s from a foreign origin on %s: status %d, want 403", body[:40], u, code)
			}
		}
	}
	if code, _, _ := post(t, root, "https://console.example", "", `{"jsonrpc":"2.0","id":3,"method":"physmcp/mesh_status"}`); code != http.StatusOK {
		t.Errorf("mesh_status from an allowed origin: status %d, want 200", code)
	}
	if code, _, _ := post(t, group, "http://127.0.0.1:9", "", `{"jsonrpc":"2.0","id":3,"method":"physmcp/list_peers"}`); code != http.StatusOK {
		t.Errorf("list_peers from a loopback origin: status %d, want 200", code)
	}

	// Session caps, counted over /mcp and /mcp/gw1: the third session
	// takes the place of the least recently used idle one.
	a := openSession(t, root)
	clk.Advance(time.Second)
	b := openSession(t, group)
	clk.Advance(time.Second)
	if code, _, _ := post(t, group, "", b, fleetList); code != http.StatusOK {
		t.Fatalf("tools/list on the group's session: status %d", code)
	}
	c := openSession(t, group)
	if code, _, _ := post(t, root, "", a, fleetList); code != http.StatusNotFound {
		t.Errorf("the least recently used session after a third was opened at cap 2: status %d, want 404", code)
	}
	if code, _, _ := post(t, group, "", b, fleetList); code != http.StatusOK {
		t.Errorf("the session used last, at the cap: status %d, want 200", code)
	}
	// A session belongs to the endpoint that opened it.
	if code, _, _ := post(t, root, "", b, fleetList); code != http.StatusNotFound {
		t.Errorf("the group's session on /mcp: status %d, want 404", code)
	}

	// Idle expiry: c, never used after initialize, ends after firstIdle;
	// b, used, lives until idle.
	clk.Advance(firstIdle)
	openSession(t, root) // any request sweeps
	if code, _, _ := post(t, group, "", c, fleetList); code != http.StatusNotFound {
		t.Errorf("a session unused for %v after initialize: status %d, want 404", firstIdle, code)
	}
	if code, _, _ := post(t, group, "", b, fleetList); code != http.StatusOK {
		t.Errorf("a used session idle for %v: status %d, want 200", firstIdle, code)
	}
	clk.Advance(idle)
	openSession(t, root)
	if code, _, _ := post(t, group, "", b, fleetList); code != http.StatusNotFound {
		t.Errorf("a session idle for %v: status %d, want 404", idle, code)
	}

	// Body limit, and a group nobody serves.
	big := `{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"pad":"` + strings.Repeat("x", 65<<10) + `"}}`
	if code, _, _ := post(t, group, "", "", big); code != http.StatusRequestEntityTooLarge {
		t.Errorf("a body over the limit: status %d, want 413", code)
	}
	if code, _, _ := post(t, base+"/mcp/gw9", "", "", fleetInit); code != http.StatusNotFound {
		t.Errorf("a group no gateway serves: status %d, want 404", code)
	}
}

// TestFleetMeshShapes: the fleet endpoint's mesh methods and a standalone
// gateway's answer in the same shape (the same JSON members), and the
// standalone one says it is a mesh of one.
func TestFleetMeshShapes(t *testing.T) {
	_, gws, v := fleetOf(t, "hub1", "north")
	_, base := endpoint(t, v, fleet.EndpointConfig{})
	srv, err := server.New("promcp-device/alone", "test", server.WithMeshSelf(server.MeshSelf{ID: "alone",
		PhysMCPVersion: fleet.PhysMCPVersion, PromcpVersion: fleet.PromcpVersion}))
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.HTTPHandler(server.HTTPConfig{}))
	t.Cleanup(hs.Close)
	alone := hs.URL + "/mcp"
	for _, method := range []string{server.MethodListPeers, server.MethodMeshStatus} {
		fleetAns := rpcMembers(t, base+"/mcp", method)
		aloneAns := rpcMembers(t, alone, method)
		if strings.Join(fleetAns, ",") != strings.Join(aloneAns, ",") {
			t.Errorf("%s: the fleet endpoint answers %v, a standalone gateway %v", method, fleetAns, aloneAns)
		}
	}
	// A gateway's manifest in a fleet is its registry entry: the same
	// members as a standalone gateway's.
	b, _ := json.Marshal(fleet.Mesh{View: v, Member: gws[0].member}.Manifest())
	var in map[string]any
	_ = json.Unmarshal(b, &in)
	aloneMan := rpcMembers(t, alone, server.MethodManifest)
	for _, k := range aloneMan {
		if _, ok := in[k]; !ok && k != "zone" && k != "tags" && k != "locations" && k != "vocabulary" {
			t.Errorf("physmcp/manifest: a standalone gateway answers %q, a fleet gateway's entry has no such member: %s", k, b)
		}
	}
}

// optional are the members left out when empty (omitempty).
var optional = []string{"zone", "tags", "locations", "vocabulary"}

// rpcMembers asks url for method and lists the members of its result, and
// of the result's first peer (as peers.NAME), optional ones left out.
func rpcMembers(t *testing.T, url, method string) []string {
	t.Helper()
	var ans struct {
		Result map[string]json.RawMessage `json:"result"`
	}
	rpc(t, url, method, &ans)
	if ans.Result == nil {
		t.Fatalf("%s on %s: no result", method, url)
	}
	var keys []string
	for k, v := range ans.Result {
		if slices.Contains(optional, k) {
			continue
		}
		keys = append(keys, k)
		var peers []map[string]any
		if k == "peers" && json.Unmarshal(v, &peers) == nil && len(peers) > 0 {
			for pk := range peers[0] {
				if !slices.Contains(optional, pk) {
					keys = append(keys, "peers."+pk)
				}
			}
		}
	}
	slices.Sort(keys)
	return keys
}
