package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/server"
	"github.com/promcp/promcp-device/server/servertest"
)

const initJSON = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// limitsFixture is an HTTP server with two tokens, alice's and bob's, on
// 127.0.0.1, its clock moved by hand.
type limitsFixture struct {
	t          *testing.T
	url        string
	alice, bob string
	logs       *servertest.LogBuffer
	clk        *clock.Manual
}

func newLimitsFixture(t *testing.T, cfg server.HTTPConfig) *limitsFixture {
	t.Helper()
	logs := &servertest.LogBuffer{}
	srv := newServer(t, "limits", server.WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	f := &limitsFixture{t: t, logs: logs, alice: server.NewToken(), bob: server.NewToken(),
		clk: clock.NewManual(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))}
	tokens, err := server.ParseTokens("tokens", strings.NewReader(
		server.TokenLine("alice", "operator", f.alice)+"\n"+server.TokenLine("bob", "viewer", f.bob)))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Tokens = tokens
	cfg.Now = f.clk.Now
	ts := httptest.NewUnstartedServer(nil)
	ts.Config = srv.HTTPServer(cfg)
	ts.Start()
	t.Cleanup(ts.Close)
	f.url = ts.URL + "/mcp"
	return f
}

// do sends a request and returns its status and session id header; the
// body is read unless the response is a stream, which is closed.
func (f *limitsFixture) do(method, token, session, body string) (int, string) {
	f.t.Helper()
	req, _ := http.NewRequestWithContext(f.t.Context(), method, f.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	if res.Header.Get("Content-Type") != "text/event-stream" || method != http.MethodGet {
		io.Copy(io.Discard, res.Body)
	}
	res.Body.Close()
	return res.StatusCode, res.Header.Get("Mcp-Session-Id")
}

func (f *limitsFixture) open(token string) string {
	f.t.Helper()
	code, sid := f.do(http.MethodPost, token, "", initJSON)
	if code != http.StatusOK || sid == "" {
		f.t.Fatalf("initialize: status %d, session %q; want 200 and a session", code, sid)
	}
	return sid
}

const listJSON = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`

// TestHTTPSessionCaps: a token holds at most PerCaller sessions, all
// tokens together at most Total. At a cap a new session takes the place of
// the least recently used idle one (which then gets 404, so that its
// client initializes anew); only when every session is in use (here, a GET
// stream open on it) is a new one refused with 429.
func TestHTTPSessionCaps(t *testing.T) {
	f := newLimitsFixture(t, server.HTTPConfig{Sessions: server.SessionLimits{Total: 3, PerCaller: 2}})
	a1 := f.open(f.alice)
	f.stream(f.alice, a1)
	f.clk.Advance(time.Second)
	a2 := f.open(f.alice)
	f.clk.Advance(time.Second)
	a3 := f.open(f.alice) // at alice's cap: a2 is idle, a1 is in use
	if code, _ := f.do(http.MethodPost, f.alice, a2, listJSON); code != http.StatusNotFound {
		t.Fatalf("alice's idle session after a third at her cap of 2: status %d, want 404", code)
	}
	if code, _ := f.do(http.MethodPost, f.alice, a1, listJSON); code != http.StatusOK {
		t.Fatalf("alice's session in use after a third at her cap of 2: status %d, want 200", code)
	}
	f.stream(f.alice, a3)
	if code, sid := f.do(http.MethodPost, f.alice, "", initJSON); code != http.StatusTooManyRequests || sid != "" {
		t.Fatalf("alice's third session, both of hers in use: status %d, session %q; want 429 and none", code, sid)
	}
	b1 := f.open(f.bob) // bob is not held back by alice's cap
	f.clk.Advance(time.Second)
	b2 := f.open(f.bob) // at the total cap: bob's idle session makes room, alice's in use do not
	if code, _ := f.do(http.MethodPost, f.bob, b1, listJSON); code != http.StatusNotFound {
		t.Fatalf("bob's evicted session: status %d, want 404", code)
	}
	if code, _ := f.do(http.MethodPost, f.bob, b2, listJSON); code != http.StatusOK {
		t.Fatalf("bob's new session: status %d, want 200", code)
	}
	if code, _ := f.do(http.MethodDelete, f.alice, a3, ""); code != http.StatusOK {
		t.Fatalf("DELETE of alice's session: status %d, want 200", code)
	}
	f.open(f.alice) // the deleted session's slot is free again
}

// TestHTTPSessionFloodEvictsItsOwn: at the total cap, the session that
// makes room is the least recently used idle one of the caller holding
// the most: a token flooding sessions ends its own, not another token's.
func TestHTTPSessionFloodEvictsItsOwn(t *testing.T) {
	f := newLimitsFixture(t, server.HTTPConfig{Sessions: server.SessionLimits{Total: 4, PerCaller: 100}})
	b := f.open(f.bob)
	for range 20 {
		f.clk.Advance(time.Second)
		f.open(f.alice)
	}
	if code, _ := f.do(http.MethodPost, f.bob, b, listJSON); code != http.StatusOK {
		t.Fatalf("bob's session, the oldest, after alice opened 20 at a total cap of 4: status %d, want 200", code)
	}
}

// stream opens a GET stream on session sid, open until the test ends.
func (f *limitsFixture) stream(token, sid string) {
	f.t.Helper()
	req, _ := http.NewRequestWithContext(f.t.Context(), http.MethodGet, f.url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != http.StatusOK {
		f.t.Fatalf("GET stream on %s: %v %v", sid, res, err)
	}
	f.t.Cleanup(func() { res.Body.Close() })
}

// TestHTTPSessionIdleExpiry: a session unused for the idle TTL ends: its
// requests get 404 whatever the method, and its slot is free.
func TestHTTPSessionIdleExpiry(t *testing.T) {
	const ttl = 10 * time.Minute
	f := newLimitsFixture(t, server.HTTPConfig{Sessions: server.SessionLimits{Total: 10, PerCaller: 1, IdleTTL: ttl, FirstIdleTTL: ttl}})
	sid := f.open(f.alice)
	f.clk.Advance(ttl - time.Second)
	if code, _ := f.do(http.MethodPost, f.alice, sid, listJSON); code != http.StatusOK {
		t.Fatalf("a session used within its idle time: status %d, want 200", code)
	}
	f.clk.Advance(ttl - time.Second) // used a moment ago: still alive
	if code, _ := f.do(http.MethodPost, f.alice, sid, listJSON); code != http.StatusOK {
		t.Fatalf("a session used again within its idle time: status %d, want 200", code)
	}
	f.clk.Advance(ttl)
	f.open(f.bob) // any request sweeps: the idle session is ended, in mcp-go too
	if !strings.Contains(f.logs.String(), `ended a session" session=`+sid) {
		t.Fatalf("no log of the idle session %s ending; logs:\n%s", sid, f.logs)
	}
	for _, m := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
		if code, _ := f.do(m, f.alice, sid, listJSON); code != http.StatusNotFound {
			t.Fatalf("%s on a session idle for %v: status %d, want 404", m, ttl, code)
		}
	}
	f.open(f.alice) // per-token cap 1: the expired session's slot is free
}

