package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Two gateways that share an approval key no longer accept each other's
// approve tokens: a token names the gateway it was issued for (the
// manifest's gateway:, or --gateway-id), and the other gateway refuses it
// saying so. A token of the old format, which named no gateway, is refused
// with a message to issue a new one.
func TestApprovalTokenBoundToGateway(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "approval.key")
	if err := os.WriteFile(key, []byte(strings.Repeat("5a", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// site copies the greenhouse and its policy into dir/name, under the
	// gateway name gw.
	site := func(name, gw string) string {
		d := filepath.Join(dir, name)
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		m := strings.Replace(string(readFile(t, greenhouse)), "gateway: greenhouse-1", "gateway: "+gw, 1)
		if !strings.Contains(m, "gateway: "+gw) {
			t.Fatal("the example manifest no longer says gateway: greenhouse-1")
		}
		path := filepath.Join(d, "greenhouse.yml")
		os.WriteFile(path, []byte(m), 0o644)
		copyFile(t, strings.TrimSuffix(greenhouse, ".yml")+".policy.yml", filepath.Join(d, "greenhouse.policy.yml"))
		return path
	}
	manA, manB := site("a", "greenhouse-1"), site("b", "greenhouse-2")
	approve := func(args ...string) string {
		t.Helper()
		out, stderr, code := runCLI(t, append([]string{"approve", "--approval-key", key, "--tool", "do_set_fan_speed", "--value", "48",
			"--key", "purge-1", "--by", "maria"}, args...)...)
		if code != 0 {
			t.Fatalf("approve %v: exit %d, %s", args, code, stderr)
		}
		return strings.TrimSpace(out)
	}
	a := commandSession(t, "", binary, simServe("--manifest", manA, "--approval-key", key))
	b := commandSession(t, "", binary, simServe("--manifest", manB, "--approval-key", key))
	c := commandSession(t, "", binary, simServe("--manifest", manB, "--approval-key", key, "--gateway-id", "barn-east"))
	call := func(s *session, tok string) (status, msg string) {
		t.Helper()
		r, _ := s.call("do_set_fan_speed", map[string]any{"value": 48, "idempotency_key": "purge-1", "approval": tok})
		e, _ := r["error"].(map[string]any)
		m, _ := e["message"].(string)
		return r["status"].(string), m
	}

	forA := approve("--manifest", manA)
	if st, msg := call(b, forA); st != "failed" || !strings.Contains(msg, `approval is for another gateway: it was issued for gateway "greenhouse-1", this is "greenhouse-2"`) {
		t.Fatalf("gateway greenhouse-2 given a token for greenhouse-1: %s %q, want failed, naming both gateways", st, msg)
	}
	if v, _ := b.call("read_fan_speed_setpoint", map[string]any{}); v["value"] != 0.0 {
		t.Fatalf("greenhouse-2's fan setpoint = %v after the refused token, want 0 (untouched)", v["value"])
	}
	if st, msg := call(a, forA); st != "success" {
		t.Fatalf("gateway greenhouse-1 given its own token: %s %q, want success", st, msg)
	}

	// --gateway-id names a gateway whatever its manifest says, on both sides.
	if st, msg := call(c, approve("--manifest", manB)); st != "failed" || !strings.Contains(msg, `issued for gateway "greenhouse-2", this is "barn-east"`) {
		t.Fatalf("serve --gateway-id barn-east given a token for greenhouse-2: %s %q, want failed naming both", st, msg)
	}
	if st, msg := call(c, approve("--manifest", manB, "--gateway-id", "barn-east")); st != "success" {
		t.Fatalf("serve --gateway-id barn-east given approve --gateway-id barn-east: %s %q, want success", st, msg)
	}

	// A token as the previous version wrote it: signed with the right key,
	// for the right call, naming no gateway.
	k, _ := hex.DecodeString(strings.Repeat("5a", 32))
	payload, _ := json.Marshal(map[string]any{"tool": "do_set_fan_speed", "value": 48, "key": "purge-1",
		"exp": time.Now().Add(5 * time.Minute), "id": "00112233445566778899aabb", "by": "maria", "iat": time.Now().UTC()})
	h := hmac.New(sha256.New, k)
	h.Write(payload)
	old := base64.RawURLEncoding.EncodeToString(payload) + "." + base64.RawURLEncoding.EncodeToString(h.Sum(nil))
	if st, msg := call(b, old); st != "failed" || !strings.Contains(msg, "old format that names no gateway: issue a new one") {
		t.Fatalf("an old-format token: %s %q, want failed, saying to issue a new one", st, msg)
	}
}
