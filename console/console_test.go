package console_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/promcp/promcp-device/console"
	"github.com/promcp/promcp-device/promcp"
	"github.com/promcp/promcp-device/server"
)

type site struct {
	srv    *httptest.Server
	h      http.Handler // the console, for requests from chosen addresses
	reads  *atomic.Int64
	now    func() time.Time
	step   func(time.Duration)
	tokens string // the tokens file
}

// newSite serves a console over a server with one read_* tool that counts
// its calls (its bus transactions), behind the tokens of sue (supervisor);
// each of with adjusts the console's configuration.
func newSite(t *testing.T, sueToken string, with ...func(*console.Config)) *site {
	t.Helper()
	var mu sync.Mutex
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return at }
	step := func(d time.Duration) { mu.Lock(); at = at.Add(d); mu.Unlock() }
	srv, err := server.New("pump", "1")
	if err != nil {
		t.Fatal(err)
	}
	reads := &atomic.Int64{}
	if err := srv.Read(server.ReadTool{Name: "read_flow", Description: "Flow.", Unit: "l/min", Value: map[string]any{"type": "number"}},
		func(context.Context, server.ReadRequest) (promcp.ReadResult, error) {
			n := reads.Add(1)
			return promcp.ReadResult{Value: float64(n), Unit: "l/min", Quality: promcp.QualityGood}, nil
		}); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "tokens.txt")
	if err := os.WriteFile(file, []byte(server.TokenLine("sue", "supervisor", sueToken)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tokens, err := server.LoadTokens(file)
	if err != nil {
		t.Fatal(err)
	}
	cfg := console.Config{Server: srv, Tokens: tokens, Desk: server.NewDesk(now, 0), Gateway: "pump", Now: now}
	for _, f := range with {
		f(&cfg)
	}
	c, err := console.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(c)
	t.Cleanup(hs.Close)
	return &site{srv: hs, h: c, reads: reads, now: now, step: step, tokens: file}
}

func (s *site) login(t *testing.T, token, origin string) (*http.Client, *http.Response) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	req, _ := http.NewRequest("POST", s.srv.URL+"/console/login", strings.NewReader(url.Values{"token": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	c.CheckRedirect = nil
	return c, resp
}

func get(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// However many browsers poll, the tools are asked at most once a second:
// the console adds no bus load beyond that (and a read answers from the
// capability's cache within its TTL).
func TestConsolePollsShareOneSnapshot(t *testing.T) {
	s := newSite(t, "sue-token-0123456789")
	c, resp := s.login(t, "sue-token-0123456789", s.srv.URL)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("login: status %d, want 303", resp.StatusCode)
	}
	for range 20 {
		if code, body := get(t, c, s.srv.URL+"/console/live"); code != 200 || !strings.Contains(body, "read_flow") {
			t.Fatalf("live: %d %s", code, body)
		}
	}
	if n := s.reads.Load(); n != 1 {
		t.Fatalf("20 polls within a second read the device %d times, want 1", n)
	}
	s.step(time.Second)
	if _, body := get(t, c, s.srv.URL+"/console/live"); !strings.Contains(body, `2 \u003cspan class=\"unit\"\u003el/min`) {
		t.Fatalf("a second later the value is not the new reading: %s", body)
	}
	if n := s.reads.Load(); n != 2 {
		t.Fatalf("after a second: %d reads, want 2", n)
	}
}

// The session cookie is HttpOnly and SameSite=Strict; a login from another
// origin or with an unknown token opens none; a revoked token ends the
// sessions it opened.
func TestConsoleLoginAndRevocation(t *testing.T) {
	tok := "sue-token-0123456789"
	s := newSite(t, tok)
	if _, resp := s.login(t, tok, "http://evil.example"); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("login posted from another origin: status %d, want 403", resp.StatusCode)
	}
	if _, resp := s.login(t, "wrong", s.srv.URL); resp.Header.Get("Location") != "/console/login?bad=1" || len(resp.Cookies()) != 0 {
		t.Fatalf("login with an unknown token: %d %v, want back to the form, no cookie", resp.StatusCode, resp.Header)
	}
	c, resp := s.login(t, tok, s.srv.URL)
	ck := resp.Cookies()
	if len(ck) != 1 || !ck[0].HttpOnly || ck[0].SameSite != http.SameSiteStrictMode || ck[0].Value == tok || strings.Contains(ck[0].Value, tok) {
		t.Fatalf("session cookie %+v: want one HttpOnly SameSite=Strict cookie that is not the token", ck)
	}
	if code, body := get(t, c, s.srv.URL+"/console/"); code != 200 || !strings.Contains(body, "sue · supervisor · approves") {
		t.Fatalf("console after login: %d\n%s", code, body)
	}
	if n, err := server.RevokeTokens(s.tokens, "sue", ""); err != nil || n != 1 {
		t.Fatalf("revoke: %d, %v", n, err)
	}
	if code, body := get(t, c, s.srv.URL+"/console/"); code != 200 || !strings.Contains(body, `name="token"`) {
		t.Fatalf("console after the token was revoked: %d, want the login form\n%s", code, body)
	}
	if code, _ := get(t, c, s.srv.URL+"/console/live"); code != http.StatusUnauthorized {
		t.Fatalf("live after the token was revoked: %d, want 401", code)
	}
}

// Without tokens every visitor is the --role caller, nobody approves (not
// even as supervisor: the console cannot tell a person from the agent),
// and a host name other than a loopback one (DNS rebinding) is refused.
func TestConsoleWithoutTokens(t *testing.T) {
	srv, err := server.New("pump", "1")
	if err != nil {
		t.Fatal(err)
	}
	desk := server.NewDesk(nil, 0)
	c, err := console.New(console.Config{Server: srv, Caller: server.Caller{Name: "local", Role: "supervisor"}, Desk: desk, Gateway: "pump"})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(c)
	defer hs.Close()
	code, body := get(t, hs.Client(), hs.URL+"/console/")
	if code != 200 || !strings.Contains(body, "without --tokens") || strings.Contains(body, "· approves") {
		t.Fatalf("console without tokens: %d, want the page, saying nobody approves here\n%s", code, body)
	}
	req, _ := http.NewRequest("GET", hs.URL+"/console/", nil)
	req.Host = "rebound.example:8080"
	resp, err := hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("Host rebound.example without tokens: status %d, want 403", resp.StatusCode)
	}
	post, _ := http.NewRequest("POST", hs.URL+"/console/decide", strings.NewReader("id=X&decision=approve&csrf="))
	post.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	post.Header.Set("Origin", hs.URL)
	resp, err = hs.Client().Do(post)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a decision without tokens: status %d, want 403", resp.StatusCode)
	}
}
