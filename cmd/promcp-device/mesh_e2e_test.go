package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"testing"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// meshCall sends PhysMCP's method (physmcp/...) on the session's own
// transport, as a client of the mesh would, and decodes its result.
func (s *session) meshCall(method string, id int64, out any) *mcp.JSONRPCErrorDetails {
	s.t.Helper()
	res, err := s.c.GetTransport().SendRequest(s.t.Context(), transport.JSONRPCRequest{JSONRPC: "2.0", ID: mcp.NewRequestId(id), Method: method})
	if err != nil {
		s.t.Fatalf("%s: %v", method, err)
	}
	if res.Error != nil {
		return res.Error
	}
	if err := json.Unmarshal(res.Result, out); err != nil {
		s.t.Fatalf("%s: %v in %s", method, err, res.Result)
	}
	return nil
}

// meshOfOne is what the mesh methods of a standalone gateway say.
type meshOfOne struct {
	Peers []struct {
		DeviceID string   `json:"device_id"`
		Status   string   `json:"status"`
		Hash     string   `json:"capabilities_hash"`
		Tools    []string `json:"tools"`
	} `json:"peers"`
	Node           string `json:"node"`
	Role           string `json:"role"`
	PartitionState string `json:"partition_state"`
	MeshSize       int    `json:"mesh_size"`
	Reachable      int    `json:"reachable"`
	Quorum         struct {
		AlivePeers int    `json:"alive_peers"`
		Basis      string `json:"basis"`
	} `json:"quorum"`
}

// checkMeshOfOne checks physmcp/list_peers and physmcp/mesh_status of a
// standalone gateway id serving tools.
func checkMeshOfOne(t *testing.T, peers, status meshOfOne, id string, tools []string) {
	t.Helper()
	if len(peers.Peers) != 1 || peers.Peers[0].DeviceID != id || peers.Peers[0].Status != "alive" ||
		!slices.Equal(peers.Peers[0].Tools, tools) || peers.Peers[0].Hash == "" {
		t.Errorf("list_peers = %+v, want %s alone, alive, with %v", peers, id, tools)
	}
	if status.Node != id || status.Role != "standalone" || status.PartitionState != "healthy" || status.MeshSize != 1 ||
		status.Reachable != 1 || status.Quorum.AlivePeers != 1 || status.Quorum.Basis == "" || len(status.Peers) != 1 {
		t.Errorf("mesh_status = %+v, want a standalone, healthy mesh of one with a quorum of 1", status)
	}
}

// A standalone gateway served over stdio answers PhysMCP's mesh methods
// to a real MCP client on the same session, as a mesh of one: itself the
// only peer, alive; standalone and healthy, a quorum counted over itself
// (and the §6 quorum of 3 refused, as the policy says); its own manifest.
// An unknown physmcp/ method is "method not found"; MCP goes on.
func TestServeMeshOfOneStdio(t *testing.T) {
	t.Parallel()
	s := stdioSession(t, protocols[0], "--manifest", physmcp53)
	var tools []string
	for _, tl := range s.tools {
		tools = append(tools, tl.Name)
	}
	slices.Sort(tools)
	var peers, status meshOfOne
	if e := s.meshCall("physmcp/list_peers", 901, &peers); e != nil {
		t.Fatalf("physmcp/list_peers: %+v", e)
	}
	if e := s.meshCall("physmcp/mesh_status", 902, &status); e != nil {
		t.Fatalf("physmcp/mesh_status: %+v", e)
	}
	checkMeshOfOne(t, peers, status, "node_hvac_zone3_007", tools)
	var man struct {
		GatewayID string     `json:"gateway_id"`
		Hash      string     `json:"manifest_hash"`
		Physmcp   string     `json:"physmcp_version"`
		Tools     []mcp.Tool `json:"tools"`
	}
	if e := s.meshCall("physmcp/manifest", 903, &man); e != nil {
		t.Fatalf("physmcp/manifest: %+v", e)
	}
	if man.GatewayID != "node_hvac_zone3_007" || man.Hash != peers.Peers[0].Hash || man.Physmcp != "0.1" || len(man.Tools) != len(tools) {
		t.Errorf("manifest = %s %s %s, %d tools; want node_hvac_zone3_007, the list_peers hash, 0.1, %d tools",
			man.GatewayID, man.Hash, man.Physmcp, len(man.Tools), len(tools))
	}
	if e := s.meshCall("physmcp/gossip", 904, &struct{}{}); e == nil || e.Code != mcp.METHOD_NOT_FOUND {
		t.Errorf("physmcp/gossip: error %+v, want method not found", e)
	}
	if r, isErr := s.call("read_temperature_zone_3", map[string]any{}); isErr || r["quality"] != "good" {
		t.Errorf("a read after the mesh methods = %v", r)
	}
}

// Over HTTP the same answers, behind the gateway's Origin check.
func TestServeMeshOfOneHTTP(t *testing.T) {
	t.Parallel()
	p := startServe(t, "--manifest", physmcp53)
	s := httpSession(t, p.url, protocols[0])
	var tools []string
	for _, tl := range s.tools {
		tools = append(tools, tl.Name)
	}
	slices.Sort(tools)
	var peers, status meshOfOne
	for method, out := range map[string]*meshOfOne{"physmcp/list_peers": &peers, "physmcp/mesh_status": &status} {
		if code, body := postRPC(t, p.url, "", method); code != http.StatusOK || json.Unmarshal(body, &struct {
			Result *meshOfOne `json:"result"`
		}{out}) != nil {
			t.Fatalf("%s over HTTP: status %d: %s", method, code, body)
		}
	}
	checkMeshOfOne(t, peers, status, "node_hvac_zone3_007", tools)
	if code, body := postRPC(t, p.url, "https://evil.example", "physmcp/manifest"); code != http.StatusForbidden {
		t.Errorf("physmcp/manifest from a foreign origin: status %d, want 403: %s", code, body)
	}
}

// postRPC posts a JSON-RPC request for method (with origin when not "").
func postRPC(t *testing.T, url, origin, method string) (int, []byte) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": method})
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}
