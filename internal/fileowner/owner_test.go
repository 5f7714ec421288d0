//go:build unix

package fileowner

import (
	"os"
	"path/filepath"
	"testing"
)

// A file the process owns is left as it is.
func TestKeepOwnFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := Keep(f, fi, "the test file"); err != nil {
		t.Fatalf("Keep(own file) = %v, want nil", err)
	}
}

// Run as root, a file takes the owner of the one it replaces.
func TestKeepTakesTheOldOwner(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("chown to another user needs root (CI runs as root)")
	}
	dir := t.TempDir()
	old, repl := filepath.Join(dir, "old"), filepath.Join(dir, "new")
	for _, p := range []string{old, repl} {
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(old, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(old)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(repl, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := Keep(f, fi, "the test file"); err != nil {
		t.Fatal(err)
	}
	got, err := os.Stat(repl)
	if err != nil {
		t.Fatal(err)
	}
	if uid, gid := ownerOf(t, got); uid != 65534 || gid != 65534 {
		t.Errorf("owner = %d:%d, want 65534:65534", uid, gid)
	}
}