// TestHTTPUnknownSessionIs404: GET (the stream) and DELETE answer 404 for
// a session the server does not know, like POST: never opened, deleted,
// or another token's.
func TestHTTPUnknownSessionIs404(t *testing.T) {
	f := newLimitsFixture(t, server.HTTPConfig{})
	sid := f.open(f.alice)
	bobs := f.open(f.bob)
	for _, tc := range []struct{ name, session string }{
		{"no session id", ""},
		{"a made-up session id", "mcp-session-0123456789abcdef0123456789abcdef"},
		{"another token's session", bobs},
	} {
		for _, m := range []string{http.MethodGet, http.MethodDelete, http.MethodPost} {
			if code, _ := f.do(m, f.alice, tc.session, listJSON); code != http.StatusNotFound {
				t.Errorf("%s with %s: status %d, want 404", m, tc.name, code)
			}
		}
	}
	if code, _ := f.do(http.MethodGet, f.alice, sid, ""); code != http.StatusOK {
		t.Fatalf("GET stream on alice's own session: status %d, want 200", code)
	}
	if code, _ := f.do(http.MethodDelete, f.alice, sid, ""); code != http.StatusOK {
		t.Fatalf("DELETE of alice's own session: status %d, want 200", code)
	}
	for _, m := range []string{http.MethodGet, http.MethodDelete, http.MethodPost} {
		if code, _ := f.do(m, f.alice, sid, listJSON); code != http.StatusNotFound {
			t.Errorf("%s on a deleted session: status %d, want 404", m, code)
		}
	}
}

