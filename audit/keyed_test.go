package audit_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/promcp/promcp-device/audit"
	"github.com/promcp/promcp-device/audit/audittest"
	"github.com/promcp/promcp-device/clock"
)

var testKey = bytes.Repeat([]byte{0x5a}, 32)

// newClock is a manual clock for rate limits, rotation and retention.
func newClock() *clock.Manual { return clock.NewManual(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)) }

func writeKeyed(t *testing.T, path string, o audit.Options, n int, caller string) {
	t.Helper()
	l, err := audit.OpenWith(path, o)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := l.Append(context.Background(), result(caller, i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// rechain recomputes the plain SHA-256 chain over edited records, as
// anyone who can write the file can: renumbered from 1, each prev the hash
// before it.
func rechain(t *testing.T, lines []string) []string {
	t.Helper()
	prev := audit.Genesis
	var out []string
	for i, line := range lines {
		var r audit.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		r.Seq, r.Prev, r.Hash = int64(i+1), prev, ""
		body, _ := json.Marshal(r)
		sum := sha256.Sum256(append([]byte(prev), body...))
		prev = hex.EncodeToString(sum[:])
		out = append(out, string(body[:len(body)-1])+`,"hash":"`+prev+`"}`)
	}
	return out
}

// TestRewrittenChainFailsKeyedVerify: changing a caller, dropping a record
// or emptying the log and recomputing the SHA-256 chain passes a plain
// verify (the attack the issue reports) and fails the keyed one.
func TestRewrittenChainFailsKeyedVerify(t *testing.T) {
	tests := []struct {
		name string
		edit func([]string) []string
	}{
		{"changed caller", func(l []string) []string {
			l[2] = strings.Replace(l[2], `"caller":"alice"`, `"caller":"bob"`, 1)
			return l
		}},
		{"dropped record", func(l []string) []string { return append(l[:4], l[5:]...) }},
		{"dropped last records", func(l []string) []string { return l[:6] }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			writeKeyed(t, path, audit.Options{Key: testKey}, 10, "alice")
			writeLines(t, path, rechain(t, tc.edit(readLines(t, path))))
			if _, err := audit.VerifyLog(path, audit.VerifyOptions{}); err != nil {
				t.Fatalf("the rewritten log does not even pass a plain verify (%v): the test does not rewrite as an attacker would", err)
			}
			_, err := audit.VerifyLog(path, audit.VerifyOptions{Key: testKey})
			var ve *audit.VerifyError
			if !errors.As(err, &ve) || !errors.Is(err, audit.ErrTampered) || ve.Line != 1 {
				t.Fatalf("keyed verify of a rewritten chain = %v; want a VerifyError at line 1 (every recomputed record fails its MAC)", err)
			}
		})
	}
	t.Run("untouched", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "audit.jsonl")
		writeKeyed(t, path, audit.Options{Key: testKey}, 10, "alice")
		if s, err := audit.VerifyLog(path, audit.VerifyOptions{Key: testKey}); err != nil || s.Records != 10 {
			t.Fatalf("keyed verify = %+v, %v; want 10 records ok", s, err)
		}
		if _, err := audit.VerifyLog(path, audit.VerifyOptions{Key: bytes.Repeat([]byte{1}, 32)}); !errors.Is(err, audit.ErrTampered) {
			t.Fatalf("verify with another key = %v, want ErrTampered", err)
		}
	})
}

