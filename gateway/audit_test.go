package gateway_test

// The audit log under hostile and failing conditions, through the server:
// a refusal flood with 1 MB keys, a full disk (injected and a real 256 KiB
// tmpfs), recovery without a restart.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/promcp/promcp-device/audit"
	"github.com/promcp/promcp-device/audit/audittest"
	"github.com/promcp/promcp-device/server"
)

var auditKey = bytes.Repeat([]byte{0x42}, 32)

// floodCalls is how many 1 MB-key refusals TestRefusalFloodIsBounded
// sends: 100, or 30 under -race (still past the burst of 20: the bound it
// checks does not depend on the count).
var floodCalls = flag.Int("flood.calls", 0, "TestRefusalFloodIsBounded: refused calls with 1 MB keys (default 100, 30 under -race)")

func openKeyedAudit(t *testing.T, path string, o audit.Options) *audit.Log {
	t.Helper()
	o.Key = auditKey
	l, err := audit.OpenWith(path, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestRefusalFloodIsBounded: 100 (30 under -race) do_* calls by a viewer with a 1 MB
// invalid idempotency_key. Each answer echoes the key bounded (prefix,
// size, SHA-256); the log records arguments as size and hash; past the
// per-caller burst refusals are counted, not written. An operator's
// actuation still goes through and is recorded.
func TestRefusalFloodIsBounded(t *testing.T) {
	bigKey := strings.Repeat("A", 1<<20)
	sum := sha256.Sum256([]byte(bigKey))
	flood := func(t *testing.T, calls int, o audit.Options) (growth int64, records int) {
		dir := t.TempDir()
		path := filepath.Join(dir, "audit.jsonl")
		log := openKeyedAudit(t, path, o)
		b := newDimmerBench(t, server.WithAuditor(log))
		mallory := server.WithCaller(t.Context(), server.Caller{Name: "mallory", Role: server.RoleViewer})
		var wg sync.WaitGroup
		sem := make(chan struct{}, 4) // four at a time, as a scripted attacker would
		for i := range calls {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				r := b.callAs(mallory, t, "do_set_light_level", map[string]any{"value": 50, "idempotency_key": fmt.Sprint(i, bigKey)})
				key, _ := r["idempotency_key"].(string)
				msg := fmt.Sprint(r["reason"], r["error"])
				if r["status"] != "failed" || len(key) > 200 || !strings.Contains(key, "bytes, sha256 ") || len(msg) > 1000 {
					t.Errorf("call %d: status %v, echoed key of %d bytes %.80q, message of %d bytes; want failed, the key bounded", i, r["status"], len(key), key, len(msg))
				}
			})
		}
		wg.Wait()
		r := b.callAs(mallory, t, "do_set_light_level", map[string]any{"value": 50, "idempotency_key": bigKey})
		if k := r["idempotency_key"].(string); !strings.Contains(k, hex.EncodeToString(sum[:])) {
			t.Fatalf("echoed key %q lacks the key's SHA-256", k)
		}
		olga := server.WithCaller(t.Context(), server.Caller{Name: "olga", Role: server.RoleOperator})
		if r := b.callAs(olga, t, "do_set_light_level", map[string]any{"value": 60, "idempotency_key": "olga-1"}); r["status"] != "success" {
			t.Fatalf("operator after the flood: %v", r)
		}
		log.Close()
		recs := readKeyed(t, path)
		var olgas []string
		for _, r := range recs {
			if r.Caller == "olga" {
				olgas = append(olgas, r.Event)
			}
		}
		if fmt.Sprint(olgas) != "[attempt result]" {
			t.Fatalf("the operator's actuation is recorded as %v, want attempt and result", olgas)
		}
		for _, r := range recs {
			if r.Caller == "mallory" && r.Event == audit.EventRefused && !strings.Contains(string(r.Arguments), `"omitted":"schema-invalid"`) {
				t.Fatalf("a refused record keeps the arguments: %.200s", r.Arguments)
			}
		}
		return fileSize(t, path), len(recs)
	}

	t.Run("bounded records", func(t *testing.T) {
		const calls = 10
		growth, n := flood(t, calls, audit.Options{RefusalBurst: -1})
		per := float64(growth) / float64(n)
		t.Logf("no rate limit: %d refusals of 1 MiB keys grew the log by %d bytes in %d records (%.0f bytes per record)", calls+1, growth, n, per)
		if n != calls+1+2 || per > 2048 {
			t.Fatalf("%d records of %.0f bytes on average, want %d records of at most 2 KiB", n, per, calls+3)
		}
	})
	t.Run("rate limited", func(t *testing.T) {
		frozen := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
		calls := *floodCalls
		if calls == 0 {
			calls = 100
			if raceEnabled {
				calls = 30
			}
		}
		growth, n := flood(t, calls, audit.Options{Now: func() time.Time { return frozen }})
		t.Logf("default rate limit: %d refusals of 1 MiB keys grew the log by %d bytes in %d records", calls+1, growth, n)
		// 20 refused (the burst), attempt and result, 1 suppressed counting
		// the rest at Close: whatever the count.
		if n != audit.DefaultRefusalBurst+1+2 || growth > 48<<10 {
			t.Fatalf("%d records, %d bytes; want %d records and at most 48 KiB", n, growth, audit.DefaultRefusalBurst+3)
		}
	})
}

