package main

import (
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// runCLIIn runs the binary with args and stdin.
func runCLIIn(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := command(t, binary, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if cmd.ProcessState == nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), cmd.ProcessState.ExitCode()
}

// console-user writes the accounts file (mode 0600, a bcrypt hash, the
// password from stdin and never from the command line) and refuses what
// serve would refuse; serve refuses a users file others may read and an
// account of an undeclared role; on a running gateway, a person signs in
// with an account added, and removing it ends the session.
func TestConsoleUserCommand(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "console-users.txt")
	add := func(stdin string, args ...string) (string, int) {
		_, stderr, code := runCLIIn(t, stdin, append([]string{"console-user", "add"}, args...)...)
		return stderr, code
	}
	for _, tc := range []struct {
		name, stdin string
		args        []string
		code        int
		want        string
	}{
		{"password on the command line", "", []string{"maria", "--role", "supervisor", "--file", file, "--password", "secret-passphrase"}, 2, "flag provided but not defined: -password"},
		{"no password", "", []string{"maria", "--role", "supervisor", "--file", file}, 1, "no password on stdin"},
		{"short password", "short\n", []string{"maria", "--role", "supervisor", "--file", file}, 2, "want at least 8"},
		{"undeclared role", "maria's passphrase\n", []string{"maria", "--role", "supervsor", "--file", file}, 2, `--role "supervsor" is not a role`},
		{"new account without a role", "maria's passphrase\n", []string{"maria", "--file", file}, 2, "maria is a new account: give its --role"},
		{"cost out of range", "maria's passphrase\n", []string{"maria", "--role", "supervisor", "--file", file, "--cost", "40"}, 2, "--cost 40: want 4 to 16"},
	} {
		if stderr, code := add(tc.stdin, tc.args...); code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("console-user add, %s: exit %d, %q; want exit %d, %q", tc.name, code, stderr, tc.code, tc.want)
		}
	}
	if _, err := os.Stat(file); err == nil {
		t.Fatal("a refused console-user add wrote the users file")
	}
	if stderr, code := add("maria's passphrase\n", "maria", "--role", "supervisor", "--file", file, "--cost", "4"); code != 0 || !strings.Contains(stderr, "added maria (supervisor)") {
		t.Fatalf("console-user add maria: exit %d, %s", code, stderr)
	}
	if stderr, code := add("maria's new passphrase\r\n", "--file", file, "--cost", "4", "maria"); code != 0 || !strings.Contains(stderr, "set the password and role (supervisor) of maria") {
		t.Fatalf("console-user add maria again, without --role: exit %d, %s; want her password set, her role kept", code, stderr)
	}
	text := string(readFile(t, file))
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 || !regexp.MustCompile(`(?m)^maria supervisor \$2a\$04\$\S{53}$`).MatchString(text) || strings.Contains(text, "passphrase") {
		t.Fatalf("users file (mode %v, %v):\n%s\nwant mode 0600 and maria's bcrypt hash, never her password", fi.Mode(), err, text)
	}
	if out, _, code := runCLI(t, "console-user", "list", "--file", file); code != 0 || !regexp.MustCompile(`^maria\s+supervisor\s+bcrypt cost 4\n$`).MatchString(out) {
		t.Fatalf("console-user list: exit %d, %q; want maria, her role and cost, no hash", code, out)
	}

	// serve refuses a users file others may read, and an undeclared role.
	serveArgs := []string{"serve", "--sim", "--manifest", greenhouse, "--http", "127.0.0.1:0", "--console", "--console-users", file}
	os.Chmod(file, 0o644)
	if _, stderr, code := runCLI(t, serveArgs...); code != 1 || !strings.Contains(stderr, "run chmod 600 "+file) {
		t.Errorf("serve with a users file of mode 0644: exit %d, %q; want exit 1 saying chmod 600", code, stderr)
	}
	os.Chmod(file, 0o600)
	bad := filepath.Join(dir, "bad-users.txt")
	os.WriteFile(bad, []byte(strings.Replace(text, "maria supervisor", "maria supervsor", 1)), 0o600)
	if _, stderr, code := runCLI(t, append(serveArgs[:len(serveArgs)-1], bad)...); code != 1 || !strings.Contains(stderr, `bad-users.txt:2: bad console users file: maria has role "supervsor", which is not declared`) {
		t.Errorf("serve with an account of role supervsor: exit %d, %q; want exit 1 naming the line and the role", code, stderr)
	}

	// On a loopback gateway without tokens, a person signs in with her
	// account; removing it ends her session at once.
	base := strings.TrimSuffix(startHTTP(t, "--manifest", greenhouse, "--console", "--console-users", file), "/mcp")
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	signIn := func(password string) string {
		req, _ := http.NewRequest("POST", base+"/console/login", strings.NewReader(url.Values{"name": {"maria"}, "password": {password}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", base)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return readAll(t, resp)
	}
	if page := signIn("maria's passphrase"); !strings.Contains(page, "Unknown name or wrong password") {
		t.Fatalf("maria's old password signed in")
	}
	if page := signIn("maria's new passphrase"); !strings.Contains(page, "maria · supervisor · approves") {
		t.Fatalf("maria's sign-in: the page does not show her as a supervisor who approves:\n%s", page)
	}
	live := func() int {
		resp, err := c.Get(base + "/console/live")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := live(); got != http.StatusOK {
		t.Fatalf("maria's session: /console/live %d, want 200", got)
	}
	if _, stderr, code := runCLI(t, "console-user", "remove", "maria", "--file", file); code != 0 {
		t.Fatalf("console-user remove maria: exit %d, %s", code, stderr)
	}
	if got := live(); got != http.StatusUnauthorized {
		t.Fatalf("maria's session after her account was removed: /console/live %d, want 401", got)
	}
	if _, stderr, code := runCLI(t, "console-user", "remove", "maria", "--file", file); code != 1 || !strings.Contains(stderr, `no account "maria"`) {
		t.Errorf("removing maria again: exit %d, %q; want exit 1", code, stderr)
	}
}
