package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/promcp/promcp-device/promcp"
)

// candoFrontServer is a server whose can_do answers greenhouse intents
// again and again with the Memo of the first answer (as the gateway's
// answer cache does): opening the vent is allowed, heating to 60 °C is
// refused (out of range, blocked), anything else finds nothing.
func candoFrontServer(t *testing.T) *Server {
	t.Helper()
	s, err := New("front", "test")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	memos := map[string]*promcp.Memo{}
	err = s.CanDo("Can do?", func(_ context.Context, q promcp.CanDoRequest) (promcp.CapabilityReport, error) {
		mu.Lock()
		defer mu.Unlock()
		action := q.Intent.Action
		if memos[action] == nil {
			memos[action] = &promcp.Memo{}
		}
		lo, hi := 0.0, 100.0
		rep := promcp.CapabilityReport{Memo: memos[action], Context: promcp.ReportContext{
			RelatedReads:        []string{"read_air_temp"},
			CurrentObservations: map[string]promcp.Observation{"read_air_temp": {Value: 24.5, Timestamp: at, Quality: promcp.QualityGood}}}}
		switch {
		case strings.Contains(action, "vent"):
			rep.Candidates = []promcp.Candidate{{Capability: "do_set_vent", Source: "greenhouse/vent", Confidence: 0.9,
				Permission: promcp.Allowed, SideEffects: []string{"air exchange <& cools \"fast\""}, ValidUntil: at.Add(5 * time.Second),
				EstimatedLatencyMS: 40, Reason: "vent °open", DeviceID: "greenhouse", MatchReasons: []string{"tag_overlap: vent"},
				CurrentState: &promcp.State{Value: 10.0, Unit: "%", Timestamp: at, Quality: promcp.QualityGood},
				Constraints:  promcp.Constraints{Min: &lo, Max: &hi, Unit: "%"}}}
		case strings.Contains(action, "heat"):
			rep.Blocked = []promcp.Blocked{{Capability: "do_set_heater", Source: "greenhouse/heater", Permission: promcp.OutOfRange,
				Reason: "60 °C > 35 °C, the heater's limit"}}
		}
		rep.Metadata.Note = "greenhouse \u2028 note"
		return rep, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// httpSessionAs serves s over streamable HTTP and opens a session for
// caller c: post sends a JSON-RPC body in it and returns the status and
// body.
func httpSessionAs(t *testing.T, s *Server, c Caller) (post func(body string, header ...string) (int, []byte)) {
	t.Helper()
	hs := httptest.NewServer(s.HTTPHandler(HTTPConfig{Caller: c}))
	t.Cleanup(hs.Close)
	session := ""
	post = func(body string, header ...string) (int, []byte) {
		req, err := http.NewRequest(http.MethodPost, hs.URL+"/mcp", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set(mcp.HeaderProtocolVersion, "2025-11-25")
		if session != "" {
			req.Header.Set(mcpserver.HeaderKeySessionID, session)
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		if id := res.Header.Get(mcpserver.HeaderKeySessionID); id != "" {
			session = id
		}
		return res.StatusCode, b
	}
	if code, b := post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`); code != http.StatusOK || session == "" {
		t.Fatalf("initialize: %d %s", code, b)
	}
	post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return post
}

func canDoBody(id, action string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"can_do","arguments":{"intent":{"action":"` + action + `"}}}}`
}

var (
	perCallQueryID = regexp.MustCompile(`"query_id":"([0-9a-f-]+)"`)
	perCallMeta    = regexp.MustCompile(`"metadata":\{"timestamp":"([^"]+)","total_latency_ms":([0-9]+)`)
	perCallDigest  = regexp.MustCompile(`"body":"sha256:([0-9a-f]{64})"`)
)

// perCall replaces in a can_do response (the JSON-RPC message as sent)
// exactly its per-call parts, wherever they are (the structured content,
// the text content, the stamp's claim and digest), with fixed words. It
// fails the test when the answer lacks one.
func perCall(t *testing.T, resp []byte) []byte {
	t.Helper()
	q, m, d := perCallQueryID.FindSubmatch(resp), perCallMeta.FindSubmatch(resp), perCallDigest.FindSubmatch(resp)
	if q == nil || m == nil || d == nil {
		t.Fatalf("an answer without its per-call parts: %s", resp)
	}
	out := bytes.ReplaceAll(resp, q[1], []byte("QUERY-ID"))
	out = bytes.ReplaceAll(out, m[1], []byte("TIMESTAMP"))
	out = bytes.ReplaceAll(out, []byte(`"total_latency_ms\":`+string(m[2])), []byte(`"total_latency_ms\":LATENCY`))
	out = bytes.ReplaceAll(out, []byte(`"total_latency_ms":`+string(m[2])), []byte(`"total_latency_ms":LATENCY`))
	return bytes.ReplaceAll(out, d[1], []byte("DIGEST"))
}

// stampAgrees checks a can_do response as lint's C005 does: the stamp's
// body digest is that of the text content, and the structured content is
// the text content.
func stampAgrees(t *testing.T, resp []byte) {
	t.Helper()
	var msg struct {
		Result struct {
			Content           []struct{ Text string } `json:"content"`
			StructuredContent json.RawMessage         `json:"structuredContent"`
			Meta              map[string]struct {
				Body string `json:"body"`
			} `json:"_meta"`
		} `json:"result"`
	}
	if err := json.Unmarshal(resp, &msg); err != nil || len(msg.Result.Content) != 1 {
		t.Fatalf("not a can_do answer (%v): %s", err, resp)
	}
	text := msg.Result.Content[0].Text
	if got, want := msg.Result.Meta[ProvenanceKey].Body, promcp.BodyDigest([]byte(text)); got != want {
		t.Fatalf("the stamp's body digest %q, the text hashes to %q: %s", got, want, resp)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, msg.Result.StructuredContent); err != nil || compact.String() != text {
		t.Fatalf("structuredContent is not the text content (%v): %s", err, resp)
	}
}

// TestCanDoFrontIsMCPGos: over HTTP, a reused can_do answer through the
// front (its members' bytes made from the kept encoding) is mcp-go's
// answer to the same call sent with an Origin header (which the front
// leaves alone), byte for byte once exactly the per-call parts are
// normalised (query_id, metadata.timestamp and total_latency_ms, the
// stamp's claim time and body digest), for an allowed intent, a refused
// one and one that finds nothing, asked by an operator and by a viewer
// (whose answer is restricted, never the operator's kept one), numeric
// and string ids; and its stamp
// agrees with its body (lint's C005).
func TestCanDoFrontIsMCPGos(t *testing.T) {
	s := candoFrontServer(t)
	// One server for both: the viewer's first call finds the encoding kept
	// for the operator, which it must not be given.
	for _, role := range []string{"operator", RoleViewer} {
		post := httpSessionAs(t, s, Caller{Name: "alice", Role: role})
		for _, action := range []string{"open the vent", "heat to 60", "water the roses"} {
			post(canDoBody("1", action)) // the first answer is encoded and kept
			for _, id := range []string{"7", `"call-7"`, `"\u00e9\\\""`} {
				before := s.front.answered.Load()
				code, front := post(canDoBody(id, action))
				if s.front.answered.Load() != before+1 {
					t.Fatalf("%s %q, id %s: the front did not answer a reused can_do: %s", role, action, id, front)
				}
				_, direct := post(canDoBody(id, action), "Origin", "http://127.0.0.1")
				if s.front.answered.Load() != before+1 {
					t.Fatalf("%s %q, id %s: the front answered a request with Origin", role, action, id)
				}
				if bytes.Contains(front, []byte("promcp-splice-")) {
					t.Fatalf("%s %q: a placeholder went out: %s", role, action, front)
				}
				stampAgrees(t, front)
				stampAgrees(t, direct)
				if code != http.StatusOK || !bytes.Equal(perCall(t, front), perCall(t, direct)) {
					t.Fatalf("%s %q, id %s: the front's answer (%d)\n%s\nmcp-go's\n%s", role, action, id, code, front, direct)
				}
				// The viewer's answer is restricted: the vent is blocked.
				if want := role == RoleViewer && action == "open the vent"; bytes.Contains(front, []byte(string(promcp.PermissionInsufficient))) != want {
					t.Fatalf("%s %q: restricted %t expected: %s", role, action, want, front)
				}
			}
		}
	}
}

// TestCanDoFrontLeavesTheRestToMCPGo: can_do calls the front must not
// take are answered by mcp-go, the handler never answering them with
// placeholders, even when the answer is reused with its encoding kept: a
// call with _meta (a progress token), with a task, of the 2026-07-28
// generation, a batch, one with an argument error, and the first call of
// an answer (nothing kept yet). A plain call after them is the front's.
func TestCanDoFrontLeavesTheRestToMCPGo(t *testing.T) {
	s := candoFrontServer(t)
	post := httpSessionAs(t, s, Caller{Name: "alice", Role: "operator"})
	if _, b := post(canDoBody("1", "open the vent")); !bytes.Contains(b, []byte("do_set_vent")) {
		t.Fatalf("first call: %s", b)
	}
	if n := s.front.answered.Load(); n != 0 {
		t.Fatalf("the first call of an answer (nothing kept) was answered by the front")
	}
	args := `"arguments":{"intent":{"action":"open the vent"}}`
	for name, req := range map[string]struct {
		body   string
		header []string
	}{
		"progress token": {`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"can_do",` + args + `,"_meta":{"progressToken":1}}}`, nil},
		"task":           {`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"can_do",` + args + `,"task":{"ttl":1000}}}`, nil},
		"2026-07-28": {`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"can_do",` + args + `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
			[]string{"MCP-Protocol-Version", "2026-07-28"}},
		"argument error": {`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"can_do","arguments":{"intent":{"action":"open the vent"},"nope":1}}}`, nil},
		"batch":          {`[` + canDoBody("10", "open the vent") + `]`, nil},
	} {
		for range 2 {
			_, b := post(req.body, req.header...)
			if bytes.Contains(b, []byte("promcp-splice-")) {
				t.Fatalf("%s: a placeholder went out: %s", name, b)
			}
		}
		if n := s.front.answered.Load(); n != 0 {
			t.Fatalf("%s: answered by the front", name)
		}
	}
	before := s.front.answered.Load()
	if _, b := post(canDoBody("12", "open the vent")); s.front.answered.Load() != before+1 || !bytes.Contains(b, []byte("do_set_vent")) {
		t.Fatalf("a plain reused can_do after them was not the front's: %s", b)
	}
}

// BenchmarkCanDoFront: the server's side of a reused can_do answer over
// HTTP (gate, front, mcp-go, the handler, the write), with the front
// ("front") and without it ("mcp-go": the same request with an Origin
// header, which the front leaves alone).
func BenchmarkCanDoFront(b *testing.B) {
	benchFront(b, candoFrontServer(&testing.T{}), Caller{Name: "alice", Role: "operator"}, canDoBody("7", "open the vent"))
}

// TestCanDoFrontConcurrentRoles: operators and viewers ask the same
// question at once on one server, most answers reused through the front:
// a viewer is never given the operator's kept answer nor an operator the
// viewer's, and every answer's stamp agrees with its body.
func TestCanDoFrontConcurrentRoles(t *testing.T) {
	s := candoFrontServer(t)
	before := s.front.answered.Load()
	const sessions, rounds = 8, 10
	t.Run("sessions", func(t *testing.T) {
		for n := range sessions {
			role := "operator"
			if n%2 == 1 {
				role = RoleViewer
			}
			t.Run(strconv.Itoa(n)+"-"+role, func(t *testing.T) {
				t.Parallel()
				post := httpSessionAs(t, s, Caller{Name: "caller" + strconv.Itoa(n), Role: role})
				for r := range rounds {
					code, got := post(canDoBody(strconv.Itoa(r), "open the vent"))
					if code != http.StatusOK || bytes.Contains(got, []byte("promcp-splice-")) {
						t.Fatalf("round %d: (%d) %s", r, code, got)
					}
					stampAgrees(t, got)
					if restricted := bytes.Contains(got, []byte(string(promcp.PermissionInsufficient))); restricted != (role == RoleViewer) {
						t.Fatalf("%s, round %d: restricted %t: %s", role, r, restricted, got)
					}
				}
			})
		}
	})
	if s.front.answered.Load() == before {
		t.Fatal("no concurrent can_do was answered through the front")
	}
	t.Logf("answered through the front: %d of %d", s.front.answered.Load()-before, sessions*rounds)
}
