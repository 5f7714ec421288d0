package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/promcp/promcp-device/audit"
)

// TestAuditKeyedCLI: serve keys the chain with a 0600 key file it
// creates; a chain rewritten with recomputed SHA-256 fails audit verify;
// a log cut short fails verify against a checkpoint taken before; the log
// rotates and verifies across files; tail escapes a crafted key; a key
// file others may read is refused.
func TestAuditKeyedCLI(t *testing.T) {
	dir := t.TempDir()
	s := stdioSession(t, protocols[1], "--manifest", labBench, "--state", dir, "--audit-rotate-size", "1500")
	for i, v := range []float64{10, 20, 30} {
		if r, _ := s.call("do_set_light_level", map[string]any{"value": v, "idempotency_key": fmt.Sprint("k", i)}); r["status"] != "success" {
			t.Fatalf("do = %v", r)
		}
	}
	crafted := "x\r\x1b[2K2026-11-30T12:00:00.000Z #9 result do_set_light_level key=ok by admin (admin) success"
	s.call("do_set_light_level", map[string]any{"value": 40, "idempotency_key": crafted})
	s.c.Close()

	key := filepath.Join(dir, "audit.key")
	if fi, err := os.Stat(key); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("audit key: %v, %v; want a 0600 file", fi, err)
	}
	out, _, code := runCLI(t, "audit", "checkpoint", "--state", dir)
	var cp audit.Checkpoint
	if err := json.Unmarshal([]byte(out), &cp); code != 0 || err != nil || cp.Seq != 8 || cp.MAC == "" {
		t.Fatalf("audit checkpoint: exit %d, %q (%v); want a MAC'd checkpoint of record 8", code, out, err)
	}
	cpFile := filepath.Join(t.TempDir(), "checkpoints")
	os.WriteFile(cpFile, []byte("Nov 30 12:00:00 gw promcp-audit: "+out), 0o600)
	out, _, code = runCLI(t, "audit", "verify", "--state", dir, "--checkpoint", cpFile)
	if code != 0 || !strings.Contains(out, "ok: 8 records, keyed chain intact") || !strings.Contains(out, "reaches checkpoint 8") || !strings.Contains(out, "files from record 1") {
		t.Fatalf("audit verify --checkpoint: exit %d, %q; want ok across rotated files, reaching checkpoint 8", code, out)
	}

	out, _, code = runCLI(t, "audit", "tail", "-n", "1", "--state", dir)
	if code != 0 || strings.ContainsAny(out[:len(out)-1], "\r\x1b\n") || !strings.Contains(out, `key=x\x0d\x1b[2K2026`) {
		t.Fatalf("audit tail of a crafted key: exit %d, %q; want control characters escaped, one line", code, out)
	}

	// Cut the last record off: alone it looks fine, the checkpoint says not.
	active := filepath.Join(dir, auditFile)
	lines := strings.SplitAfter(string(readFile(t, active)), "\n")
	os.WriteFile(active, []byte(strings.Join(lines[:len(lines)-2], "")), 0o600)
	if out, _, code = runCLI(t, "audit", "verify", "--state", dir); code != 0 {
		t.Fatalf("audit verify of a log cut short, without a checkpoint: exit %d, %q; want ok (undetectable alone)", code, out)
	}
	out, _, code = runCLI(t, "audit", "verify", "--state", dir, "--checkpoint", cpFile)
	if code != 1 || !strings.Contains(out, "ends at record 7 but checkpoint 8") {
		t.Fatalf("audit verify --checkpoint of a log cut short: exit %d, %q; want exit 1 naming the checkpoint", code, out)
	}

	os.Chmod(key, 0o644)
	_, stderr, code := runCLI(t, "serve", "--sim", "--manifest", labBench, "--state", dir)
	if code != 1 || !strings.Contains(stderr, "chmod 600") {
		t.Fatalf("serve with a 0644 audit key: exit %d, %q; want exit 1 asking for chmod 600", code, stderr)
	}
}

// TestAuditRewriteCLI: changing a caller and recomputing the SHA-256
// chain, as anyone who can write the file can, fails the keyed verify; the
// same log passes --unkeyed, the check the chain had before it was keyed.
func TestAuditRewriteCLI(t *testing.T) {
	dir := t.TempDir()
	s := stdioSession(t, protocols[1], "--manifest", labBench, "--state", dir)
	for i, v := range []float64{10, 20} {
		if r, _ := s.call("do_set_light_level", map[string]any{"value": v, "idempotency_key": fmt.Sprint("k", i)}); r["status"] != "success" {
			t.Fatalf("do = %v", r)
		}
	}
	s.c.Close()
	path := filepath.Join(dir, auditFile)
	lines := strings.Split(strings.TrimSuffix(string(readFile(t, path)), "\n"), "\n")
	prev := audit.Genesis
	for i, line := range lines {
		var r audit.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			r.Caller = "admin"
		}
		r.Prev, r.Hash = prev, ""
		body, _ := json.Marshal(r)
		sum := sha256.Sum256(append([]byte(prev), body...))
		prev = hex.EncodeToString(sum[:])
		lines[i] = string(body[:len(body)-1]) + `,"hash":"` + prev + `"}`
	}
	os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600)
	if out, _, code := runCLI(t, "audit", "verify", "--state", dir, "--unkeyed"); code != 0 {
		t.Fatalf("audit verify --unkeyed of the rewritten chain: exit %d, %q; want ok (what a plain chain cannot catch)", code, out)
	}
	out, _, code := runCLI(t, "audit", "verify", "--state", dir)
	if code != 1 || !strings.Contains(out, "line 1 (record 1)") || !strings.Contains(out, "MAC") {
		t.Fatalf("audit verify of the rewritten chain: exit %d, %q; want exit 1 at line 1, MAC mismatch", code, out)
	}
}
