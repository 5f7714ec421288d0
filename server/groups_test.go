package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/promcp/promcp-device/promcp"
	"github.com/promcp/promcp-device/server"
)

// groupsFixture serves a gateway at /mcp and two surfaces of it at
// /mcp/zone1 and /mcp/zone2, behind bearer tokens; do_set_pump is on /mcp
// and zone1, with one handler counting its runs.
type groupsFixture struct {
	base, token string
	runs        atomic.Int32
}

func newGroupsFixture(t *testing.T) *groupsFixture {
	t.Helper()
	f := &groupsFixture{}
	srv := newServer(t, "gw")
	pump := server.DoTool{Name: "do_set_pump", Description: "Run or stop the pump.", Value: map[string]any{"type": "boolean"},
		SideEffects: []string{"water flows"}, Compensable: true}
	act := func(_ context.Context, req server.DoRequest) (promcp.DoResult, error) {
		f.runs.Add(1)
		return promcp.DoResult{Status: promcp.StatusSuccess, AppliedValue: req.Value}, nil
	}
	read := func(name string) (server.ReadTool, server.ReadHandler) {
		return server.ReadTool{Name: name, Description: "A level.", Unit: "%", Value: map[string]any{"type": "number"}},
			func(context.Context, server.ReadRequest) (promcp.ReadResult, error) {
				return promcp.ReadResult{Value: 1.0, Unit: "%", Quality: promcp.QualityGood}, nil
			}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(srv.Read(read("read_level_zone1")))
	must(srv.Read(read("read_level_zone2")))
	must(srv.Do(pump, act))
	zone1, err := srv.Surface("gw/zone1", "")
	must(err)
	must(zone1.Read(read("read_level_zone1")))
	must(zone1.Do(pump, act))
	zone2, err := srv.Surface("gw/zone2", "")
	must(err)
	must(zone2.Read(read("read_level_zone2")))
	var tokens *server.Tokens
	f.token, tokens = operatorToken(t, "alice")
	// Names that are no plain path segment are not served (and do not
	// panic the mux): "" would serve every path under /mcp/.
	ts := httptest.NewServer(srv.HTTPHandler(server.HTTPConfig{Tokens: tokens,
		Groups: map[string]*server.Server{"zone1": zone1, "zone2": zone2, "": zone2, "{x}": zone2, "a/b": zone2}}))
	t.Cleanup(ts.Close)
	f.base = ts.URL
	return f
}

func (f *groupsFixture) client(t *testing.T, path string) *client.Client {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(f.base+path, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + f.token}))
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr)
	t.Cleanup(func() { c.Close() })
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(t.Context(), mcp.InitializeRequest{}); err != nil {
		t.Fatalf("initialize at %s: %v", path, err)
	}
	return c
}

