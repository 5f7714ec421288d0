package console_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/promcp/promcp-device/console"
	"github.com/promcp/promcp-device/server/servertest"
)

// post sends a form to the console's handler as if from remote (ip:port),
// with the console's own origin and the cookie given ("" for none).
func (s *site) post(path, remote string, form url.Values, cookie string) *http.Response {
	req := httptest.NewRequest("POST", "http://gw.test"+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "http://gw.test")
	req.RemoteAddr = remote
	if cookie != "" {
		req.Header.Set("Cookie", cookie)
	}
	w := httptest.NewRecorder()
	s.h.ServeHTTP(w, req)
	return w.Result()
}

// loginFrom posts a sign-in as sue with password from remote and returns
// the status and the response.
func (s *site) loginFrom(remote, password string) (int, *http.Response) {
	resp := s.post("/console/login", remote, url.Values{"name": {"sue"}, "password": {password}}, "")
	return resp.StatusCode, resp
}

// fail makes n sign-ins with a wrong password from remote, each of which
// must be refused back to the form (303), not limited.
func (s *site) fail(t *testing.T, remote string, n int) {
	t.Helper()
	for i := range n {
		if code, resp := s.loginFrom(remote, "guess"); code != http.StatusSeeOther || resp.Header.Get("Location") != "/console/login?bad=1" {
			t.Fatalf("failed login %d of %d from %s: %d %v, want 303 back to the form", i+1, n, remote, code, resp.Header)
		}
	}
}

// logTo makes the console log to the returned buffer.
func logTo(b *servertest.LogBuffer) func(*console.Config) {
	return func(c *console.Config) { c.Log = slog.New(slog.NewTextHandler(b, nil)) }
}

// An address gets 5 failed logins a minute (whatever its source port),
// then 429 with Retry-After, even with a good password, logged once per
// window; another address logs in meanwhile; when the minute is over the
// address may try again.
func TestConsoleLoginLimitedPerAddress(t *testing.T) {
	pw := "sue-passphrase-0123"
	var logs servertest.LogBuffer
	s := newSite(t, pw, logTo(&logs))
	attacker := func(port int) string { return fmt.Sprintf("192.0.2.7:%d", 40000+port) }
	for i := range 5 {
		s.fail(t, attacker(i), 1)
	}
	for i, try := range []string{"guess", pw, "guess"} {
		code, resp := s.loginFrom(attacker(10+i), try)
		if code != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "60" || len(resp.Cookies()) != 0 {
			t.Fatalf("attempt %d after 5 failures: %d, Retry-After %q, cookies %v; want 429, Retry-After 60, no session",
				6+i, code, resp.Header.Get("Retry-After"), resp.Cookies())
		}
	}
	if n := strings.Count(logs.String(), "login attempts limited"); n != 1 {
		t.Errorf("3 refused attempts logged the limit %d times, want once per window", n)
	}
	if code, resp := s.loginFrom("192.0.2.8:50000", pw); code != http.StatusSeeOther || len(resp.Cookies()) != 1 {
		t.Fatalf("sue's login from another address while 192.0.2.7 is limited: %d, cookies %v; want 303 with a session", code, resp.Cookies())
	}
	s.step(30 * time.Second)
	if code, resp := s.loginFrom(attacker(20), pw); code != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "30" {
		t.Fatalf("30 s later: %d, Retry-After %q; want 429, Retry-After 30", code, resp.Header.Get("Retry-After"))
	}
	s.step(30 * time.Second)
	s.fail(t, attacker(21), 5) // a minute after the first failure, the address is heard again
	if code, _ := s.loginFrom(attacker(40), "guess"); code != http.StatusTooManyRequests {
		t.Fatalf("5 more failures in the new window: %d, want 429", code)
	}
	if n := strings.Count(logs.String(), "login attempts limited"); n != 2 {
		t.Errorf("two limited windows logged the limit %d times, want 2", n)
	}
}

