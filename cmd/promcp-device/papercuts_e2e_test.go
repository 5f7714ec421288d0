package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/promcp/promcp-device/internal/testnet"
)

// TestServeExtraArgument: a positional argument is reported as such, not
// as a missing --manifest.
func TestServeExtraArgument(t *testing.T) {
	_, stderr, code := runCLI(t, "serve", "--sim", greenhouse)
	if code != 2 || !strings.Contains(stderr, `unexpected argument "`+greenhouse+`"`) || !strings.Contains(stderr, "did you mean --manifest") ||
		strings.Contains(stderr, "is required") {
		t.Fatalf("serve --sim FILE: exit %d, stderr %q; want exit 2 naming the argument", code, stderr)
	}
	_, stderr, code = runCLI(t, "serve", "--manifest", greenhouse, "extra", "--sim")
	if code != 2 || !strings.Contains(stderr, `unexpected argument "extra"`) || !strings.Contains(stderr, "flags after it were not read") {
		t.Fatalf("serve --manifest FILE extra: exit %d, stderr %q", code, stderr)
	}
}

// TestLoadErrorsNameTheCommand: a manifest that cannot be read is reported
// with the command that tried.
func TestLoadErrorsNameTheCommand(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.yml")
	for _, args := range [][]string{
		{"serve", "--sim", "--manifest", missing},
		{"sim", "--manifest", missing, "--modbus-tcp", "127.0.0.1:0"},
		{"tools", "--manifest", missing},
		{"demo", "--manifest", missing},
	} {
		_, stderr, code := runCLI(t, args...)
		if code != 1 || !strings.HasPrefix(stderr, "promcp-device "+args[0]+": load manifest: ") {
			t.Errorf("%s: exit %d, stderr %q; want exit 1 and %q first", strings.Join(args, " "), code, stderr, "promcp-device "+args[0]+": load manifest:")
		}
	}
}

// TestScanUnreachable: nothing listening is an error (exit 1), said as such.
func TestScanUnreachable(t *testing.T) {
	addr := testnet.FreeAddr(t)
	out, stderr, code := runCLI(t, "scan", "--tcp", addr, "--units", "1-2", "--pause", "1ms")
	if code != 1 || !strings.Contains(stderr, "cannot reach "+addr) || strings.Contains(out, "unit 1:") {
		t.Fatalf("scan of a closed port: exit %d, stdout %q, stderr %q; want exit 1, cannot reach", code, out, stderr)
	}
}

// TestSimWithoutModbus: sim of a manifest with no Modbus devices says so.
func TestSimWithoutModbus(t *testing.T) {
	_, stderr, code := runCLI(t, "sim", "--manifest", "../../manifests/examples/pi-sensors.yml", "--modbus-tcp", "127.0.0.1:0")
	if code != 1 || !strings.Contains(stderr, "has no Modbus devices") {
		t.Fatalf("sim of pi-sensors.yml: exit %d, stderr %q; want exit 1, no Modbus devices", code, stderr)
	}
}

// TestLintManifestAndPolicyOnce: an error of the policy is printed once
// when the manifest and its policy are linted together.
func TestLintManifestAndPolicyOnce(t *testing.T) {
	dir := t.TempDir()
	data, _ := os.ReadFile(greenhouse)
	os.WriteFile(filepath.Join(dir, "greenhouse.yml"), data, 0o644)
	pol, _ := os.ReadFile("../../manifests/examples/greenhouse.policy.yml")
	bad := strings.Replace(string(pol), "timezone: Europe/Amsterdam", "timezone: Europe/Amsterdm", 1)
	os.WriteFile(filepath.Join(dir, "greenhouse.policy.yml"), []byte(bad), 0o644)
	out, _, code := runCLI(t, "lint", filepath.Join(dir, "greenhouse.yml"), filepath.Join(dir, "greenhouse.policy.yml"))
	if code != 1 || strings.Count(out, `unknown value "Europe/Amsterdm"`) != 1 {
		t.Fatalf("lint manifest policy: exit %d, %q; want exit 1 and the time zone error once", code, out)
	}
}