func toolNames(t *testing.T, c *client.Client) []string {
	t.Helper()
	res, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// TestGroupEndpoints: each group endpoint lists its own tools, a do_* key
// spent on one surface replays on another (one idempotency store), and a
// session of one endpoint is unknown (404) on every other.
func TestGroupEndpoints(t *testing.T) {
	f := newGroupsFixture(t)
	all := f.client(t, "/mcp")
	z1 := f.client(t, "/mcp/zone1")
	z2 := f.client(t, "/mcp/zone2")
	for _, tc := range []struct {
		c    *client.Client
		want string
	}{{all, "do_set_pump read_level_zone1 read_level_zone2"}, {z1, "do_set_pump read_level_zone1"}, {z2, "read_level_zone2"}} { // sorted by name
		if got := strings.Join(toolNames(t, tc.c), " "); got != tc.want {
			t.Errorf("tools %q, want %q", got, tc.want)
		}
	}
	call := func(c *client.Client) promcp.DoResult {
		res, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "do_set_pump",
			Arguments: map[string]any{"value": true, "idempotency_key": "k-1"}}})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(res.StructuredContent)
		var r promcp.DoResult
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := call(z1); r.Status != promcp.StatusSuccess {
		t.Fatalf("do_set_pump on zone1: %+v", r)
	}
	if r := call(all); r.Status != promcp.StatusSuccess || f.runs.Load() != 1 {
		t.Fatalf("the same key on /mcp: %+v after %d runs; want the replay of the one run", r, f.runs.Load())
	}
	if _, err := z2.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "do_set_pump",
		Arguments: map[string]any{"value": true}}}); err == nil {
		t.Error("do_set_pump called through zone2, which does not serve it")
	}

	// A session opened at zone1 works there and is unknown (404) on the
	// other endpoints, for every method.
	send := func(m, path, session, body string) (int, string) {
		req, _ := http.NewRequestWithContext(t.Context(), m, f.base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+f.token)
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if m != http.MethodGet {
			io.Copy(io.Discard, res.Body)
		}
		res.Body.Close()
		return res.StatusCode, res.Header.Get("Mcp-Session-Id")
	}
	code, sid1 := send(http.MethodPost, "/mcp/zone1", "", initJSON)
	if code != http.StatusOK || sid1 == "" {
		t.Fatalf("initialize at /mcp/zone1: status %d, session %q", code, sid1)
	}
	for _, path := range []string{"/mcp/zone2", "/mcp"} {
		for _, m := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
			if code, _ := send(m, path, sid1, listJSON); code != http.StatusNotFound {
				t.Errorf("%s %s with zone1's session: status %d, want 404", m, path, code)
			}
		}
	}
	for _, m := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
		if code, _ := send(m, "/mcp/zone1", sid1, listJSON); code != http.StatusOK {
			t.Errorf("%s /mcp/zone1 with its own session: status %d, want 200", m, code)
		}
	}
	if code, _ := send(http.MethodPost, "/mcp/a/b", "", initJSON); code != http.StatusNotFound {
		t.Errorf("initialize at /mcp/a/b (a group name with a slash): status %d, want 404", code)
	}
	// Groups keep the same authentication.
	res, err := http.Post(f.base+"/mcp/zone1", "application/json", strings.NewReader(initJSON))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Errorf("initialize at /mcp/zone1 without a token: status %d, want 401", res.StatusCode)
	}
}

// TestGroupSessionIdleExpiry: a group endpoint's idle session ends like
// one of /mcp, in mcp-go too (at its own endpoint), and frees its slot of
// the caps that all endpoints share.
func TestGroupSessionIdleExpiry(t *testing.T) {
	const ttl = 10 * time.Minute
	zone1 := newServer(t, "gw/zone1")
	f := newLimitsFixture(t, server.HTTPConfig{Groups: map[string]*server.Server{"zone1": zone1},
		Sessions: server.SessionLimits{Total: 10, PerCaller: 1, IdleTTL: ttl, FirstIdleTTL: ttl}})
	base := f.url
	f.url = base + "/zone1"
	sid := f.open(f.alice)
	f.url = base
	f.clk.Advance(ttl)
	f.open(f.bob) // any request sweeps
	if !strings.Contains(f.logs.String(), `ended a session" session=`+sid+" endpoint=/mcp/zone1 why=idle") {
		t.Fatalf("no log of the idle session %s ending at /mcp/zone1; logs:\n%s", sid, f.logs)
	}
	f.url = base + "/zone1"
	if code, _ := f.do(http.MethodPost, f.alice, sid, listJSON); code != http.StatusNotFound {
		t.Fatalf("the expired session at /mcp/zone1: status %d, want 404", code)
	}
	sid = f.open(f.alice) // its slot is free
	f.url = base
	f.open(f.alice) // at the per-token cap of 1, over all endpoints: the /mcp/zone1 session makes room
	if !strings.Contains(f.logs.String(), `ended a session" session=`+sid+" endpoint=/mcp/zone1 why=\"evicted") {
		t.Fatalf("no log of the session %s evicted at /mcp/zone1; logs:\n%s", sid, f.logs)
	}
	f.url = base + "/zone1"
	if code, _ := f.do(http.MethodPost, f.alice, sid, listJSON); code != http.StatusNotFound {
		t.Fatalf("the evicted session at /mcp/zone1: status %d, want 404", code)
	}
}
