package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// loggedServe is a `serve --http` process whose log goes to a file.
type loggedServe struct {
	serveProc
	t       *testing.T
	logText func() string // what it has logged so far
}

// startLogged starts `serve --sim --http 127.0.0.1:0` with args, its log
// (stderr) in a file, and waits for the URL it prints. The process writes
// its start-up log before it prints the URL, so the file holds it by then.
func startLogged(t *testing.T, args ...string) *loggedServe {
	t.Helper()
	logf, logText := logFile(t)
	cmd, url := launch(t, os.Interrupt, logf, binary, `on (https?://\S+/mcp)`, append([]string{"serve", "--sim", "--http", "127.0.0.1:0"}, args...)...)
	if url == "" {
		t.Fatalf("serve %v printed no URL; log:\n%s", args, logText())
	}
	return &loggedServe{serveProc: serveProc{cmd: cmd, url: url}, t: t, logText: logText}
}

// stop interrupts the server and waits for it to exit.
func (p *loggedServe) stop() { stopProc(p.t, p.cmd, os.Interrupt) }

// copyFile copies src to dst.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b := readFile(t, src)
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// The README's Pi steps used to copy only the manifest, and the gateway ran
// with no policy at all. Copied that way, the gateway now serves read_* and
// can_do, refuses every do_* with policy_denied saying why, and its log says
// so; --allow-no-policy is the explicit way to actuate without one. With
// the policy copied too, the log names it and its SHA-256.
func TestGatewayWithoutItsPolicyFileRefusesDo(t *testing.T) {
	dir := t.TempDir()
	manifest := filepath.Join(dir, "greenhouse.yml")
	copyFile(t, greenhouse, manifest)

	p := startLogged(t, "--manifest", manifest)
	log := p.logText()
	if !strings.Contains(log, "NO POLICY: every do_* is refused") || !strings.Contains(log, "greenhouse.policy.yml that the manifest names does not exist") {
		t.Errorf("start-up log without the policy file:\n%s\nwant it to say that every do_* is refused and why", log)
	}
	for _, proto := range protocols {
		s := httpSession(t, p.url, proto)
		r, isErr := s.call("do_set_heater", map[string]any{"value": true})
		if !isErr || r["status"] != "failed" || r["permission"] != "policy_denied" || !strings.Contains(r["reason"].(string), "no policy is loaded") {
			t.Fatalf("%s: do_set_heater without a policy = %v, want failed policy_denied naming the missing policy", proto, r)
		}
		if h, _ := s.call("read_heater", map[string]any{}); h["value"] != false || h["quality"] != "good" {
			t.Fatalf("%s: read_heater = %v, want false, good (reads are served)", proto, h)
		}
		rep, _ := s.call("can_do", map[string]any{"intent": map[string]any{"action": "do_set_heater", "value": true}})
		blocked, _ := rep["blocked"].([]any)
		if rep["feasible"] != false || len(blocked) == 0 || blocked[0].(map[string]any)["permission"] != "policy_denied" {
			t.Errorf("%s: can_do(heater) without a policy = %v, want blocked policy_denied", proto, rep)
		}
	}
	p.stop()

	allowed := startLogged(t, "--manifest", manifest, "--allow-no-policy")
	if log := allowed.logText(); !strings.Contains(log, "NO POLICY: do_* runs with the manifest's constraints only") {
		t.Errorf("start-up log with --allow-no-policy:\n%s\nwant a warning that no policy applies", log)
	}
	if r, _ := httpSession(t, allowed.url, protocols[0]).call("do_set_heater", map[string]any{"value": true}); r["status"] != "success" {
		t.Fatalf("with --allow-no-policy: do_set_heater = %v, want success", r)
	}
	allowed.stop()

	copyFile(t, strings.TrimSuffix(greenhouse, ".yml")+".policy.yml", filepath.Join(dir, "greenhouse.policy.yml"))
	data, _ := os.ReadFile(filepath.Join(dir, "greenhouse.policy.yml"))
	sum := sha256.Sum256(data)
	withPolicy := startLogged(t, "--manifest", manifest)
	log = withPolicy.logText()
	if !strings.Contains(log, "policy loaded") || !strings.Contains(log, filepath.Join(dir, "greenhouse.policy.yml")) || !strings.Contains(log, "sha256="+hex.EncodeToString(sum[:])) {
		t.Errorf("start-up log with the policy:\n%s\nwant it to name the file and its sha256 %x", log, sum)
	}
	if r, _ := httpSession(t, withPolicy.url, protocols[0]).call("do_set_heater", map[string]any{"value": true}); r["status"] != "success" {
		t.Fatalf("with the policy: do_set_heater = %v, want success", r)
	}

	// lint says which policy a manifest uses, and fails when it is missing.
	out, _, code := runCLI(t, "lint", manifest)
	if code != 0 || !strings.Contains(out, "greenhouse.policy.yml: ok: policy for 3 actions") || !strings.Contains(out, hex.EncodeToString(sum[:])) {
		t.Errorf("lint with the policy: exit %d\n%s", code, out)
	}
	os.Remove(filepath.Join(dir, "greenhouse.policy.yml"))
	out, _, code = runCLI(t, "lint", manifest)
	if code != 1 || !strings.Contains(out, "greenhouse.policy.yml that the manifest names does not exist") {
		t.Errorf("lint without the policy file: exit %d\n%s\nwant exit 1 naming the missing file", code, out)
	}
}

