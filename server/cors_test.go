package server_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/promcp/promcp-device/server"
)

// TestCORS: a browser client on an allowed origin gets its preflight
// answered without a token, and its requests still need one; a preflight
// from another origin is refused.
func TestCORS(t *testing.T) {
	srv := newServer(t, "cors")
	token, tokens := operatorToken(t, "agent")
	const allowed = "https://agent.example"
	h := srv.HTTPHandler(server.HTTPConfig{AllowedOrigins: []string{allowed}, Tokens: tokens})

	do := func(method, origin string, hdr map[string]string, body string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, "/mcp", strings.NewReader(body))
		r.Header.Set("Origin", origin)
		for k, v := range hdr {
			r.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	preflight := map[string]string{"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization, content-type"}
	if w := do(http.MethodOptions, allowed, preflight, ""); w.Code >= 300 || w.Header().Get("Access-Control-Allow-Origin") != allowed ||
		!strings.Contains(strings.ToLower(w.Header().Get("Access-Control-Allow-Headers")), "authorization") {
		t.Fatalf("preflight from the allowed origin: %d %v, want it answered with CORS headers that allow Authorization", w.Code, w.Header())
	}
	if w := do(http.MethodOptions, "https://evil.example", preflight, ""); w.Code != http.StatusForbidden {
		t.Fatalf("preflight from a foreign origin: %d, want 403", w.Code)
	}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"b","version":"1"}}}`
	post := map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
	if w := do(http.MethodPost, allowed, post, init); w.Code != http.StatusUnauthorized {
		t.Fatalf("request from the allowed origin without a token: %d, want 401", w.Code)
	}
	post["Authorization"] = "Bearer " + token
	w := do(http.MethodPost, allowed, post, init)
	if w.Code != http.StatusOK || w.Header().Get("Access-Control-Allow-Origin") != allowed ||
		!strings.Contains(w.Header().Get("Access-Control-Expose-Headers"), "Mcp-Session-Id") {
		t.Fatalf("request from the allowed origin with a token: %d %v, want 200 with CORS headers exposing the session id", w.Code, w.Header())
	}
}
