package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/promcp/promcp-device/server"
	"github.com/promcp/promcp-device/server/servertest"
)

// meshPost posts a physmcp/ request to url with token (none when "") and
// returns the status and the decoded body.
func meshPost(t *testing.T, url, token, method string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":"m1","method":"`+method+`"}`))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	b, _ := io.ReadAll(res.Body)
	_ = json.Unmarshal(b, &out)
	return res.StatusCode, out
}

// fixedMesh is a fleet's mesh as a test sets it.
type fixedMesh struct{}

func (fixedMesh) ListPeers(context.Context) server.MeshPeers {
	return server.MeshPeers{Peers: []server.MeshPeer{{DeviceID: "gw1", Status: "alive"}, {DeviceID: "gw2", Status: "unreachable"}}}
}
func (fixedMesh) Status(context.Context) server.MeshStatus {
	return server.MeshStatus{Node: "gw1", Role: "edge", PartitionState: "suspected_partition", MeshSize: 2, Reachable: 1}
}
func (fixedMesh) Manifest() any { return map[string]any{"gateway_id": "gw1"} }

// The mesh methods over HTTP: after the bearer check (401 without a token,
// before anything is answered); as a mesh of one on /mcp and on a group
// (the gateway, not the group, is the peer); with the fleet's mesh once
// one is set, on every endpoint; an unknown physmcp/ method is "method not
// found"; no session is needed or opened.
func TestMeshMethodsHTTP(t *testing.T) {
	token, tokens := operatorToken(t, "alice")
	srv := newServer(t, "promcp-device/g1", server.WithMeshSelf(server.MeshSelf{ID: "g1", Zone: "north", PhysMCPVersion: "0.1"}))
	grp, err := srv.Surface("promcp-device/g1/zone1", "")
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.HTTPHandler(server.HTTPConfig{Tokens: tokens, Groups: map[string]*server.Server{"zone1": grp}}))
	t.Cleanup(hs.Close)
	if code, _ := meshPost(t, hs.URL+"/mcp", "", server.MethodMeshStatus); code != http.StatusUnauthorized {
		t.Errorf("mesh_status without a token: status %d, want 401", code)
	}
	for _, u := range []string{hs.URL + "/mcp", hs.URL + "/mcp/zone1"} {
		code, ans := meshPost(t, u, token, server.MethodMeshStatus)
		res, _ := ans["result"].(map[string]any)
		q, _ := res["quorum"].(map[string]any)
		if code != http.StatusOK || ans["id"] != "m1" || res["node"] != "g1" || res["role"] != server.MeshRoleStandalone ||
			res["partition_state"] != server.MeshHealthy || res["mesh_size"] != 1.0 || q["alive_peers"] != 1.0 {
			t.Errorf("mesh_status on %s: %d %v", u, code, ans)
		}
		_, ans = meshPost(t, u, token, server.MethodManifest)
		if res, _ := ans["result"].(map[string]any); res["gateway_id"] != "g1" || res["zone"] != "north" || res["physmcp_version"] != "0.1" {
			t.Errorf("manifest on %s: %v", u, ans)
		}
	}
	srv.SetMesh(fixedMesh{})
	for _, u := range []string{hs.URL + "/mcp", hs.URL + "/mcp/zone1"} {
		_, ans := meshPost(t, u, token, server.MethodListPeers)
		res, _ := ans["result"].(map[string]any)
		if peers, _ := res["peers"].([]any); len(peers) != 2 {
			t.Errorf("list_peers with the fleet's mesh on %s: %v", u, ans)
		}
	}
	_, ans := meshPost(t, hs.URL+"/mcp", token, "physmcp/gossip")
	if e, _ := ans["error"].(map[string]any); e["code"] != -32601.0 {
		t.Errorf("physmcp/gossip: %v, want method not found", ans)
	}
}

