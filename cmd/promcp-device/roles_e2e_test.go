package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/promcp/promcp-device/server"
)

// greenhouseWithPolicy copies the greenhouse example into a temporary
// directory with its policy changed by edit, and returns the manifest.
func greenhouseWithPolicy(t *testing.T, edit func(string) string) string {
	t.Helper()
	dir := t.TempDir()
	m := filepath.Join(dir, "greenhouse.yml")
	if err := os.WriteFile(m, readFile(t, greenhouse), 0o644); err != nil {
		t.Fatal(err)
	}
	pol := string(readFile(t, "../../manifests/examples/greenhouse.policy.yml"))
	if err := os.WriteFile(filepath.Join(dir, "greenhouse.policy.yml"), []byte(edit(pol)), 0o644); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestLintRefusesMisspeltRole is issue 23's "a misspelt read-only role
// acts": roles: [veiwer, operator, ...] passed lint, and a veiwer token
// opened the vent. lint now fails, naming both roles and the position, and
// serve refuses the policy too.
func TestLintRefusesMisspeltRole(t *testing.T) {
	m := greenhouseWithPolicy(t, func(p string) string {
		return strings.Replace(p, "roles: [viewer, operator, supervisor, admin]", "roles: [veiwer, operator, supervisor, admin]", 1)
	})
	out, _, code := runCLI(t, "lint", m)
	want := `greenhouse.policy.yml:14:9: roles[0]: bad name role "veiwer" is one edit from the built-in role "viewer"`
	if code != 1 || !strings.Contains(out, want) {
		t.Fatalf("lint: exit %d\n%s\nwant exit 1 and %q", code, out, want)
	}
	_, stderr, code := runCLI(t, "serve", "--sim", "--manifest", m, "--role", "veiwer")
	if code == 0 || !strings.Contains(stderr, `"veiwer" is one edit from the built-in role "viewer"`) {
		t.Fatalf("serve: exit %d, stderr %q; want it refused naming veiwer and viewer", code, stderr)
	}
}

// TestDeclaredReadOnlyRoleCannotAct: read-only is declared in the policy:
// a caller of a role declared {name: auditor, read_only: true} is refused
// do_* over stdio with a reason that says so, and the vent stays closed.
func TestDeclaredReadOnlyRoleCannotAct(t *testing.T) {
	m := greenhouseWithPolicy(t, func(p string) string {
		return strings.Replace(p, "roles: [viewer, operator, supervisor, admin]",
			"roles: [viewer, operator, supervisor, admin, {name: auditor, read_only: true}]", 1)
	})
	s := stdioSession(t, "", "--manifest", m, "--role", "auditor")
	r, _ := s.call("do_set_vent", map[string]any{"value": true})
	msg, _ := r["error"].(map[string]any)["message"].(string)
	if r["permission"] != "permission_insufficient" || !strings.Contains(msg, `role "auditor" is read-only in the policy`) {
		t.Fatalf("do_set_vent as auditor = %v; want permission_insufficient, read-only in the policy", r)
	}
	if v, _ := s.call("read_vent", map[string]any{}); v["value"] != false {
		t.Fatalf("read_vent = %v after a refused do_set_vent; want false", v)
	}
}

// TestGreenhouseInterlockBothWays is issue 23's "the greenhouse example's
// interlock is one-way": heater on, then vent open, both succeeded. Through
// the binary, with the example's policy, either order now ends with one of
// them refused, and the refused actuator untouched.
func TestGreenhouseInterlockBothWays(t *testing.T) {
	// At noon: the greenhouse's night window (22:00-06:00) would refuse
	// the vent before its interlock is reached.
	s := stdioSession(t, "", "--manifest", greenhouse, "--sim-start", "2026-07-01T12:00:00+02:00")
	if r, _ := s.call("do_set_heater", map[string]any{"value": true}); r["status"] != "success" {
		t.Fatalf("do_set_heater(true) = %v", r)
	}
	r, _ := s.call("do_set_vent", map[string]any{"value": true})
	if r["permission"] != "policy_denied" || !strings.Contains(r["reason"].(string), "heater") {
		t.Fatalf("do_set_vent(true) with the heater on = %v; want policy_denied naming the heater", r)
	}
	if v, _ := s.call("read_vent", map[string]any{}); v["value"] != false {
		t.Fatalf("read_vent = %v after the refusal; want false", v)
	}
	if r, _ := s.call("do_set_heater", map[string]any{"value": false}); r["status"] != "success" {
		t.Fatalf("do_set_heater(false) = %v; switching off stays allowed", r)
	}
	if r, _ := s.call("do_set_vent", map[string]any{"value": true}); r["status"] != "success" {
		t.Fatalf("do_set_vent(true) with the heater off = %v", r)
	}
	r, _ = s.call("do_set_heater", map[string]any{"value": true})
	if r["permission"] != "policy_denied" || !strings.Contains(r["reason"].(string), "vent") {
		t.Fatalf("do_set_heater(true) with the vent open = %v; want policy_denied naming the vent", r)
	}
	if r, _ := s.call("do_set_vent", map[string]any{"value": false}); r["status"] != "success" {
		t.Fatalf("do_set_vent(false) = %v; closing stays allowed", r)
	}
}

// TestSiteTestApproveDeny (issue 23, item 8): a site test approves and
// denies a waiting request as a person in the console would, through the
// binary with a JUnit report; an approve step by a role that is not an
// approver, or by the caller who asked, fails the step and names why.
func TestSiteTestApproveDeny(t *testing.T) {
	example := "../../manifests/examples/site-tests/greenhouse-approval.yml"
	junit := filepath.Join(t.TempDir(), "junit.xml")
	out, stderr, code := runCLI(t, "test", example, "--junit", junit)
	if code != 0 || !strings.Contains(out, "denied: do_set_fan_speed value=48") || !strings.Contains(out, "approved: do_set_fan_speed value=46") {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	if b := readFile(t, junit); !strings.Contains(string(b), `failures="0"`) || !strings.Contains(string(b), "the supervisor approves the newest waiting request") {
		t.Fatalf("junit:\n%s", b)
	}
	examples, _ := filepath.Abs("../../manifests/examples")
	src := strings.ReplaceAll(string(readFile(t, example)), "../greenhouse", examples+"/greenhouse")
	for _, c := range []struct{ name, from, to, want string }{
		{"an operator approves", "approve: {as: {name: sue, role: supervisor}}", "approve: {as: {name: op, role: operator}}",
			"expected: a role of the approvers: supervisor, admin"},
		{"the asker approves", "approve: {as: {name: sue, role: supervisor}}", "approve: {as: {name: agent, role: supervisor}}",
			"nobody approves their own request"},
	} {
		f := filepath.Join(t.TempDir(), "approval.yml")
		if err := os.WriteFile(f, []byte(strings.Replace(src, c.from, c.to, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		out, _, code := runCLI(t, "test", f)
		if code != 1 || !strings.Contains(out, c.want) || !strings.Contains(out, "FAIL  6") {
			t.Errorf("%s: exit %d\n%s\nwant exit 1, step 6 failed, %q", c.name, code, out, c.want)
		}
	}
}

// TestLintTokensRoles: lint --tokens checks each token's role against the
// manifest's policy, and names the declared role one edit away.
func TestLintTokensRoles(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens.txt")
	lines := "# tokens\n" + server.TokenLine("alice", "operator", server.NewToken()) + "\n" + server.TokenLine("eve", "veiwer", server.NewToken()) + "\n"
	if err := os.WriteFile(tokens, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, code := runCLI(t, "lint", "--tokens", tokens, greenhouse)
	want := `tokens.txt:3: token eve has role "veiwer", which ../../manifests/examples/greenhouse.policy.yml does not declare (want viewer, operator, supervisor, admin); one edit from "viewer": a misspelling?`
	if code != 1 || !strings.Contains(out, want) || strings.Contains(out, "alice") {
		t.Fatalf("lint --tokens: exit %d\n%s\nwant exit 1 and %q, nothing about alice", code, out, want)
	}
}
