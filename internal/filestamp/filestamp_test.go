package filestamp

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func stamp(t *testing.T, path string) Stamp {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return Of(fi)
}

// A file renamed over the old one with the same size and the same
// modification time is a change: that is how a revoked token of the same
// length, written within one clock tick, looks to a time-and-size check.
func TestRenamedOverSameSizeSameTime(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tokens")
	if err := os.WriteFile(path, []byte("alice admin aaaa\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := stamp(t, path)
	if changed, err := Changed(path, old, false); err != nil || changed {
		t.Fatalf("unchanged file: Changed = %v, %v; want false, nil", changed, err)
	}
	next := filepath.Join(dir, "tokens.new")
	if err := os.WriteFile(next, []byte("alice admin bbbb\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	mod := old.mod
	if err := os.Chtimes(next, mod, mod); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(next, path); err != nil {
		t.Fatal(err)
	}
	now := stamp(t, path)
	if !now.mod.Equal(old.mod) || now.size != old.size {
		t.Fatalf("test setup: want the same time and size, got %v/%d vs %v/%d", now.mod, now.size, old.mod, old.size)
	}
	if changed, err := Changed(path, old, false); err != nil || !changed {
		t.Fatalf("file renamed over it: Changed = %v, %v; want true, nil", changed, err)
	}
}

// A failed read is read again even when the file did not change; a file
// that is gone is an error; the zero stamp is never the same as a file.
func TestChangedFailedAndGone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "users")
	if err := os.WriteFile(path, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := stamp(t, path)
	if changed, _ := Changed(path, s, true); !changed {
		t.Error("after a failed read: Changed = false, want true")
	}
	if changed, _ := Changed(path, Stamp{}, false); !changed {
		t.Error("zero stamp: Changed = false, want true")
	}
	if err := os.Chtimes(path, time.Now(), s.mod.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if changed, _ := Changed(path, s, false); !changed {
		t.Error("new modification time: Changed = false, want true")
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, err := Changed(path, s, false); err == nil {
		t.Error("file gone: Changed returned no error")
	}
}
