package sysfs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/promcp/promcp-device/drivers"
)

func TestDir(t *testing.T) {
	dir := t.TempDir()
	d := Dir(dir)
	ctx := context.Background()
	if _, err := d.ReadFile(ctx, "28-000000000001/w1_slave"); !errors.Is(err, drivers.ErrUnavailable) {
		t.Fatalf("missing file: %v, want unavailable", err)
	}
	// An attribute is written, never created: a missing one is a missing device.
	if err := d.WriteFile(ctx, "export", []byte("0")); !errors.Is(err, drivers.ErrUnavailable) {
		t.Fatalf("write to a missing attribute: %v, want unavailable", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "export")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("WriteFile created the attribute")
	}
	if err := os.WriteFile(filepath.Join(dir, "period"), []byte("40000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := d.WriteFile(ctx, "period", []byte("20")); err != nil {
		t.Fatal(err)
	}
	if b, err := d.ReadFile(ctx, "period"); err != nil || string(b) != "20" {
		t.Fatalf("ReadFile after write = %q, %v (want the old content replaced)", b, err)
	}
	// Names that climb out of the root are refused before any I/O.
	for _, bad := range []string{"../etc/passwd", "/etc/passwd", "a/../../b"} {
		if _, err := d.ReadFile(ctx, bad); err == nil {
			t.Errorf("ReadFile(%q) = nil error", bad)
		}
		if err := d.WriteFile(ctx, bad, []byte("1")); err == nil {
			t.Errorf("WriteFile(%q) = nil error", bad)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := d.ReadFile(cctx, "period"); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled: %v", err)
	}
}
