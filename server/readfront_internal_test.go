package server

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/promcp/promcp-device/internal/perf"
	"github.com/promcp/promcp-device/promcp"
)

// frontServer is a server with reads of each kind, each answering the
// same sample every time (a cached sample), and can_do.
func frontServer(t *testing.T, opts ...Option) *Server {
	t.Helper()
	s, err := New("front", "test", opts...)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	reads := []struct {
		name   string
		unit   promcp.Unit
		schema map[string]any
		res    promcp.ReadResult
	}{
		{"read_level", "%", map[string]any{"type": "number"}, promcp.ReadResult{Value: 50.5, Quality: promcp.QualityGood}},
		{"read_mode", "", map[string]any{"type": "string"}, promcp.ReadResult{Value: "a<b & c>d \u2028 \"quoted\" é", Quality: promcp.QualityGood}},
		{"read_pump_on", "", map[string]any{"type": "boolean"}, promcp.ReadResult{Value: true, Quality: promcp.QualityDegraded}},
		{"read_count", "", map[string]any{"type": "integer", "minimum": 0}, promcp.ReadResult{Value: 7.0, Quality: promcp.QualityGood}}, // json-schema checked
		{"read_broken", "°C", map[string]any{"type": "number"}, promcp.ReadResult{Quality: promcp.QualityError,
			Error: &promcp.Error{Code: promcp.CodeSourceUnreachable, Message: "bus <timeout> & retry"}}},
	}
	for _, r := range reads {
		res := r.res
		res.Unit, res.Timestamp = r.unit, at
		err := s.Read(ReadTool{Name: r.name, Description: "A read.", Unit: r.unit, Value: r.schema, Source: "dev/" + r.name},
			func(context.Context, ReadRequest) (promcp.ReadResult, error) { return res, nil })
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CanDo("Can do?", func(context.Context, promcp.CanDoRequest) (promcp.CapabilityReport, error) {
		return promcp.CapabilityReport{}, nil
	}); err != nil {
		t.Fatal(err)
	}
	return s
}

func callBody(id, name string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + name + `","arguments":{}}}`
}

// TestReadFrontIsMCPGos: over HTTP, a cached read answered through the
// front (its members written as the sample's bytes, encoded once) is byte
// for byte what mcp-go answers to the same call when the front leaves it
// alone (sent with an Origin header), for reads of each kind (number,
// string with characters JSON escapes, boolean, a json-schema checked
// value, a read error), numeric and string ids, with the envelope in
// _meta and inline.
func TestReadFrontIsMCPGos(t *testing.T) {
	for _, placement := range []Placement{ProvenanceMeta, ProvenanceInline} {
		s := frontServer(t, WithProvenance(placement))
		post := httpSession(t, s)
		for _, tool := range []string{"read_level", "read_mode", "read_pump_on", "read_count", "read_broken"} {
			post(callBody("1", tool)) // the first call encodes the sample
			for _, id := range []string{"7", `"call-7"`, "1e2", `"\u00e9\\\""`} {
				before := s.front.answered.Load()
				code, front := post(callBody(id, tool))
				if s.front.answered.Load() != before+1 {
					t.Fatalf("%s %s, id %s: the front did not answer a cached read", placement, tool, id)
				}
				_, direct := post(callBody(id, tool), "Origin", "http://127.0.0.1")
				if s.front.answered.Load() != before+1 {
					t.Fatalf("%s %s, id %s: the front answered a request with Origin", placement, tool, id)
				}
				if code != http.StatusOK || !bytes.Equal(front, direct) {
					t.Fatalf("%s %s, id %s: the front's answer (%d)\n%s\nmcp-go's\n%s", placement, tool, id, code, front, direct)
				}
				if bytes.Contains(front, []byte("promcp-splice-")) {
					t.Fatalf("%s %s: a placeholder went out: %s", placement, tool, front)
				}
			}
		}
	}
}

// TestReadFrontLeavesTheRestToMCPGo: requests the front does not take
// are answered by mcp-go, the read handler never answering them with
// placeholders: an unknown session (404), the 2026-07-28 generation, a
// call with _meta (a progress token) or a task, a read with an argument
// error, can_do, a tool that does not exist, a batch, and the first call
// of a sample (not cached yet).
func TestReadFrontLeavesTheRestToMCPGo(t *testing.T) {
	s := frontServer(t)
	post := httpSession(t, s)
	first := callBody("1", "read_level")
	if _, b := post(first); !strings.Contains(string(b), `50.5`) {
		t.Fatalf("first call: %s", b)
	}
	if n := s.front.answered.Load(); n != 0 {
		t.Fatalf("the first call of a sample (not cached) was answered by the front")
	}
	for name, req := range map[string]struct {
		body   string
		header []string
	}{
		"unknown session": {callBody("2", "read_level"), []string{mcpserver.HeaderKeySessionID, "mcp-session-unknown"}},
		"2026-07-28":      {`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read_level","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, []string{"MCP-Protocol-Version", "2026-07-28"}},
		"progress token":  {`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"read_level","arguments":{},"_meta":{"progressToken":1}}}`, nil},
		"task":            {`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"read_level","arguments":{},"task":{"ttl":1000}}}`, nil},
		"argument error":  {`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"read_level","arguments":{"nope":1}}}`, nil},
		"can_do":          {`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"can_do","arguments":{"intent":"x"}}}`, nil},
		"no such tool":    {callBody("9", "read_nothing"), nil},
		"batch":           {`[` + callBody("10", "read_level") + `]`, nil},
	} {
		// Twice: the second would find the sample cached.
		for range 2 {
			code, b := post(req.body, req.header...)
			if name == "unknown session" && code != http.StatusNotFound {
				t.Fatalf("%s: %d %s, want mcp-go's 404", name, code, b)
			}
			if bytes.Contains(b, []byte("promcp-splice-")) {
				t.Fatalf("%s: a placeholder went out: %s", name, b)
			}
		}
		if n := s.front.answered.Load(); n != 0 {
			t.Fatalf("%s: answered by the front", name)
		}
	}
	// A refused argument's answer is the tool's last result now: the
	// first plain call caches the sample again, the second is the front's.
	post(callBody("11", "read_level"))
	before := s.front.answered.Load()
	if _, b := post(callBody("12", "read_level")); s.front.answered.Load() != before+1 || !strings.Contains(string(b), `50.5`) {
		t.Fatalf("a plain cached read after them was not the front's: %s", b)
	}
}

// TestReadFrontWithMCPGoClient: the reads of a real client (mcp-go's, as
// promcp-device bench makes them) in a session of the legacy generation
// are the front's once cached, and the client decodes them as the
// first, uncached answer.
func TestReadFrontWithMCPGoClient(t *testing.T) {
	s := frontServer(t)
	hs := httptest.NewServer(s.HTTPHandler(HTTPConfig{Caller: Caller{Name: "alice", Role: "viewer"}}))
	defer hs.Close()
	c, err := client.NewStreamableHttpClient(hs.URL + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(t.Context(), mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: "2025-11-25",
		ClientInfo: mcp.Implementation{Name: "t", Version: "1"}}}); err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"read_level", "read_mode", "read_broken"} {
		var first *mcp.CallToolResult
		for i := range 3 {
			before := s.front.answered.Load()
			res, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: map[string]any{}}})
			if err != nil {
				t.Fatal(err)
			}
			if fronted := s.front.answered.Load() != before; fronted != (i > 0) {
				t.Fatalf("%s, call %d: answered by the front %t, want %t", tool, i, fronted, i > 0)
			}
			if first == nil {
				first = res
				continue
			}
			if !reflect.DeepEqual(res, first) {
				t.Fatalf("%s, call %d: the client decoded\n%+v\nthe first answer was\n%+v", tool, i, res, first)
			}
		}
	}
}

// BenchmarkReadFront: the server's side of a cached read over HTTP (the
// whole handler: gate, front, mcp-go, the read handler, the write), with
// the front ("front") and without it ("mcp-go": the same request with an
// Origin header, which the front leaves alone).
func BenchmarkReadFront(b *testing.B) {
	benchFront(b, frontServer(&testing.T{}), Caller{Name: "alice", Role: "viewer"}, callBody("7", "read_level"))
}

// benchFront measures body, called once before in a session of caller on
// s, over s's HTTP handler with the front and without it.
func benchFront(b *testing.B, s *Server, caller Caller, body string) {
	h := s.HTTPHandler(HTTPConfig{Caller: caller})
	session := ""
	do := func(body string, origin bool) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		r.Header.Set("MCP-Protocol-Version", "2025-11-25")
		if session != "" {
			r.Header.Set(mcpserver.HeaderKeySessionID, session)
		}
		if origin {
			r.Header.Set("Origin", "http://127.0.0.1")
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	w := do(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, false)
	session = w.Header().Get(mcpserver.HeaderKeySessionID)
	do(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, false)
	do(body, false)
	for _, bc := range []struct {
		name   string
		origin bool
	}{{"front", false}, {"mcp-go", true}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			n, cpu := 0, perf.ProcessCPU()
			for b.Loop() {
				n = do(body, bc.origin).Body.Len()
			}
			b.ReportMetric(float64(perf.ProcessCPU()-cpu)/float64(b.N)/1e3, "cpu-µs/op")
			b.ReportMetric(float64(n), "response-bytes")
		})
	}
}

// TestReadFrontConcurrentSessions: sessions of several callers read the
// cached samples at once, each call through the front: every answer is
// its own call's (the tool and id it asked for, the bytes mcp-go gives
// that call), never another request's members spliced in.
func TestReadFrontConcurrentSessions(t *testing.T) {
	s := frontServer(t)
	tools := []string{"read_level", "read_mode", "read_pump_on", "read_count", "read_broken"}
	want := map[string][]byte{} // by tool and id: mcp-go's answer
	post := httpSession(t, s)
	for _, tool := range tools {
		post(callBody("1", tool)) // the first call encodes the sample
		for i := range 4 {
			id := strconv.Itoa(100 + i)
			_, direct := post(callBody(id, tool), "Origin", "http://127.0.0.1")
			want[tool+"/"+id] = direct
		}
	}
	before := s.front.answered.Load()
	const sessions, rounds = 8, 10
	t.Run("sessions", func(t *testing.T) {
		for n := range sessions {
			t.Run(strconv.Itoa(n), func(t *testing.T) {
				t.Parallel()
				post := httpSessionAs(t, s, Caller{Name: "caller" + strconv.Itoa(n), Role: "viewer"})
				for r := range rounds {
					tool, id := tools[(n+r)%len(tools)], strconv.Itoa(100+(n+r)%4)
					code, got := post(callBody(id, tool))
					if code != http.StatusOK || !bytes.Equal(got, want[tool+"/"+id]) {
						t.Errorf("session %d, %s id %s: got (%d)\n%s\nwant\n%s", n, tool, id, code, got, want[tool+"/"+id])
						return
					}
				}
			})
		}
	})
	if got := s.front.answered.Load() - before; got != sessions*rounds {
		t.Fatalf("the front answered %d of %d concurrent cached reads", got, sessions*rounds)
	}
}
