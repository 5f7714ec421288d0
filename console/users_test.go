package console_test

import (
	"errors"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/promcp/promcp-device/console"
	"github.com/promcp/promcp-device/server"
	"github.com/promcp/promcp-device/server/servertest"
)

// An MCP bearer token does not sign in: not as the old form sent it (a
// token field), nor as a password. Only the account's password does.
func TestConsoleTokenCannotSignIn(t *testing.T) {
	pw := "sue's passphrase"
	s := newSite(t, pw)
	tok := server.NewToken() // what `token add` gives an agent (or sue)
	for _, form := range []url.Values{
		{"token": {tok}},
		{"name": {"sue"}, "password": {tok}},
		{"name": {"sue"}, "token": {tok}},
		{"password": {pw}},
	} {
		if _, resp := s.signIn(t, form, s.srv.URL); resp.Header.Get("Location") != "/console/login?bad=1" || len(resp.Cookies()) != 0 {
			t.Errorf("sign-in with %v: %d %v, want refused back to the form, no session", form, resp.StatusCode, resp.Header)
		}
	}
	if _, resp := s.login(t, pw, s.srv.URL); resp.Header.Get("Location") != console.Path || len(resp.Cookies()) != 1 {
		t.Fatalf("sue with her password: %d %v, want signed in", resp.StatusCode, resp.Header)
	}
}

// An unknown name and a wrong password get the same answer, byte for byte,
// and the same log line: nothing tells whether the account exists.
func TestConsoleUnknownNameAnswersAsWrongPassword(t *testing.T) {
	var logs servertest.LogBuffer
	s := newSite(t, "sue's passphrase", logTo(&logs))
	answer := func(name string) string {
		resp := s.post("/console/login", "192.0.2.5:1", url.Values{"name": {name}, "password": {"guess"}}, "")
		b, _ := io.ReadAll(resp.Body)
		return resp.Status + " " + resp.Header.Get("Location") + " " + strings.Join(resp.Header.Values("Set-Cookie"), ";") + " " + string(b)
	}
	wrong, unknown := answer("sue"), answer("nobody")
	if wrong != unknown || !strings.Contains(wrong, "303 See Other /console/login?bad=1") {
		t.Fatalf("wrong password: %q\nunknown name: %q\nwant the same refusal", wrong, unknown)
	}
	if n := strings.Count(logs.String(), "unknown name or wrong password"); n != 2 {
		t.Errorf("the two refusals logged %d times the same line, want 2:\n%s", n, logs.String())
	}
}

// The users file: positioned errors, private mode, adding, replacing and
// removing accounts with comments kept, and roles checked.
func TestUsersFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "users.txt")
	h, err := console.HashPassword("maria's passphrase", console.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	bad := "# accounts\nmaria supervisor " + h + "\nbob operator\neve viewer not-a-hash\nmaria admin " + h + "\n"
	_, err = console.ParseUsers("users.txt", strings.NewReader(bad))
	for _, want := range []string{"users.txt:3: bad console users file: want NAME ROLE BCRYPT-HASH, got 2 fields",
		"users.txt:4: bad console users file: the password of eve is not a bcrypt hash", "users.txt:5: bad console users file: maria is already on line 2"} {
		if !errors.Is(err, console.ErrUsersFile) || err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseUsers = %v, want it to say %q", err, want)
		}
	}

	if added, err := console.SetUser(file, "maria", "supervisor", h); err != nil || !added {
		t.Fatalf("SetUser on a new file: %v, %v", added, err)
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("new users file: %v, %v; want mode 0600", fi.Mode(), err)
	}
	h2, _ := console.HashPassword("bob's passphrase", console.MinCost)
	console.SetUser(file, "bob", "operator", h2)
	h3, _ := console.HashPassword("maria's new passphrase", console.MinCost)
	if added, err := console.SetUser(file, "maria", "admin", h3); err != nil || added {
		t.Fatalf("SetUser of maria again: added %v, %v; want her line replaced", added, err)
	}
	text := string(readFileT(t, file))
	if !strings.HasPrefix(text, "# promcp-device console users") || strings.Count(text, "maria") != 1 || !strings.Contains(text, "maria admin "+h3+"\nbob operator "+h2+"\n") {
		t.Fatalf("users file after adding maria, bob, then maria again:\n%s", text)
	}
	u, err := console.LoadUsers(file)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := u.Check("maria", "maria's passphrase"); ok {
		t.Error("maria's old password still signs in")
	}
	if c, ok := u.Check("maria", "maria's new passphrase"); !ok || c != (server.Caller{Name: "maria", Role: "admin"}) {
		t.Errorf("maria's new password: %v, %v; want maria (admin)", c, ok)
	}
	if err := u.CheckRoles([]string{"viewer", "admin"}); err == nil || !strings.Contains(err.Error(), `users.txt:3: bad console users file: bob has role "operator", which is not declared`) {
		t.Errorf("CheckRoles without operator = %v, want it to name bob's line and role", err)
	}
	if _, ok := u.Check("bob", "bob's passphrase"); ok {
		t.Error("bob, whose role is not declared, signs in")
	}
	if ok, err := console.RemoveUser(file, "bob"); err != nil || !ok {
		t.Fatalf("RemoveUser bob: %v, %v", ok, err)
	}
	if ok, err := console.RemoveUser(file, "bob"); err != nil || ok {
		t.Fatalf("RemoveUser bob again: %v, %v; want false, no error", ok, err)
	}
	if u.Len() != 1 || u.List()[0].Name != "maria" || u.List()[0].Cost != console.MinCost {
		t.Errorf("after removing bob the loaded users follow the file: %+v", u.List())
	}

	os.Chmod(file, 0o644)
	if _, err := console.LoadUsers(file); err == nil || !strings.Contains(err.Error(), "mode 0644 lets group or others read or change the password hashes; run chmod 600") {
		t.Errorf("LoadUsers of a 0644 file = %v, want it refused, saying chmod 600", err)
	}
	if _, err := console.SetUser(file, "eve", "viewer", h); err == nil {
		t.Error("SetUser rewrote a file that serve would refuse (mode 0644)")
	}
}

// Passwords: at least 8 bytes, not past bcrypt's 72 bytes (refused, not cut), at
// a cost from MinCost to MaxCost.
func TestHashPassword(t *testing.T) {
	for _, tc := range []struct {
		pw   string
		cost int
		want string
	}{
		{"", console.MinCost, "0 bytes; want at least 8"},
		{"7 bytes", console.MinCost, "7 bytes; want at least 8"},
		{strings.Repeat("x", 73), console.MinCost, "73 bytes; bcrypt reads at most 72"},
		{"long enough", console.MinCost - 1, "cost 3"},
		{"long enough", console.MaxCost + 1, "cost 17"},
	} {
		if _, err := console.HashPassword(tc.pw, tc.cost); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("HashPassword(%d bytes, cost %d) = %v, want %q", len(tc.pw), tc.cost, err, tc.want)
		}
	}
	h, err := console.HashPassword(strings.Repeat("x", 72), console.MinCost)
	if err != nil || !strings.HasPrefix(h, "$2a$04$") {
		t.Errorf("HashPassword(72 bytes, cost 4) = %q, %v; want a bcrypt hash of cost 4", h, err)
	}
}

func readFileT(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
