package pulse

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

var t0 = time.Date(2026, 3, 1, 6, 0, 0, 0, time.UTC)

// Bounces within the debounce time are dropped; the rate is the pulses of
// the last minute over the minute (over the time since start while that is
// shorter).
func TestObserveDebouncesAndRates(t *testing.T) {
	c := &Counter{debounce: 5 * time.Millisecond, start: t0}
	at := t0
	for range 30 { // 30 pulses, 2 s apart, each bouncing twice within 2 ms
		at = at.Add(2 * time.Second)
		c.Observe(at)
		c.Observe(at.Add(time.Millisecond))
		c.Observe(at.Add(2 * time.Millisecond))
	}
	n, rate := c.Snapshot(at)
	if n != 30 {
		t.Fatalf("total %d, want 30 (bounces dropped)", n)
	}
	// The last minute holds the pulses at 2, 4, ... 60 s after start: 30.
	if rate != 0.5 {
		t.Fatalf("rate %g/s, want 0.5", rate)
	}
	// Half a minute later, 15 of them are older than a minute.
	if _, rate := c.Snapshot(at.Add(30 * time.Second)); rate != 15.0/60 {
		t.Fatalf("rate %g/s, want %g", rate, 15.0/60)
	}
	// Before a minute has passed, the rate is over the time since start.
	c2 := &Counter{start: t0}
	c2.Observe(t0.Add(time.Second))
	if _, rate := c2.Snapshot(t0.Add(4 * time.Second)); rate != 0.25 {
		t.Fatalf("rate after 4 s with one pulse = %g, want 0.25", rate)
	}
}

// The total survives a restart: saved at most once a second while
// counting, and on Close.
func TestFileKeepsTheTotal(t *testing.T) {
	dir := t.TempDir()
	f := &File{Path: filepath.Join(dir, "pulses", "flow.total")}
	if n, err := f.Load(); err != nil || n != 0 {
		t.Fatalf("Load before any save = %d, %v", n, err)
	}
	c := &Counter{store: f, start: t0, savedAt: t0, stop: make(chan struct{}), done: make(chan struct{})}
	close(c.done)
	for i := range 10 {
		c.Observe(t0.Add(time.Duration(i+1) * 300 * time.Millisecond))
	}
	// Saved at 1.2 s (4 pulses) and 2.4 s (8 pulses): not at every pulse.
	if n, _ := f.Load(); n != 8 {
		t.Fatalf("saved %d while counting, want 8", n)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if n, err := f.Load(); err != nil || n != 10 {
		t.Fatalf("after Close: %d, %v; want 10", n, err)
	}
	if err := os.WriteFile(f.Path, []byte("ten\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Load(); err == nil {
		t.Fatal("Load of a corrupt total = nil error")
	}
	// No temporary file is left behind.
	if left, _ := filepath.Glob(filepath.Join(dir, "pulses", ".pulses-*")); len(left) != 0 {
		t.Fatalf("left %v", left)
	}
}