// TestHTTPDeleteEndsStream: deleting a session ends the GET stream open
// on it.
func TestHTTPDeleteEndsStream(t *testing.T) {
	f := newLimitsFixture(t, server.HTTPConfig{})
	sid := f.open(f.alice)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, f.url, nil)
	req.Header.Set("Authorization", "Bearer "+f.alice)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("GET stream: %v %v", res, err)
	}
	defer res.Body.Close()
	if code, _ := f.do(http.MethodDelete, f.alice, sid, ""); code != http.StatusOK {
		t.Fatalf("DELETE: status %d", code)
	}
	// The stream ends (EOF) rather than staying open forever.
	if _, err := io.Copy(io.Discard, res.Body); err != nil {
		t.Fatalf("the stream of a deleted session ended with %v, want a clean end", err)
	}
}

// countingBody is a body of n bytes that counts what is read of it.
type countingBody struct {
	n, read atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	left := b.n.Load() - b.read.Load()
	if left <= 0 {
		return 0, io.EOF
	}
	n := min(int64(len(p)), left)
	clear(p[:n])
	b.read.Add(n)
	return int(n), nil
}

// TestHTTPAuthBeforeBody: a request without a valid token, or from a
// foreign origin, is refused on its headers: not a byte of its (huge)
// body is read.
func TestHTTPAuthBeforeBody(t *testing.T) {
	srv := newServer(t, "limits")
	token, tokens := operatorToken(t, "alice")
	h := srv.HTTPHandler(server.HTTPConfig{Tokens: tokens})
	for _, tc := range []struct {
		name   string
		header map[string]string
		want   int
	}{
		{"no token", nil, http.StatusUnauthorized},
		{"a wrong token", map[string]string{"Authorization": "Bearer pmd_wrong"}, http.StatusUnauthorized},
		{"a foreign origin with a valid token", map[string]string{"Authorization": "Bearer " + token, "Origin": "https://evil.example"}, http.StatusForbidden},
		{"a valid token, over the body limit", map[string]string{"Authorization": "Bearer " + token}, http.StatusRequestEntityTooLarge},
	} {
		body := &countingBody{}
		body.n.Store(1 << 30) // 1 GiB, never held
		r := httptest.NewRequest(http.MethodPost, "/mcp", body)
		r.ContentLength = 1 << 30
		r.Header.Set("Content-Type", "application/json")
		for k, v := range tc.header {
			r.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tc.want || body.read.Load() != 0 {
			t.Errorf("%s with a 1 GiB body: status %d after reading %d bytes; want %d after reading none", tc.name, w.Code, body.read.Load(), tc.want)
		}
	}
}

// TestHTTPRefusalClosesConnection: over TCP, a client without a token that
// sends the headers of a large body and holds the rest back gets 401 and
// its connection closed; nothing waits for the rest.
func TestHTTPRefusalClosesConnection(t *testing.T) {
	f := newLimitsFixture(t, server.HTTPConfig{})
	for _, size := range []int{100 << 10, 1 << 20} { // under and over net/http's own 256 KiB drain
		conn, err := net.Dial("tcp", strings.TrimPrefix(strings.TrimSuffix(f.url, "/mcp"), "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		// A guard against a hang, not a measure: the close comes at once.
		conn.SetDeadline(time.Now().Add(20 * time.Second))
		fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", size)
		conn.Write(make([]byte, size-10)) // all but the last 10 bytes
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		if res.StatusCode != http.StatusUnauthorized || !res.Close {
			t.Fatalf("body of %d bytes held back: status %d, close %v; want 401 and the connection closed", size, res.StatusCode, res.Close)
		}
		// Closed: EOF, or a reset for the unread bytes; not a timeout.
		if n, err := conn.Read(make([]byte, 1)); err == nil || os.IsTimeout(err) {
			t.Fatalf("body of %d bytes held back: after the 401 the connection gave %d bytes, %v; want it closed", size, n, err)
		}
	}
}

// blockingBody yields its bytes after release is closed, and says when
// its first read started.
type blockingBody struct {
	started, release chan struct{}
	once             sync.Once
	r                io.Reader
}

func (b *blockingBody) Read(p []byte) (int, error) {
	b.once.Do(func() { close(b.started) })
	<-b.release
	return b.r.Read(p)
}

// TestHTTPBufferedBytesBudget: bodies held in memory at once are bounded
// across requests; one that does not fit gets 503 before it is read, and
// fits again once the others are done.
func TestHTTPBufferedBytesBudget(t *testing.T) {
	srv := newServer(t, "limits")
	h := srv.HTTPHandler(server.HTTPConfig{Caller: server.Caller{Name: "local", Role: "operator"}, MaxBodyBytes: 256 << 10, MaxBufferedBytes: 512 << 10})
	req := func(body io.Reader, n int) *http.Request {
		r := httptest.NewRequest(http.MethodPost, "/mcp", body)
		r.ContentLength = int64(n)
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		return r
	}
	pad := 150 << 10 // over server.SmallBodyBytes: not a small body
	slow := &blockingBody{started: make(chan struct{}), release: make(chan struct{}), r: strings.NewReader(initJSON + strings.Repeat(" ", pad))}
	done := make(chan int)
	go func() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req(slow, len(initJSON)+pad))
		done <- w.Code
	}()
	<-slow.started // its ~150 KiB, counted twice, are held
	second := &countingBody{}
	second.n.Store(int64(pad))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req(second, pad))
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" || second.read.Load() != 0 {
		t.Fatalf("a body over the buffered-bytes budget: status %d, Retry-After %q, %d bytes read; want 503, Retry-After, none read",
			w.Code, w.Header().Get("Retry-After"), second.read.Load())
	}
	close(slow.release)
	if code := <-done; code != http.StatusOK {
		t.Fatalf("the request holding the budget: status %d, want 200", code)
	}
	w = httptest.NewRecorder()
	h.ServeHTTP(w, req(strings.NewReader(initJSON), len(initJSON)))
	if w.Code != http.StatusOK {
		t.Fatalf("after the budget is given back: status %d, want 200", w.Code)
	}
}