// TestCheckpointDetectsTruncation: a log cut short or emptied verifies
// on its own (nothing in it is wrong) and fails against a checkpoint taken
// before; a log that grew on reaches it.
func TestCheckpointDetectsTruncation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	o := audit.Options{Key: testKey}
	writeKeyed(t, path, o, 10, "alice")
	cp, _, err := audit.TakeCheckpoint(path, testKey, time.Now())
	if err != nil || cp.Seq != 10 {
		t.Fatalf("TakeCheckpoint = %+v, %v", cp, err)
	}
	var saved bytes.Buffer
	json.NewEncoder(&saved).Encode(cp)
	got, err := audit.ReadCheckpoint(strings.NewReader("Nov 30 12:00:00 gw promcp-audit: "+saved.String()), testKey)
	if err != nil || got.Seq != 10 || got.Hash != cp.Hash {
		t.Fatalf("ReadCheckpoint of a syslog line = %+v, %v", got, err)
	}
	writeKeyed(t, path, o, 3, "alice") // the log grows on
	if s, err := audit.VerifyLog(path, audit.VerifyOptions{Key: testKey, Checkpoint: &cp}); err != nil || !strings.Contains(s.Checkpoint, "reaches checkpoint 10") {
		t.Fatalf("verify of a grown log against checkpoint 10 = %+v, %v; want ok", s, err)
	}
	lines := readLines(t, path)
	for _, keep := range []int{7, 0} {
		writeLines(t, path, lines[:keep])
		if _, err := audit.VerifyLog(path, audit.VerifyOptions{Key: testKey}); err != nil {
			t.Fatalf("truncated to %d records, verify without a checkpoint = %v; the truncation alone is not detectable, which is why checkpoints exist", keep, err)
		}
		_, err := audit.VerifyLog(path, audit.VerifyOptions{Key: testKey, Checkpoint: &cp})
		if !errors.Is(err, audit.ErrTruncated) {
			t.Fatalf("truncated to %d records, verify against checkpoint 10 = %v, want ErrTruncated", keep, err)
		}
	}
	forged := cp
	forged.Seq = 3
	if _, err := audit.ReadCheckpoint(strings.NewReader(mustJSON(forged)), testKey); err == nil {
		t.Fatal("a checkpoint edited without the key was accepted")
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b) + "\n"
}

// TestFullDiskRefusesThenRecovers: while writes fail every append fails
// (the caller must not act), nothing torn stays in the file, and once
// space returns appends succeed again without reopening, after a lost
// record that counts what could not be written.
func TestFullDiskRefusesThenRecovers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	var disk audittest.Disk
	o := audit.Options{Key: testKey, OpenFile: disk.OpenFile}
	l, err := audit.OpenWith(path, o)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	rec := audit.Record{Event: audit.EventAttempt, Caller: "olga", Tool: "do_set_heater", Key: "k"}
	if err := l.Append(ctx, rec); err != nil {
		t.Fatal(err)
	}
	disk.SetFull(true)
	var wg sync.WaitGroup
	var failed sync.Map
	for i := range 8 {
		wg.Go(func() {
			if err := l.Append(ctx, rec); err != nil {
				failed.Store(i, err)
			}
		})
	}
	wg.Wait()
	n := 0
	failed.Range(func(_, v any) bool {
		n++
		if !errors.Is(v.(error), audittest.ErrNoSpace) {
			t.Errorf("append on a full disk = %v, want it to wrap the write error", v)
		}
		return true
	})
	if n != 8 || l.Err() == nil {
		t.Fatalf("%d of 8 appends failed on a full disk (Err %v), want all", n, l.Err())
	}
	if s, err := audit.VerifyLog(path, audit.VerifyOptions{Key: testKey}); err != nil || s.Records != 1 || s.Partial {
		t.Fatalf("log on the full disk: %+v, %v; want the 1 good record and nothing torn", s, err)
	}
	disk.SetFull(false)
	if err := l.Append(ctx, rec); err != nil {
		t.Fatalf("append after space returned = %v, want ok without a restart", err)
	}
	if l.Err() != nil {
		t.Fatalf("Err after recovery = %v", l.Err())
	}
	recs := tailAll(t, path)
	if len(recs) != 3 || recs[1].Event != audit.EventLost || recs[1].Count != 8 || recs[2].Seq != 3 {
		t.Fatalf("records after recovery: %+v; want attempt, lost (count 8), attempt #3", recs)
	}
	if _, err := audit.VerifyLog(path, audit.VerifyOptions{Key: testKey}); err != nil {
		t.Fatal(err)
	}
}