// yes answers every elicitation "accept, approve": an agent's own client.
type yes struct{ asked int }

func (y *yes) Elicit(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	y.asked++
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
		Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"approve": true}}}, nil
}

// A client that always answers yes does not get the fan above its approval
// threshold, on either protocol generation; the out-of-band token from
// approve does, once: not again after a restart of the gateway.
func TestApprovalCannotBeForgedOrReused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	state, key := filepath.Join(dir, "state"), filepath.Join(dir, "approval.key")
	for _, proto := range protocols {
		t.Run("always-yes client/"+proto, func(t *testing.T) {
			y := &yes{}
			s := commandSession(t, proto, binary, simServe("--manifest", greenhouse,
				"--state", filepath.Join(dir, "stdio-"+strings.ReplaceAll(proto, "-", ""))), client.WithElicitationHandler(y))
			r, _ := s.call("do_set_fan_speed", map[string]any{"value": 48, "idempotency_key": "purge-1"})
			if r["status"] != "failed" || r["permission"] != "requires_human_approval" {
				t.Fatalf("do_set_fan_speed(48) with an always-yes client = %v, want failed requires_human_approval", r)
			}
			if y.asked != 0 {
				t.Errorf("the client was asked %d times; its answer cannot approve, so it should not be asked", y.asked)
			}
			if v, _ := s.call("read_fan_speed_setpoint", map[string]any{}); v["value"] != 0.0 {
				t.Errorf("fan setpoint = %v, want 0 (untouched)", v["value"])
			}
		})
	}

	// --key-ttl 1ms: the stored result expires at once, so that only the
	// ledger stands between a reused token and a second actuation.
	args := []string{"--manifest", greenhouse, "--state", state, "--approval-key", key, "--key-ttl", "1ms", "--log-level", "warn"}
	p := startLogged(t, args...)
	s := httpSession(t, p.url, protocols[0])
	if r, _ := s.call("do_set_fan_speed", map[string]any{"value": 48, "idempotency_key": "purge-1"}); r["permission"] != "requires_human_approval" {
		t.Fatalf("without approval: %v, want requires_human_approval", r)
	}
	tok, stderr, code := runCLI(t, "approve", "--approval-key", key, "--manifest", greenhouse,
		"--tool", "do_set_fan_speed", "--value", "48", "--key", "purge-1", "--by", "maria")
	tok = strings.TrimSpace(tok)
	if code != 0 || tok == "" {
		t.Fatalf("approve: exit %d, %s", code, stderr)
	}
	if r, _ := s.call("do_set_fan_speed", map[string]any{"value": 48, "idempotency_key": "purge-1", "approval": tok}); r["status"] != "success" {
		t.Fatalf("with the approve token: %v, want success", r)
	}
	p.stop()
	logged := readFile(t, filepath.Join(state, auditFile))
	// Both records name the token that was spent, by its id.
	if n := len(approvedBy.FindAllString(string(logged), -1)); n != 2 {
		t.Errorf("audit log after an approved action: %d records carry the approval with its token id, want 2 (attempt and result):\n%s", n, logged)
	}

	p = startLogged(t, args...)
	s = httpSession(t, p.url, protocols[0])
	r, _ := s.call("do_set_fan_speed", map[string]any{"value": 48, "idempotency_key": "purge-1", "approval": tok})
	errObj, _ := r["error"].(map[string]any)
	if r["status"] != "failed" || errObj["field"] != "approval" || !strings.Contains(errObj["message"].(string), "already used") {
		t.Fatalf("the spent token after a restart: %v, want failed, the approval already used", r)
	}
}

