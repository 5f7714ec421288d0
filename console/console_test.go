package console_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
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
	srv   *httptest.Server
	h     http.Handler // the console, for requests from chosen addresses
	reads *atomic.Int64
	now   func() time.Time
	step  func(time.Duration)
	users string // the console users file
}

// newSite serves a console over a server with one read_* tool that counts
// its calls (its bus transactions), with one account, sue (supervisor),
// whose password is suePassword (hashed at the lowest cost, for speed);
// each of with adjusts the console's configuration.
func newSite(t *testing.T, suePassword string, with ...func(*console.Config)) *site {
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
	file := filepath.Join(t.TempDir(), "users.txt")
	setUser(t, file, "sue", "supervisor", suePassword)
	users, err := console.LoadUsers(file)
	if err != nil {
		t.Fatal(err)
	}
	cfg := console.Config{Server: srv, Users: users, Desk: server.NewDesk(now, 0), Gateway: "pump", Now: now}
	for _, f := range with {
		f(&cfg)
	}
	c, err := console.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(c)
	t.Cleanup(hs.Close)
	return &site{srv: hs, h: c, reads: reads, now: now, step: step, users: file}
}

// setUser adds (or updates) an account in the users file, its password
// hashed at the lowest cost (tests run many sign-ins under -race).
func setUser(t *testing.T, file, name, role, password string) {
	t.Helper()
	h, err := console.HashPassword(password, console.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := console.SetUser(file, name, role, h); err != nil {
		t.Fatal(err)
	}
}

// login signs in as sue with password, from origin ("" for none).
func (s *site) login(t *testing.T, password, origin string) (*http.Client, *http.Response) {
	t.Helper()
	return s.signIn(t, url.Values{"name": {"sue"}, "password": {password}}, origin)
}

// signIn posts the sign-in form with the fields given.
func (s *site) signIn(t *testing.T, form url.Values, origin string) (*http.Client, *http.Response) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	req, _ := http.NewRequest("POST", s.srv.URL+"/console/login", strings.NewReader(form.Encode()))
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
	s := newSite(t, "sue-passphrase-0123")
	c, resp := s.login(t, "sue-passphrase-0123", s.srv.URL)
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

// The session cookie is HttpOnly and SameSite=Strict; a sign-in from
// another origin or with a wrong password opens none; removing the account
// ends the sessions it opened, and so does changing its password.
func TestConsoleLoginAndAccountRemoval(t *testing.T) {
	pw := "sue's long passphrase"
	s := newSite(t, pw)
	if _, resp := s.login(t, pw, "http://evil.example"); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("sign-in posted from another origin: status %d, want 403", resp.StatusCode)
	}
	if _, resp := s.login(t, "wrong", s.srv.URL); resp.Header.Get("Location") != "/console/login?bad=1" || len(resp.Cookies()) != 0 {
		t.Fatalf("sign-in with a wrong password: %d %v, want back to the form, no cookie", resp.StatusCode, resp.Header)
	}
	c, resp := s.login(t, pw, s.srv.URL)
	ck := resp.Cookies()
	if len(ck) != 1 || !ck[0].HttpOnly || ck[0].SameSite != http.SameSiteStrictMode || strings.Contains(ck[0].Value, "sue") {
		t.Fatalf("session cookie %+v: want one HttpOnly SameSite=Strict cookie that is a random id", ck)
	}
	if code, body := get(t, c, s.srv.URL+"/console/"); code != 200 || !strings.Contains(body, "sue · supervisor · approves") {
		t.Fatalf("console after sign-in: %d\n%s", code, body)
	}
	if ok, err := console.RemoveUser(s.users, "sue"); err != nil || !ok {
		t.Fatalf("remove: %v, %v", ok, err)
	}
	if code, body := get(t, c, s.srv.URL+"/console/"); code != 200 || !strings.Contains(body, `name="password"`) {
		t.Fatalf("console after the account was removed: %d, want the sign-in form\n%s", code, body)
	}
	if code, _ := get(t, c, s.srv.URL+"/console/live"); code != http.StatusUnauthorized {
		t.Fatalf("live after the account was removed: %d, want 401", code)
	}

	setUser(t, s.users, "sue", "supervisor", pw)
	c, _ = s.login(t, pw, s.srv.URL)
	if code, _ := get(t, c, s.srv.URL+"/console/live"); code != 200 {
		t.Fatalf("live after signing in again: %d, want 200", code)
	}
	setUser(t, s.users, "sue", "supervisor", "a new passphrase")
	if code, _ := get(t, c, s.srv.URL+"/console/live"); code != http.StatusUnauthorized {
		t.Fatalf("live after sue's password changed: %d, want 401 (the session ends)", code)
	}
}

// Without accounts every visitor is the --role caller, nobody approves (not
// even as supervisor: the console cannot tell a person from the agent),
// and a host name other than a loopback one (DNS rebinding) is refused.
func TestConsoleWithoutAccounts(t *testing.T) {
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
	if code != 200 || !strings.Contains(body, "no operator accounts") || strings.Contains(body, "· approves") {
		t.Fatalf("console without accounts: %d, want the page, saying nobody approves here\n%s", code, body)
	}
	req, _ := http.NewRequest("GET", hs.URL+"/console/", nil)
	req.Host = "rebound.example:8080"
	resp, err := hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("Host rebound.example without accounts: status %d, want 403", resp.StatusCode)
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
		t.Fatalf("a decision without accounts: status %d, want 403", resp.StatusCode)
	}
}