// TestToolsJSONMatchesServer: `tools --json` offline lists the input and
// output schemas the running server answers tools/list with, with and
// without --approval-key (which adds the approval argument).
func TestToolsJSONMatchesServer(t *testing.T) {
	key := filepath.Join(t.TempDir(), "approval.key")
	for _, extra := range [][]string{nil, {"--approval-key", key}, {"--provenance", "inline"}} {
		out, stderr, code := runCLI(t, append([]string{"tools", "--manifest", greenhouse, "--json"}, extra...)...)
		if code != 0 {
			t.Fatalf("tools --json %v: exit %d %s", extra, code, stderr)
		}
		var offline []toolJSON
		if err := json.Unmarshal([]byte(out), &offline); err != nil {
			t.Fatal(err)
		}
		served := wireTools(t, append([]string{"serve", "--sim", "--manifest", greenhouse, "--log-level", "error"}, extra...)...)
		if len(served) != len(offline) {
			t.Fatalf("%v: tools --json lists %d tools, the server %d", extra, len(offline), len(served))
		}
		approvals := 0
		for _, o := range offline {
			s, ok := served[o.Name]
			if !ok {
				t.Fatalf("%v: %s listed offline, not served", extra, o.Name)
			}
			if !jsonEqual(o.InputSchema, s.InputSchema) || !jsonEqual(o.OutputSchema, s.OutputSchema) || o.Description != s.Description {
				t.Errorf("%v: %s: offline schemas differ from the served ones:\n%s\n%s", extra, o.Name, o.InputSchema, s.InputSchema)
			}
			if strings.Contains(string(o.InputSchema), `"approval"`) {
				approvals++
			}
		}
		if want := len(extra) > 0 && extra[0] == "--approval-key"; want != (approvals == 3) {
			t.Errorf("%v: %d do_* tools take approval", extra, approvals)
		}
	}
}

// jsonEqual reports whether a and b are the same JSON value, whatever the
// order of their keys and their spacing.
func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

// TestReadOnlyCanDoAsTheREADMESays: the --read-only row of the docs
// (docs/security.md) says what can_do answers on a read-only gateway.
func TestReadOnlyCanDoAsTheREADMESays(t *testing.T) {
	readme := readFile(t, "../../docs/security.md")
	const says = "`can_do` lists the actions that match the intent as blocked `policy_denied`, reason \"this gateway serves read-only: do_X is not available\", and no candidate"
	if !strings.Contains(string(readme), says) {
		t.Fatalf("docs/security.md no longer says %q", says)
	}
	s := stdioSession(t, protocols[0], "--manifest", greenhouse, "--read-only")
	r, _ := s.call("can_do", map[string]any{"intent": map[string]any{"semantic_tags": []any{"heating"}, "action": "turn on heater", "location": "zone1", "value": true}})
	blocked, _ := r["blocked"].([]any)
	candidates, _ := r["candidates"].([]any)
	if len(blocked) != 1 || len(candidates) != 0 {
		t.Fatalf("can_do on a read-only gateway = %v; want the heater blocked and no candidate", r)
	}
	b := blocked[0].(map[string]any)
	if b["capability"] != "do_set_heater" || b["permission"] != "policy_denied" || b["reason"] != "this gateway serves read-only: do_set_heater is not available" {
		t.Fatalf("blocked = %v; want do_set_heater policy_denied, the reason the docs give", b)
	}
}

// wireTools runs the binary with args (a stdio serve) and returns the
// tools its tools/list answer holds, as sent on the wire. Its stdin stays
// open until the answer has come.
func wireTools(t *testing.T, args ...string) map[string]toolJSON {
	t.Helper()
	cmd := command(t, binary, args...)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); waitExit(t, cmd) }()
	io.WriteString(in, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n"+
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"+`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`+"\n")
	lines := bufio.NewScanner(out)
	lines.Buffer(nil, 16<<20)
	for lines.Scan() {
		var msg struct {
			ID     int `json:"id"`
			Result struct {
				Tools []toolJSON `json:"tools"`
			} `json:"result"`
		}
		if json.Unmarshal(lines.Bytes(), &msg) == nil && msg.ID == 2 {
			tools := map[string]toolJSON{}
			for _, tool := range msg.Result.Tools {
				tools[tool.Name] = tool
			}
			return tools
		}
	}
	t.Fatalf("%v: no tools/list answer (%v)", args, lines.Err())
	return nil
}