// Roles are declared: a token or a caller with a role nobody declared is
// an error naming it. Tokens are listed and revoked, and a revoked token
// stops working on a running gateway.
func TestTokenRolesListRevoke(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.txt")
	if _, stderr, code := runCLI(t, "token", "add", "--tokens", tokens, "--name", "eve", "--role", "veiwer"); code != 2 || !strings.Contains(stderr, `"veiwer"`) {
		t.Fatalf("token add --role veiwer: exit %d, %q; want exit 2 naming the role", code, stderr)
	}
	if _, err := os.Stat(tokens); err == nil {
		t.Fatal("token add with an unknown role wrote the tokens file")
	}
	alice, _, code := runCLI(t, "token", "add", "--tokens", tokens, "--name", "alice", "--role", "operator")
	bob, _, code2 := runCLI(t, "token", "add", "--tokens", tokens, "--name", "bob", "--role", "viewer", "--manifest", greenhouse)
	alice, bob = strings.TrimSpace(alice), strings.TrimSpace(bob)
	if code != 0 || code2 != 0 {
		t.Fatalf("token add: exit %d, %d", code, code2)
	}
	out, _, code := runCLI(t, "token", "list", "--tokens", tokens)
	if code != 0 || !regexp.MustCompile(`(?m)^alice\s+operator\s+[0-9a-f]{12}$`).MatchString(out) || !strings.Contains(out, "bob") ||
		strings.Contains(out, alice) || strings.Contains(out, bob) {
		t.Fatalf("token list: exit %d\n%s\nwant alice and bob with roles and hash prefixes, never the tokens", code, out)
	}

	// A tokens file with an undeclared role does not serve.
	bad := filepath.Join(dir, "bad.txt")
	os.WriteFile(bad, []byte("eve veiwer "+strings.Repeat("ab", 32)+"\n"), 0o600)
	if _, stderr, code := runCLI(t, "serve", "--sim", "--manifest", greenhouse, "--http", "127.0.0.1:0", "--tokens", bad); code != 1 || !strings.Contains(stderr, `bad.txt:1`) || !strings.Contains(stderr, `"veiwer"`) {
		t.Fatalf("serve with a token of role veiwer: exit %d, %q; want exit 1 naming bad.txt:1 and the role", code, stderr)
	}
	if _, stderr, code := runCLI(t, "serve", "--sim", "--manifest", greenhouse, "--role", "admn"); code != 2 || !strings.Contains(stderr, `"admn"`) {
		t.Fatalf("serve --role admn: exit %d, %q; want exit 2 naming the role", code, stderr)
	}

	p := startLogged(t, "--manifest", greenhouse, "--tokens", tokens, "--log-level", "warn")
	status := func(tok string) int {
		req, _ := http.NewRequest("POST", p.url, strings.NewReader(initBody))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if a, b := status(alice), status(bob); a != 200 || b != 200 {
		t.Fatalf("before revoking: alice %d, bob %d; want 200, 200", a, b)
	}
	if _, stderr, code := runCLI(t, "token", "revoke", "--tokens", tokens, "--name", "bob"); code != 0 {
		t.Fatalf("token revoke bob: exit %d, %s", code, stderr)
	}
	if a, b := status(alice), status(bob); a != 200 || b != 401 {
		t.Fatalf("after revoking bob on the running gateway: alice %d, bob %d; want 200, 401", a, b)
	}
	if _, stderr, code := runCLI(t, "token", "revoke", "--tokens", tokens, "--name", "bob"); code != 1 || !strings.Contains(stderr, "no token") {
		t.Fatalf("revoking bob again: exit %d, %q; want exit 1", code, stderr)
	}
	if out, _, _ := runCLI(t, "token", "list", "--tokens", tokens); strings.Contains(out, "bob") || !strings.Contains(out, "alice") {
		t.Fatalf("token list after revoking bob:\n%s", out)
	}
	if fi, err := os.Stat(tokens); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("tokens file after revoke: %v, %v; want mode 0600", fi.Mode(), err)
	}
}