// TestHTTPBodyBudgetPerToken: one token holds at most its share of the
// buffered-bytes budget; and however much other tokens hold, a token's
// small calls (a do_* call, a safe stop) still get in, from its reserve.
func TestHTTPBodyBudgetPerToken(t *testing.T) {
	const big = 100 << 10 // over server.SmallBodyBytes, counted twice: 200 KiB held
	t.Run("share", func(t *testing.T) {
		f := newLimitsFixture(t, server.HTTPConfig{MaxBodyBytes: 256 << 10, MaxBufferedBytes: 1 << 20}) // a share of 256 KiB
		if code := f.slowBody(f.bob, big); code != http.StatusContinue {
			t.Fatalf("bob's first slow body: status %d, want it read (100 Continue)", code)
		}
		if code := f.slowBody(f.bob, big); code != http.StatusServiceUnavailable {
			t.Fatalf("bob's second slow body, over his share: status %d, want 503", code)
		}
		if code := f.slowBody(f.alice, big); code != http.StatusContinue {
			t.Fatalf("alice's slow body while bob holds his share: status %d, want it read (100 Continue)", code)
		}
	})
	t.Run("reserve", func(t *testing.T) {
		f := newLimitsFixture(t, server.HTTPConfig{MaxBodyBytes: 256 << 10, MaxBufferedBytes: 1 << 20, MaxBufferedBytesPerCaller: 1 << 20})
		sid := f.open(f.alice)
		held := 0
		for ; held < 10; held++ { // bob takes all the shared budget
			if code := f.slowBody(f.bob, big); code != http.StatusContinue {
				break
			}
		}
		if held != 5 {
			t.Fatalf("bob's slow bodies of %d bytes in a budget of 1 MiB: %d held, want 5", big, held)
		}
		if code := f.slowBody(f.alice, big); code != http.StatusServiceUnavailable {
			t.Fatalf("alice's big body, the budget full: status %d, want 503", code)
		}
		for i := range server.SmallBodiesPerCaller + 1 {
			if code, _ := f.do(http.MethodPost, f.alice, sid, listJSON); code != http.StatusOK {
				t.Fatalf("alice's small call %d, the budget full of bob's bodies: status %d, want 200", i+1, code)
			}
		}
	})
}