func readKeyed(t *testing.T, path string) []audit.Record {
	t.Helper()
	if _, err := audit.VerifyLog(path, audit.VerifyOptions{Key: auditKey}); err != nil {
		t.Fatalf("audit verify: %v", err)
	}
	recs, err := audit.TailLog(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func isAuditRefusal(r map[string]any) bool {
	e, _ := r["error"].(map[string]any)
	return r["status"] == "failed" && e != nil && e["code"] == "internal" && strings.Contains(fmt.Sprint(e["message"]), "audit log unavailable")
}

// diskFullScenario: while the audit log cannot write, every do_* is
// refused and nothing reaches the bus; once space returns, the same server
// actuates again (a retry of a refused key too), and the log verifies with
// a lost record for what could not be written. fill makes the disk full
// (it returns once a do_* was refused), free gives the space back.
func diskFullScenario(t *testing.T, path string, log *audit.Log, fill func(b *dimmerBench, ctx context.Context), free func()) {
	b := newDimmerBench(t, server.WithAuditor(log))
	ctx := server.WithCaller(t.Context(), server.Caller{Name: "olga", Role: server.RoleOperator})
	if r := b.callAs(ctx, t, "do_set_light_level", map[string]any{"value": 10, "idempotency_key": "before"}); r["status"] != "success" {
		t.Fatalf("before the disk filled: %v", r)
	}
	fill(b, ctx)
	writes := b.writes.Load()
	for i := range 3 {
		r := b.callAs(ctx, t, "do_set_light_level", map[string]any{"value": 20 + i, "idempotency_key": fmt.Sprint("full-", i)})
		if !isAuditRefusal(r) {
			t.Fatalf("do_* while the disk is full = %v, want failed: audit log unavailable", r)
		}
	}
	if b.writes.Load() != writes {
		t.Fatalf("%d bus writes while the audit log could not write, want 0", b.writes.Load()-writes)
	}
	free()
	for _, key := range []string{"full-0", "after"} {
		if r := b.callAs(ctx, t, "do_set_light_level", map[string]any{"value": 20, "idempotency_key": key}); r["status"] != "success" || r["replayed"] == true {
			t.Fatalf("do_* %s after space returned = %v, want success without a restart", key, r)
		}
	}
	if b.writes.Load() != writes+2 {
		t.Fatalf("%d bus writes after recovery, want 2", b.writes.Load()-writes)
	}
	log.Close()
	recs := readKeyed(t, path)
	lost := 0
	for _, r := range recs {
		if r.Event == audit.EventLost {
			lost += int(r.Count)
		}
	}
	if lost < 3 {
		t.Fatalf("lost records count %d records, want at least the 3 refused attempts: %+v", lost, recs)
	}
	t.Logf("%d records after recovery, %d counted lost", len(recs), lost)
}

// TestDiskFullInjected runs the full-disk scenario on a file that fails
// with ENOSPC on demand, so it runs everywhere (CI without mount).
func TestDiskFullInjected(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	var disk audittest.Disk
	log := openKeyedAudit(t, path, audit.Options{OpenFile: disk.OpenFile})
	diskFullScenario(t, path, log, func(*dimmerBench, context.Context) { disk.SetFull(true) }, func() { disk.SetFull(false) })
}

// TestDiskFullTmpfs runs the full-disk scenario on a real 256 KiB tmpfs,
// filled by another file until the audit log's writes fail.
func TestDiskFullTmpfs(t *testing.T) {
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("mount -t tmpfs not permitted here (%v: %s); TestDiskFullInjected covers the logic", err, bytes.TrimSpace(out))
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	path := filepath.Join(dir, "audit.jsonl")
	filler := filepath.Join(dir, "filler")
	log := openKeyedAudit(t, path, audit.Options{})
	fill := func(b *dimmerBench, ctx context.Context) {
		f, err := os.Create(filler)
		if err != nil {
			t.Fatal(err)
		}
		chunk := make([]byte, 4096)
		for {
			if _, err := f.Write(chunk); err != nil {
				break
			}
		}
		f.Close()
		// The log's last page may still have room for a record or two.
		for i := range 20 {
			r := b.callAs(ctx, t, "do_set_light_level", map[string]any{"value": 30, "idempotency_key": fmt.Sprint("filling-", i)})
			if isAuditRefusal(r) {
				return
			}
		}
		t.Fatal("the audit log kept writing on a full 256 KiB tmpfs")
	}
	diskFullScenario(t, path, log, fill, func() {
		if err := os.Remove(filler); err != nil {
			t.Fatal(err)
		}
	})
}