// approve refuses what would only print a token the gateway refuses: a key
// file that does not exist (it used to create one), a tool the manifest
// does not serve, a value outside the tool's constraints.
func TestApproveRefusesWhatCannotWork(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "approval.key")
	base := []string{"approve", "--manifest", greenhouse, "--key", "k1"}
	run := func(args ...string) (string, string, int) { return runCLI(t, append(cloneArgs(base), args...)...) }

	if _, stderr, code := run("--approval-key", key, "--tool", "do_set_fan_speed", "--value", "48"); code != 1 || !strings.Contains(stderr, "does not exist") {
		t.Fatalf("approve with a missing key file: exit %d, %q; want exit 1, does not exist", code, stderr)
	}
	if _, err := os.Stat(key); err == nil {
		t.Fatal("approve created the missing key file")
	}
	// serve --approval-key creates the key; approve then uses it.
	p := startLogged(t, "--manifest", greenhouse, "--approval-key", key, "--log-level", "warn")
	p.stop()
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown tool", []string{"--tool", "do_set_fan_sped", "--value", "48"}, 2, `"do_set_fan_sped" is not a do_* tool`},
		{"above the maximum", []string{"--tool", "do_set_fan_speed", "--value", "60"}, 2, "above the maximum 50"},
		{"wrong type", []string{"--tool", "do_set_heater", "--value", "48"}, 2, "do_set_heater"},
		{"valid", []string{"--tool", "do_set_fan_speed", "--value", "48"}, 0, "usable once"},
	}
	for _, tc := range cases {
		out, stderr, code := run(append([]string{"--approval-key", key}, tc.args...)...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("approve %s: exit %d, %q; want exit %d and %q", tc.name, code, stderr, tc.code, tc.want)
		}
		if (code == 0) != (strings.TrimSpace(out) != "") {
			t.Errorf("approve %s: exit %d printed %q; a token only on success", tc.name, code, out)
		}
	}
	// The policy's approval ttl bounds the token's life.
	withTTL := filepath.Join(dir, "greenhouse.yml")
	copyFile(t, greenhouse, withTTL)
	pol, _ := os.ReadFile(strings.TrimSuffix(greenhouse, ".yml") + ".policy.yml")
	os.WriteFile(filepath.Join(dir, "greenhouse.policy.yml"), []byte(strings.Replace(string(pol), "approval: {above: 45}", "approval: {above: 45, ttl: 5m}", 1)), 0o644)
	ttlArgs := []string{"approve", "--manifest", withTTL, "--key", "k1", "--approval-key", key, "--tool", "do_set_fan_speed", "--value", "48"}
	if _, stderr, code := runCLI(t, append(ttlArgs, "--ttl", "1h")...); code != 2 || !strings.Contains(stderr, "longer than the approval ttl 5m0s") {
		t.Errorf("approve --ttl 1h under a 5m policy ttl: exit %d, %q; want exit 2", code, stderr)
	}
	if _, stderr, code := runCLI(t, ttlArgs...); code != 0 || !strings.Contains(stderr, "usable once until") {
		t.Errorf("approve under a 5m policy ttl: exit %d, %q", code, stderr)
	}
}

func cloneArgs(s []string) []string { return append([]string(nil), s...) }

// Where the policy opts in (via: elicitation), the client's yes approves,
// on both protocol generations; --approval-out-of-band-only takes that back.
func TestElicitationOptInAndOverride(t *testing.T) {
	dir := t.TempDir()
	manifest := filepath.Join(dir, "greenhouse.yml")
	copyFile(t, greenhouse, manifest)
	pol := readFile(t, strings.TrimSuffix(greenhouse, ".yml")+".policy.yml")
	optIn := strings.Replace(string(pol), "approval: {above: 45}", "approval: {above: 45, via: elicitation}", 1)
	if optIn == string(pol) {
		t.Fatal("the example policy no longer has approval: {above: 45}")
	}
	os.WriteFile(filepath.Join(dir, "greenhouse.policy.yml"), []byte(optIn), 0o644)
	for _, tc := range []struct {
		flags      []string
		wantStatus string
		wantAsked  int
	}{
		{nil, "success", 1},
		{[]string{"--approval-out-of-band-only"}, "failed", 0},
	} {
		for _, proto := range protocols {
			t.Run(strings.Join(tc.flags, " ")+"/"+proto, func(t *testing.T) {
				y := &yes{}
				s := commandSession(t, proto, binary, simServe(append([]string{"--manifest", manifest}, tc.flags...)...), client.WithElicitationHandler(y))
				r, _ := s.call("do_set_fan_speed", map[string]any{"value": 48, "idempotency_key": "purge-1"})
				if r["status"] != tc.wantStatus || y.asked != tc.wantAsked {
					t.Fatalf("do_set_fan_speed(48) = %v, asked %d times; want %s, asked %d", r, y.asked, tc.wantStatus, tc.wantAsked)
				}
			})
		}
	}
}

// approvedBy matches an audit record's out-of-band approval by maria,
// with the id of the one-time token that was spent.
var approvedBy = regexp.MustCompile(`"approval":\{"by":"maria","method":"out_of_band","at":"[^"]+","id":"[0-9a-f]{16,}"\}`)