// slowBody sends the headers of a POST of n bytes with token and half its
// body, asking for 100 Continue; it returns 100 once the server reads the
// body (it holds a part of the budget then, until the test ends) or the
// status it answered instead.
func (f *limitsFixture) slowBody(token string, n int) int {
	f.t.Helper()
	addr := strings.TrimSuffix(strings.TrimPrefix(f.url, "http://"), "/mcp")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nExpect: 100-continue\r\nContent-Length: %d\r\n\r\n", addr, token, n)
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		f.t.Fatalf("slow body: %v", err)
	}
	if res.StatusCode == http.StatusContinue {
		conn.Write(make([]byte, n/2))
	}
	return res.StatusCode
}

// TestHTTPLongKeyRefusedBeforeDecoding: a tools/call whose idempotency_key
// is far over the schema's maxLength is answered with an invalid-params
// error naming the argument, by the transport, before any decoding.
func TestHTTPLongKeyRefusedBeforeDecoding(t *testing.T) {
	f := newLimitsFixture(t, server.HTTPConfig{})
	sid := f.open(f.alice)
	key := strings.Repeat("k", 1<<20-1024)
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"do_set_heater","arguments":{"value":false,"idempotency_key" : "` + key + `"}}}`
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, f.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+f.alice)
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var msg struct {
		ID    int `json:"id"`
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.NewDecoder(res.Body).Decode(&msg); err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK || msg.ID != 7 || msg.Error.Code != mcp.INVALID_PARAMS ||
		!strings.Contains(msg.Error.Message, "idempotency_key") || !strings.Contains(msg.Error.Message, "200 characters") {
		t.Fatalf("a 1 MiB idempotency_key: status %d, %+v; want 200, id 7, invalid params naming idempotency_key and its maxLength", res.StatusCode, msg)
	}
}

// TestHTTPFirstIdleTTL: a session that made no request after its
// initialize ends after FirstIdleTTL; one in use lives on to IdleTTL.
func TestHTTPFirstIdleTTL(t *testing.T) {
	f := newLimitsFixture(t, server.HTTPConfig{Sessions: server.SessionLimits{IdleTTL: 30 * time.Minute, FirstIdleTTL: 2 * time.Minute}})
	unused, used := f.open(f.alice), f.open(f.alice)
	if code, _ := f.do(http.MethodPost, f.alice, used, listJSON); code != http.StatusOK {
		t.Fatalf("tools/list: status %d", code)
	}
	f.clk.Advance(2 * time.Minute)
	f.open(f.bob) // sweeps
	if code, _ := f.do(http.MethodPost, f.alice, unused, listJSON); code != http.StatusNotFound {
		t.Fatalf("a session never used after its initialize, %v later: status %d, want 404", 2*time.Minute, code)
	}
	if code, _ := f.do(http.MethodPost, f.alice, used, listJSON); code != http.StatusOK {
		t.Fatalf("a session in use, %v later: status %d, want 200", 2*time.Minute, code)
	}
}

// TestLimitListener: at most n connections are accepted at once; the
// next is accepted when one closes.
func TestLimitListener(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := server.LimitListener(inner, 2)
	defer ln.Close()
	accepted := make(chan net.Conn, 3)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	for range 3 {
		c, err := net.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	first, second := <-accepted, <-accepted
	select {
	case <-accepted:
		t.Fatal("a third connection was accepted with a limit of 2")
	default:
	}
	first.Close()
	third := <-accepted // the freed slot takes the waiting one
	second.Close()
	third.Close()
	ln.Close()
	for range accepted {
	}
}

// TestHTTPLongCallOutlivesTimeouts: a tool call that takes longer than the
// read and write timeouts (a slow device, an approval awaited), whose
// answer went over SSE from the start (a notification before the wait),
// completes: the timeouts bound reading a request and each write, not a
// call.
func TestHTTPLongCallOutlivesTimeouts(t *testing.T) {
	srv := newServer(t, "limits")
	const timeout = 200 * time.Millisecond
	srv.MCP().AddTool(mcp.NewTool("slow"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		_ = mcpserver.ServerFromContext(ctx).SendNotificationToClient(ctx, "notifications/message", map[string]any{"level": "info", "data": "waiting on the device"})
		select { // the device takes three times the timeouts
		case <-time.After(3 * timeout):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return mcp.NewToolResultText("done"), nil
	})
	ts := httptest.NewUnstartedServer(nil)
	ts.Config = srv.HTTPServer(server.HTTPConfig{Caller: server.Caller{Name: "local", Role: "operator"}, ReadTimeout: timeout, WriteTimeout: timeout})
	ts.Start()
	defer ts.Close()
	noted := make(chan struct{}, 1)
	c, err := client.NewStreamableHttpClient(ts.URL + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.OnNotification(func(mcp.JSONRPCNotification) {
		select {
		case noted <- struct{}{}:
		default:
		}
	})
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(t.Context(), mcp.InitializeRequest{Params: mcp.InitializeParams{ClientInfo: mcp.Implementation{Name: "t", Version: "1"}}}); err != nil {
		t.Fatal(err)
	}
	res, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "slow"}})
	if err != nil || res.IsError || len(res.Content) == 0 || res.Content[0].(mcp.TextContent).Text != "done" {
		t.Fatalf("a call of 3x the timeouts: %v, %v; want done", res, err)
	}
	select { // handed to the client asynchronously
	case <-noted:
	case <-time.After(time.Minute): // a guard against a hang, not a measure
		t.Fatal("the notification sent before the wait never reached the client")
	}
}

// TestHTTP2: over HTTPS the server speaks HTTP/2 with its limits, and
// refuses a request without a token there too.
func TestHTTP2(t *testing.T) {
	srv := newServer(t, "limits")
	token, tokens := operatorToken(t, "alice")
	ts := httptest.NewUnstartedServer(nil)
	ts.Config = srv.HTTPServer(server.HTTPConfig{Tokens: tokens})
	ts.EnableHTTP2 = true
	ts.StartTLS()
	defer ts.Close()
	for _, tc := range []struct {
		token string
		want  int
	}{{token, http.StatusOK}, {"", http.StatusUnauthorized}} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL+"/mcp", strings.NewReader(initJSON))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		res, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.ProtoMajor != 2 || res.StatusCode != tc.want {
			t.Fatalf("initialize over HTTPS, token %v: %s %d, want HTTP/2 %d", tc.token != "", res.Proto, res.StatusCode, tc.want)
		}
	}
}
