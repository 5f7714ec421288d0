package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/promcp/promcp-device/lint"
	"github.com/promcp/promcp-device/server"
)

// lintJSON runs `lint --json args...` and returns the exit code and the
// codes found, as "tool:code".
func lintJSON(t *testing.T, args ...string) (int, []string) {
	t.Helper()
	out, stderr, code := runCLI(t, append([]string{"lint", "--json"}, args...)...)
	var rep struct {
		Server []lint.Finding `json:"server"`
		Tools  []struct {
			Findings []lint.Finding `json:"findings"`
		} `json:"tools"`
		Summary struct {
			Calls int  `json:"calls"`
			Pass  bool `json:"pass"`
		} `json:"summary"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("lint --json %v: exit %d, %v\n%s\n%s", args, code, err, out, stderr)
	}
	var got []string
	all := rep.Server
	for _, tl := range rep.Tools {
		all = append(all, tl.Findings...)
	}
	for _, f := range all {
		got = append(got, f.Tool+":"+f.Code)
	}
	slices.Sort(got)
	if rep.Summary.Pass != (code == 0) {
		t.Errorf("lint --json %v: summary.pass %t but exit %d", args, rep.Summary.Pass, code)
	}
	return code, got
}

// TestLintExamplesLive: the examples, served by the real binary over HTTP
// and over stdio, lint clean with --call-reads (every read_* and can_do
// answer checked) and match their manifests. Their only findings are the
// density warnings S004/S005 (more than 8 tools, more than 5 do_*), so
// they pass without --strict and fail with it.
func TestLintExamplesLive(t *testing.T) {
	t.Parallel()
	if lint.ProvenanceKey != server.ProvenanceKey {
		t.Fatalf("lint checks the stamp under %q, the server writes %q", lint.ProvenanceKey, server.ProvenanceKey)
	}
	density := func(codes []string) bool {
		return !slices.ContainsFunc(codes, func(c string) bool { return c != "server:S004" && c != "server:S005" })
	}
	url := startHTTP(t, "--manifest", greenhouse)
	out, _, code := runCLI(t, "lint", "--call-reads", "--manifest", greenhouse, "--url", url)
	if code != 0 || !strings.Contains(out, "✓ read_temperature_zone1") || !strings.Contains(out, "0 error(s)") ||
		!strings.Contains(out, "--call-reads: 15 calls") || strings.Contains(out, "✗") {
		t.Fatalf("lint --call-reads --url greenhouse: exit %d\n%s", code, out)
	}
	code, codes := lintJSON(t, "--strict", "--call-reads", "--url", url)
	if code != 1 || !density(codes) || !slices.Contains(codes, "server:S004") {
		t.Errorf("lint --strict greenhouse: exit %d, %v; want exit 1 on S004 only", code, codes)
	}

	code, codes = lintJSON(t, "--call-reads", "--manifest", labBench, "--", binary, "serve", "--sim", "--manifest", labBench, "--log-level", "error")
	if code != 0 || !density(codes) {
		t.Errorf("lint -- serve lab-bench: exit %d, %v; want exit 0, density warnings at most", code, codes)
	}

	// Drift: the greenhouse served, checked against the lab bench.
	code, codes = lintJSON(t, "--manifest", labBench, "--url", url)
	if code != 1 || !slices.Contains(codes, "server:X001") || !slices.Contains(codes, "server:X002") {
		t.Errorf("lint --manifest lab-bench --url greenhouse: exit %d, %v; want X001 and X002", code, codes)
	}
}

// TestLintToolList: a third-party tool list as a file gets the reference
// linter's findings; files that are no tool list, and servers that do not
// answer, exit 2.
func TestLintToolList(t *testing.T) {
	dir := t.TempDir()
	list := filepath.Join(dir, "tools.json")
	os.WriteFile(list, []byte(`{"tools": [
		{"name": "do_launch", "description": "Launch the rocket standing on the given pad.",
		 "inputSchema": {"type": "object", "properties": {"pad": {"type": "string"}}}},
		{"name": "read_secret", "description": "Returns the API secret; use rotate to create a new one.",
		 "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true, "idempotentHint": true}},
		{"name": "get_status", "description": "Status of every rocket on every pad.", "inputSchema": {"type": "object"}},
		{"name": "list_rockets", "description": "Names of the rockets in the hangar.", "inputSchema": {"type": "object"}}]}`), 0o644)
	code, codes := lintJSON(t, list)
	want := []string{"do_launch:I003", "do_launch:M002", "do_launch:R000", "get_status:N003", "get_status:R000",
		"list_rockets:N003", "list_rockets:R000", "read_secret:D003", "read_secret:M002", "read_secret:R000", "server:S001"}
	if code != 1 || !slices.Equal(codes, want) {
		t.Errorf("lint tools.json: exit %d, %v\nwant exit 1, %v", code, codes, want)
	}
	out, _, code := runCLI(t, "lint", list)
	if code != 1 || !strings.Contains(out, "✗ server") || !strings.Contains(out, "[I003] do_* inputSchema must include 'idempotency_key'") {
		t.Errorf("lint tools.json (text): exit %d\n%s", code, out)
	}

	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"tool": []}`), 0o644)
	for _, args := range [][]string{{bad}, {filepath.Join(dir, "missing.json")}, {"--url", "http://127.0.0.1:1/mcp"},
		{"--", filepath.Join(dir, "no-such-server")}, {"--call-reads", list}} {
		if _, stderr, code := runCLI(t, append([]string{"lint"}, args...)...); code != 2 || stderr == "" {
			t.Errorf("lint %v: exit %d, stderr %q; want exit 2 and why", args, code, stderr)
		}
	}
}

// TestLintHeader: --header carries the bearer token to a server that
// requires one; without it the server cannot be linted (exit 2).
func TestLintHeader(t *testing.T) {
	file, _, viewer := tokensFile(t)
	url := startHTTP(t, "--manifest", labBench, "--tokens", file)
	if _, stderr, code := runCLI(t, "lint", "--url", url); code != 2 || !strings.Contains(stderr, "authorization required") {
		t.Errorf("lint --url without the token: exit %d, %q; want exit 2, authorization required", code, stderr)
	}
	code, codes := lintJSON(t, "--call-reads", "--url", url, "--header", "Authorization: Bearer "+viewer)
	if code != 0 || slices.ContainsFunc(codes, func(c string) bool { return c != "server:S004" }) {
		t.Errorf("lint --header with a viewer token: exit %d, %v; want exit 0, S004 at most", code, codes)
	}
}