// A success forgets the address's failures: a person who mistyped 4 times
// and then logged in has 5 tries again.
func TestConsoleLoginSuccessResetsAddress(t *testing.T) {
	pw := "sue-passphrase-0123"
	s := newSite(t, pw)
	s.fail(t, "198.51.100.3:1000", 4)
	if code, _ := s.loginFrom("198.51.100.3:1001", pw); code != http.StatusSeeOther {
		t.Fatalf("5th attempt, with the right token: %d, want 303", code)
	}
	s.fail(t, "198.51.100.3:1002", 5) // the count starts again
}

// Concurrent attempts from one address cannot overrun the limit: of 40 at
// once, 5 reach the password check and 35 get 429.
func TestConsoleLoginLimitUnderOverlap(t *testing.T) {
	s := newSite(t, "sue-passphrase-0123")
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, _ := s.loginFrom(fmt.Sprintf("[2001:db8::1]:%d", 2000+i), "guess")
			mu.Lock()
			codes[code]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if codes[http.StatusSeeOther] != 5 || codes[http.StatusTooManyRequests] != 35 {
		t.Fatalf("40 concurrent bad logins from one address: %v, want 5×303 and 35×429", codes)
	}
}

// A spray of 10,000 source addresses neither lets a limited address in
// again nor keeps another address from logging in.
func TestConsoleLoginLimitUnderSpray(t *testing.T) {
	pw := "sue-passphrase-0123"
	s := newSite(t, pw)
	s.fail(t, "192.0.2.7:1", 5)
	for i := range 10000 {
		// An empty password is refused without a hash (it is counted all
		// the same): 10,000 bcrypt checks would take minutes under -race.
		s.loginFrom(fmt.Sprintf("10.%d.%d.%d:1", i>>16, i>>8&255, i&255), "")
	}
	if code, _ := s.loginFrom("192.0.2.7:2", pw); code != http.StatusTooManyRequests {
		t.Fatalf("the limited address after a spray of 10,000 others: %d, want still 429", code)
	}
	if code, resp := s.loginFrom("192.0.2.9:1", pw); code != http.StatusSeeOther || len(resp.Cookies()) != 1 {
		t.Fatalf("sue from a fresh address during the spray: %d, want 303 with a session", code)
	}
}

// With SecureCookie the session cookie is Secure over plain HTTP (TLS ends
// at a proxy in front), and so is the cookie that logs out; without it, a
// plain-HTTP cookie is not Secure, whatever X-Forwarded-Proto says.
func TestConsoleSecureCookie(t *testing.T) {
	pw := "sue-passphrase-0123"
	plain := newSite(t, pw)
	req := httptest.NewRequest("POST", "http://gw.test/console/login", strings.NewReader(url.Values{"name": {"sue"}, "password": {pw}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "http://gw.test")
	req.Header.Set("X-Forwarded-Proto", "https")
	w := httptest.NewRecorder()
	plain.h.ServeHTTP(w, req)
	if ck := w.Result().Cookies(); len(ck) != 1 || ck[0].Secure {
		t.Fatalf("plain HTTP without the option, X-Forwarded-Proto https: cookies %+v, want one, not Secure", ck)
	}

	s := newSite(t, pw, func(c *console.Config) { c.SecureCookie = true })
	_, resp := s.loginFrom("192.0.2.8:1", pw)
	ck := resp.Cookies()
	if len(ck) != 1 || !ck[0].Secure || !ck[0].HttpOnly || ck[0].SameSite != http.SameSiteStrictMode {
		t.Fatalf("login with SecureCookie over plain HTTP: cookies %+v, want one Secure HttpOnly SameSite=Strict", ck)
	}
	session := ck[0].Name + "=" + ck[0].Value
	page := httptest.NewRequest("GET", "http://gw.test/console/", nil)
	page.Header.Set("Cookie", session)
	w = httptest.NewRecorder()
	s.h.ServeHTTP(w, page)
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(w.Body.String())
	if m == nil {
		t.Fatalf("no CSRF token on the page:\n%s", w.Body.String())
	}
	out := s.post("/console/logout", "192.0.2.8:2", url.Values{"csrf": {m[1]}}, session).Cookies()
	if len(out) != 1 || out[0].MaxAge >= 0 || !out[0].Secure {
		t.Fatalf("logout with SecureCookie: cookies %+v, want one Secure cookie that deletes the session", out)
	}
}