func tailAll(t *testing.T, path string) []audit.Record {
	t.Helper()
	recs, err := audit.TailLog(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// TestRefusalsRateLimitedPerCaller: a caller's refusals past the burst
// are not written; one suppressed record later counts them; another
// caller's refusals and every non-refusal are written.
func TestRefusalsRateLimitedPerCaller(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	clk := newClock()
	l, err := audit.OpenWith(path, audit.Options{Key: testKey, Now: clk.Now, RefusalBurst: 5, RefusalEvery: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	refuse := func(caller string) {
		if err := l.Append(ctx, audit.Record{Event: audit.EventRefused, Caller: caller, Role: "viewer", Tool: "do_set_heater"}); err != nil {
			t.Fatal(err)
		}
	}
	for range 100 {
		refuse("mallory")
	}
	refuse("olga")
	l.Append(ctx, audit.Record{Event: audit.EventResult, Caller: "mallory", Tool: "do_set_heater"})
	clk.Advance(10 * time.Second) // one token back: the summary is due
	l.Append(ctx, audit.Record{Event: audit.EventResult, Caller: "olga", Tool: "do_set_heater"})
	for range 10 {
		refuse("mallory") // a new burst of suppressions, told at Close
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range tailAll(t, path) {
		got = append(got, fmt.Sprintf("%s/%s/%d", r.Event, r.Caller, r.Count))
	}
	want := "[refused/mallory/0 refused/mallory/0 refused/mallory/0 refused/mallory/0 refused/mallory/0 refused/olga/0 result/mallory/0 " +
		"suppressed/mallory/95 result/olga/0 suppressed/mallory/10]"
	if fmt.Sprint(got) != want {
		t.Fatalf("records:\n%v\nwant\n%v", got, want)
	}
	if _, err := audit.VerifyLog(path, audit.VerifyOptions{Key: testKey}); err != nil {
		t.Fatal(err)
	}
}

// TestRotationAndRetention: the log rotates by size and by age, the chain
// continues across files and verifies across them; retention deletes old
// files, leaves an anchor, and the rest still verifies; removing a kept
// file or moving the anchor fails verify.
func TestRotationAndRetention(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	clk := newClock()
	o := audit.Options{Key: testKey, Now: clk.Now, MaxSize: 2000, MaxAge: time.Hour}
	writeKeyed(t, path, o, 30, "alice")
	files, _ := audit.Files(path)
	if len(files) < 4 {
		t.Fatalf("%d files after 30 records with a 2000-byte limit, want rotation: %v", len(files), files)
	}
	for _, f := range files {
		if fi, _ := os.Stat(f); fi.Size() > 2000 {
			t.Errorf("%s is %d bytes, over the 2000-byte limit", f, fi.Size())
		}
	}
	// The first record of each file chains to the last of the one before.
	var prevLast audit.Record
	for i, f := range files {
		fh, _ := os.Open(f)
		recs, _ := audit.Tail(fh, 0)
		fh.Close()
		if i > 0 && (recs[0].Prev != prevLast.Hash || recs[0].Seq != prevLast.Seq+1) {
			t.Fatalf("%s starts at %d prev %.12s, want %d prev %.12s", f, recs[0].Seq, recs[0].Prev, prevLast.Seq+1, prevLast.Hash)
		}
		prevLast = recs[len(recs)-1]
	}
	s, err := audit.VerifyLog(path, audit.VerifyOptions{Key: testKey})
	if err != nil || s.Records != 30 || s.Files != len(files) {
		t.Fatalf("verify across %d files = %+v, %v", len(files), s, err)
	}

	// By age: an hour later the next record starts a new file.
	n := len(files)
	clk.Advance(time.Hour)
	writeKeyed(t, path, audit.Options{Key: testKey, Now: clk.Now, MaxAge: time.Hour}, 1, "alice")
	if files, _ = audit.Files(path); len(files) != n+1 {
		t.Fatalf("%d files after an hour, want %d (rotated by age)", len(files), n+1)
	}

	// Retention: the first two rotated files are 10 days old.
	for _, f := range files[:2] {
		old := clk.Now().Add(-10 * 24 * time.Hour)
		os.Chtimes(f, old, old)
	}
	writeKeyed(t, path, audit.Options{Key: testKey, Now: clk.Now, Retention: 7 * 24 * time.Hour}, 1, "alice")
	kept, _ := audit.Files(path)
	if len(kept) != len(files)-2 {
		t.Fatalf("%d files kept, want %d (two older than the retention deleted)", len(kept), len(files)-2)
	}
	s, err = audit.VerifyLog(path, audit.VerifyOptions{Key: testKey})
	if err != nil || !s.Anchored || s.LastSeq != 32 || s.FirstSeq == 1 {
		t.Fatalf("verify after retention = %+v, %v; want ok, chained to the anchor, up to record 32", s, err)
	}

	// Removing the oldest kept file, or editing the anchor, is detected.
	data, _ := os.ReadFile(kept[0])
	os.Remove(kept[0])
	if _, err := audit.VerifyLog(path, audit.VerifyOptions{Key: testKey}); !errors.Is(err, audit.ErrTampered) {
		t.Fatalf("verify with the oldest kept file removed = %v, want ErrTampered", err)
	}
	os.WriteFile(kept[0], data, 0o600)
	a, _ := os.ReadFile(audit.AnchorPath(path))
	os.WriteFile(audit.AnchorPath(path), bytes.Replace(a, []byte(`"seq":`), []byte(`"seq":1`), 1), 0o600)
	if _, err := audit.VerifyLog(path, audit.VerifyOptions{Key: testKey}); !errors.Is(err, audit.ErrTampered) {
		t.Fatalf("verify with a moved anchor = %v, want ErrTampered", err)
	}
}

// TestTailEscapesControlCharacters: a key crafted to clear the line and
// print a fake admin success shows as escapes, on one line.
func TestTailEscapesControlCharacters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := audit.OpenWith(path, audit.Options{Key: testKey})
	if err != nil {
		t.Fatal(err)
	}
	fake := "x\r\x1b[2K2026-11-30T12:00:00.000Z #7 result do_set_heater key=ok by admin (admin) allowed success\n\u202e\u009b31m"
	l.Append(context.Background(), audit.Record{Event: audit.EventRefused, Caller: "mallory\x1b]0;t\x07", Role: "viewer", Tool: "do_set_heater",
		Key: fake, Arguments: json.RawMessage(`{"idempotency_key":"\u001b[2K\u009b\u202e"}`), Reason: "bad\x00end"})
	l.Close()
	recs := tailAll(t, path)
	line := audit.Format(recs[0])
	for i, r := range line {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == 0x202e {
			t.Fatalf("Format leaves control character %U at %d: %q", r, i, line)
		}
	}
	for _, want := range []string{`\x1b[2K`, `\x0d`, `\x0a`, `\u202e`, `\u009b`, `mallory\x1b]0;t\x07`, `\x00`} {
		if !strings.Contains(line, want) {
			t.Errorf("Format = %q, want it to contain %q", line, want)
		}
	}
}

// TestBoundedArguments: schema-invalid or large arguments are kept as
// size and hash; a long key is cut with its size and hash; a valid key
// and valid arguments are kept as they are.
func TestBoundedArguments(t *testing.T) {
	big := []byte(`{"idempotency_key":"` + strings.Repeat("k", 1<<20) + `","value":1}`)
	sum := sha256.Sum256(big)
	for _, valid := range []bool{false, true} {
		var d audit.Digest
		if err := json.Unmarshal(audit.Args(big, valid), &d); err != nil || d.Size != len(big) || d.SHA256 != hex.EncodeToString(sum[:]) {
			t.Fatalf("Args(1 MiB, valid=%t) = %+v, %v; want its size and SHA-256", valid, d, err)
		}
	}
	if got := string(audit.Args([]byte(`{"value":"x"}`), false)); !strings.Contains(got, `"omitted":"schema-invalid"`) {
		t.Fatalf("Args(small invalid) = %s, want a digest", got)
	}
	if got := string(audit.Args([]byte(`{"value":1}`), true)); got != `{"value":1}` {
		t.Fatalf("Args(valid) = %s", got)
	}
	long := strings.Repeat("k", 1<<20)
	ksum := sha256.Sum256([]byte(long))
	if got := audit.BoundKey(long); len(got) > 160 || !strings.HasPrefix(got, strings.Repeat("k", 32)+"…") || !strings.Contains(got, hex.EncodeToString(ksum[:])) {
		t.Fatalf("BoundKey(1 MiB) = %q (%d bytes), want 32 bytes, an ellipsis, size and hash", got, len(got))
	}
	valid := strings.Repeat("é", audit.MaxKeyRunes)
	if audit.BoundKey(valid) != valid {
		t.Fatal("BoundKey changed a key the schema accepts")
	}
	if a, b := audit.BoundKey(long), audit.BoundKey(long[1:]+"j"); a == b {
		t.Fatal("two different long keys bound to the same text")
	}
	r := audit.Bound(audit.Record{Key: long, Arguments: big, Result: big, Reason: long})
	if b, _ := json.Marshal(r); len(b) > 4096 {
		t.Fatalf("a bounded record is %d bytes", len(b))
	}
}

// TestBoundKeepsApproval: bounding a record keeps every field of its
// approval, the one-time token's id included (it names which token was
// spent when an auditor traces an out-of-band approval), and still cuts
// an oversized one.
func TestBoundKeepsApproval(t *testing.T) {
	at := time.Date(2026, 3, 29, 1, 30, 0, 0, time.UTC)
	a := audit.Approval{By: "maria", Method: "out_of_band", At: at, ID: "tok-7f3a"}
	got := audit.Bound(audit.Record{Approval: &a}).Approval
	if got == nil || *got != a {
		t.Fatalf("Bound(approval) = %+v, want %+v", got, a)
	}
	long := audit.Bound(audit.Record{Approval: &audit.Approval{ID: strings.Repeat("x", 1<<20)}}).Approval
	if len(long.ID) > audit.MaxTextBytes+64 {
		t.Fatalf("a 1 MiB approval id bounded to %d bytes", len(long.ID))
	}
}

func TestKeyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.key")
	k1, err := audit.LoadOrCreateKey(path)
	if err != nil || len(k1) != 32 {
		t.Fatal(k1, err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v, want 0600", fi.Mode().Perm())
	}
	if k2, err := audit.LoadOrCreateKey(path); err != nil || !bytes.Equal(k1, k2) {
		t.Fatal("the key changed on reload", err)
	}
	os.Chmod(path, 0o644)
	if _, err := audit.LoadOrCreateKey(path); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("key file 0644 = %v, want refused naming chmod 600", err)
	}
}

// TestUnkeyedLogMovedAside: a log from before keyed chains is kept aside
// and a keyed chain begins; a log keyed with another key refuses to open.
func TestUnkeyedLogMovedAside(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	writeLog(t, path, 3)
	writeKeyed(t, path, audit.Options{Key: testKey}, 2, "alice")
	aside, _ := filepath.Glob(path + ".unkeyed-*")
	if len(aside) != 1 {
		t.Fatalf("unkeyed logs aside: %v", aside)
	}
	if f, _ := os.Open(aside[0]); f != nil {
		s, err := audit.Verify(f)
		f.Close()
		if err != nil || s.Records != 3 {
			t.Fatalf("the old log aside: %+v, %v", s, err)
		}
	}
	if s, err := audit.VerifyLog(path, audit.VerifyOptions{Key: testKey}); err != nil || s.Records != 2 {
		t.Fatalf("new keyed log: %+v, %v", s, err)
	}
	if _, err := audit.OpenWith(path, audit.Options{Key: bytes.Repeat([]byte{1}, 32)}); err == nil || !strings.Contains(err.Error(), "does not verify with the audit key") {
		t.Fatalf("open with another key = %v, want refused", err)
	}
}

// TestRefusalFloodBounded: 100 refusals by one caller, each with a 1 MiB
// key in its arguments, its result and its reason, grow the log by the
// burst's records and one suppressed record, each a few hundred bytes.
func TestRefusalFloodBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	frozen := newClock()
	l, err := audit.OpenWith(path, audit.Options{Key: testKey, Now: frozen.Now})
	if err != nil {
		t.Fatal(err)
	}
	key := strings.Repeat("K", 1<<20)
	args := []byte(`{"idempotency_key":"` + key + `","value":50}`)
	result := []byte(`{"status":"failed","idempotency_key":"` + key + `"}`)
	for range 100 {
		if err := l.Append(context.Background(), audit.Record{Event: audit.EventRefused, Caller: "mallory", Role: "viewer", Tool: "do_set_fan_speed",
			Key: key, Arguments: audit.Args(args, false), Result: result, Reason: "idempotency_key " + key + " is too long"}); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	size := int64(0)
	if fi, err := os.Stat(path); err == nil {
		size = fi.Size()
	}
	recs := tailAll(t, path)
	t.Logf("100 refusals with 1 MiB keys: %d records, %d bytes (%.0f bytes per record)", len(recs), size, float64(size)/float64(len(recs)))
	if len(recs) != audit.DefaultRefusalBurst+1 || recs[len(recs)-1].Count != 100-audit.DefaultRefusalBurst || size > int64(len(recs))*1500 {
		t.Fatalf("%d records, %d bytes; want %d records (the burst and a suppressed record counting %d) of at most 1500 bytes each",
			len(recs), size, audit.DefaultRefusalBurst+1, 100-audit.DefaultRefusalBurst)
	}
}

// TestRotationCrashBetweenRenameAndCreate: a crash right after the active
// file was renamed leaves no active file; the next start continues the
// chain from the newest rotated file.
func TestRotationCrashBetweenRenameAndCreate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	o := audit.Options{Key: testKey, MaxSize: 1000}
	writeKeyed(t, path, o, 6, "alice")
	files, _ := audit.Files(path)
	last := tailAll(t, path)
	if len(files) < 2 {
		t.Fatalf("no rotation: %v", files)
	}
	// As if the process died after the rename: the active file's records
	// go to a rotated file of their own, and there is no active file.
	os.Rename(path, filepath.Join(filepath.Dir(path), fmt.Sprintf("audit-%012d.jsonl", last[len(last)-1].Seq)))
	writeKeyed(t, path, o, 2, "alice")
	s, err := audit.VerifyLog(path, audit.VerifyOptions{Key: testKey})
	if err != nil || s.LastSeq != 8 || s.Records != 8 {
		t.Fatalf("verify after a crash mid-rotation = %+v, %v; want 8 records in one chain", s, err)
	}
}

// TestVerifyWhileWriting: audit verify (or a checkpoint timer) running
// while the server appends and rotates never reports a false break.
func TestVerifyWhileWriting(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := audit.OpenWith(path, audit.Options{Key: testKey, MaxSize: 20000})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 400 {
			l.Append(context.Background(), audit.Record{Event: audit.EventResult, Caller: "alice", Tool: "do_set_heater", Key: fmt.Sprint("k", i)})
		}
	}()
	verified := 0
	for running := true; running; verified++ {
		select {
		case <-done:
			running = false
		default:
		}
		if _, err := audit.VerifyLog(path, audit.VerifyOptions{Key: testKey}); err != nil {
			t.Fatalf("verify %d while writing: %v", verified, err)
		}
	}
	l.Close()
	files, _ := audit.Files(path)
	if s, err := audit.VerifyLog(path, audit.VerifyOptions{Key: testKey}); err != nil || s.Records != 400 || len(files) < 3 {
		t.Fatalf("after writing: %+v, %v, %d files", s, err, len(files))
	}
	t.Logf("%d verifications while 400 records were written across %d files", verified, len(files))
}
