package audit_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/promcp/promcp-device/audit"
)

// result is the i-th record the tests write: caller's do_set_heater
// result.
func result(caller string, i int) audit.Record {
	return audit.Record{Event: audit.EventResult, Caller: caller, Role: "operator",
		Tool: "do_set_heater", Key: fmt.Sprintf("k%d", i), Arguments: []byte(`{"value":true}`), Status: "success"}
}

// writeLog appends n of alice's results to the log at path, all at once.
func writeLog(t *testing.T, path string, n int) {
	t.Helper()
	l, err := audit.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if err := l.Append(context.Background(), result("alice", i)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// readLines returns the lines of the file at path.
func readLines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

// writeLines replaces the file at path with lines, each ended by a
// newline.
func writeLines(t *testing.T, path string, lines []string) {
	t.Helper()
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}

func verifyFile(t *testing.T, path string) (audit.Summary, error) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return audit.Verify(f)
}

func TestChainVerifiesAcrossReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	writeLog(t, path, 50)
	writeLog(t, path, 50)
	s, err := verifyFile(t, path)
	if err != nil || s.Records != 100 || s.LastSeq != 100 {
		t.Fatalf("Verify = %+v, %v; want 100 records", s, err)
	}
}

// TestTamperingIsDetected edits, removes, inserts and reorders records and
// checks that Verify names the first bad one.
func TestTamperingIsDetected(t *testing.T) {
	tests := []struct {
		name     string
		edit     func(lines []string) []string
		wantLine int
	}{
		{"changed value", func(l []string) []string {
			l[4] = strings.Replace(l[4], `"value":true`, `"value":false`, 1)
			return l
		}, 5},
		{"changed caller", func(l []string) []string {
			l[0] = strings.Replace(l[0], `"caller":"alice"`, `"caller":"bob"`, 1)
			return l
		}, 1},
		{"removed record", func(l []string) []string { return append(l[:3], l[4:]...) }, 4},
		{"swapped records", func(l []string) []string { l[6], l[7] = l[7], l[6]; return l }, 7},
		{"duplicated record", func(l []string) []string { return append(l[:3], append([]string{l[2]}, l[3:]...)...) }, 4},
		{"not JSON", func(l []string) []string { l[8] = "garbage"; return l }, 9},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			writeLog(t, path, 10)
			writeLines(t, path, tc.edit(readLines(t, path)))
			_, err := verifyFile(t, path)
			var ve *audit.VerifyError
			if !errors.As(err, &ve) || !errors.Is(err, audit.ErrTampered) || ve.Line != tc.wantLine {
				t.Fatalf("Verify after %s = %v, want a VerifyError at line %d", tc.name, err, tc.wantLine)
			}
		})
	}
}

func TestTornLastLineIsCutOff(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	writeLog(t, path, 3)
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"seq":4,"time":"2026-`)
	f.Close()
	writeLog(t, path, 2)
	if s, err := verifyFile(t, path); err != nil || s.Records != 5 {
		t.Fatalf("Verify = %+v, %v; want 5 records after the torn line was cut off", s, err)
	}
}

func TestAppendFailsClosed(t *testing.T) {
	l, err := audit.Open(filepath.Join(t.TempDir(), "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	if err := l.Append(t.Context(), audit.Record{Event: audit.EventAttempt}); !errors.Is(err, audit.ErrClosed) {
		t.Fatalf("Append after Close = %v, want ErrClosed", err)
	}
}

func TestTailAndFormat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	writeLog(t, path, 5)
	data, _ := os.ReadFile(path)
	recs, err := audit.Tail(bytes.NewReader(data), 2)
	if err != nil || len(recs) != 2 || recs[1].Seq != 5 {
		t.Fatalf("Tail(2) = %d records, %v; want records 4 and 5", len(recs), err)
	}
	line := audit.Format(recs[1])
	for _, want := range []string{"#5", "result", "do_set_heater", "by alice (operator)", "success", `{"value":true}`} {
		if !strings.Contains(line, want) {
			t.Errorf("Format = %q, want it to contain %q", line, want)
		}
	}
	// A routed call's record names the fleet node it came through.
	recs[1].Via = "hub1"
	if line := audit.Format(recs[1]); !strings.Contains(line, "by alice (operator) via hub1") {
		t.Errorf("Format of a routed call = %q, want its route", line)
	}
}

func FuzzVerify(f *testing.F) {
	path := filepath.Join(f.TempDir(), "audit.jsonl")
	l, _ := audit.Open(path)
	l.Append(context.Background(), audit.Record{Event: audit.EventAttempt, Key: "k"})
	l.Append(context.Background(), audit.Record{Event: audit.EventResult, Key: "k"})
	l.Close()
	data, _ := os.ReadFile(path)
	f.Add(data)
	f.Add([]byte("{}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := audit.Verify(bytes.NewReader(data))
		var ve *audit.VerifyError
		if err != nil && !errors.As(err, &ve) && !strings.Contains(err.Error(), "reading") {
			t.Fatalf("Verify error %v is not a VerifyError", err)
		}
	})
}

// TestReopenAfterLongRecord: the chain continues after a record longer
// than the chunk Open reads from the end of the file.
func TestReopenAfterLongRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	writeLog(t, path, 2)
	l, err := audit.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	l.Append(t.Context(), audit.Record{Event: audit.EventRefused, Reason: strings.Repeat("x", 200<<10)})
	l.Close()
	writeLog(t, path, 2)
	if s, err := verifyFile(t, path); err != nil || s.Records != 5 {
		t.Fatalf("Verify = %+v, %v; want 5 records", s, err)
	}
}