// The mesh methods over stdio, interleaved with MCP requests on the same
// stream: each answered once, by id, on whole lines.
func TestMeshMethodsStdio(t *testing.T) {
	srv := newServer(t, "promcp-device/g1", server.WithMeshSelf(server.MeshSelf{ID: "g1"}))
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"physmcp/list_peers"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":4,"method":"physmcp/mesh_status"}`,
		`{"jsonrpc":"2.0","id":5,"method":"physmcp/manifest"}`,
		`{"jsonrpc":"2.0","id":6,"method":"physmcp/manifest","params":{"cursor":"Z3c6ZzI"}}`,
	}, "\n") + "\n"
	pr, pw := io.Pipe()
	var out syncBuffer
	done := make(chan error, 1)
	go func() { done <- srv.ServeStdio(t.Context(), pr, &out, server.Caller{Name: "local", Role: "operator"}) }()
	if _, err := io.WriteString(pw, in); err != nil {
		t.Fatal(err)
	}
	got := map[float64]map[string]any{}
	for len(got) < 6 {
		for _, line := range out.lines() {
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("a line that is not one JSON-RPC message: %q", line)
			}
			if id, ok := m["id"].(float64); ok {
				got[id] = m
			}
		}
		select {
		case err := <-done:
			t.Fatalf("ServeStdio ended: %v", err)
		case <-time.After(10 * time.Millisecond): // polls the output; asserts no duration
		}
	}
	pw.Close()
	<-done
	if p, _ := got[2]["result"].(map[string]any)["peers"].([]any); len(p) != 1 {
		t.Errorf("list_peers over stdio: %v", got[2])
	}
	if r, _ := got[4]["result"].(map[string]any); r["role"] != "standalone" {
		t.Errorf("mesh_status over stdio: %v", got[4])
	}
	if r, _ := got[5]["result"].(map[string]any); r["gateway_id"] != "g1" {
		t.Errorf("manifest over stdio: %v", got[5])
	}
	// A standalone gateway's manifest is one page: a cursor is refused.
	if e, _ := got[6]["error"].(map[string]any); e["code"] != -32602.0 || !strings.Contains(fmt.Sprint(e["message"]), "params.cursor") {
		t.Errorf("manifest with a cursor over stdio: %v", got[6])
	}
	if _, ok := got[3]["result"]; !ok {
		t.Errorf("tools/list between the mesh methods: %v", got[3])
	}
}

// syncBuffer is an output written by the server and read by the test.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) lines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Fields(strings.ReplaceAll(s.b.String(), " ", ""))
}

// A group served through GroupFunc comes and goes; served anew by another
// Server, the sessions opened on the old one end (404) and new ones open.
func TestHTTPGroupFunc(t *testing.T) {
	logs := &servertest.LogBuffer{}
	srv := newServer(t, "root", server.WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	var mu sync.Mutex
	cur := newServer(t, "g-a")
	hs := httptest.NewServer(srv.HTTPHandler(server.HTTPConfig{GroupFunc: func(name string) *server.Server {
		mu.Lock()
		defer mu.Unlock()
		if name != "g" {
			return nil
		}
		return cur
	}}))
	t.Cleanup(hs.Close)
	url := hs.URL + "/mcp/g"
	open := func() string {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(initJSON))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("initialize on %s: %d", url, res.StatusCode)
		}
		return res.Header.Get("Mcp-Session-Id")
	}
	list := func(sid string) int {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(listJSON))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode
	}
	old := open()
	if code := list(old); code != http.StatusOK {
		t.Fatalf("tools/list on the group: %d", code)
	}
	mu.Lock()
	cur = newServer(t, "g-b")
	mu.Unlock()
	// The first request to the new server opens a session (as a client
	// coming back does): it lives, the old server's is ended.
	if code := list(open()); code != http.StatusOK {
		t.Errorf("a new session on the group's new server: %d, want 200", code)
	}
	if code := list(old); code != http.StatusNotFound {
		t.Errorf("a session of the group's old server: %d, want 404", code)
	}
	// The group leaves: 404, and its session ends with it.
	sid := open()
	mu.Lock()
	cur = nil
	mu.Unlock()
	if code := list(sid); code != http.StatusNotFound {
		t.Errorf("a session of a group no longer served: %d, want 404", code)
	}
	if !strings.Contains(logs.String(), `session=`+sid+` endpoint=/mcp/g why="the group is no longer served"`) {
		t.Errorf("no log of the session %s ending with its group; logs:\n%s", sid, logs)
	}
	if code, _ := meshPost(t, hs.URL+"/mcp/gone", "", server.MethodMeshStatus); code != http.StatusNotFound {
		t.Errorf("a group GroupFunc does not serve: %d, want 404", code)
	}
}
