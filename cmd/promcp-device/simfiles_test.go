package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// The simulated kernel files of a gateway that was killed are removed by
// the next one; those of a running process are left alone.
func TestSweepSimFiles(t *testing.T) {
	dir := t.TempDir()
	// A process that has exited: its pid is free (reuse within the test is
	// unlikely enough not to matter for a directory name check). The
	// binary's version command, not this test binary again, whose TestMain
	// would build the binary once more (seconds) for a pid.
	cmd := exec.Command(binary, "version")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := filepath.Join(dir, simFilesPrefix+strconv.Itoa(cmd.Process.Pid)+"-1")
	live := filepath.Join(dir, simFilesPrefix+strconv.Itoa(os.Getppid())+"-2")
	mine := filepath.Join(dir, simFilesPrefix+strconv.Itoa(os.Getpid())+"-3")
	other := filepath.Join(dir, simFilesPrefix+"notapid")
	for _, d := range []string{dead, live, mine, other} {
		if err := os.MkdirAll(filepath.Join(d, "w1"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sweepSimFiles(dir)
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("a dead process's files are still there: %v", err)
	}
	for _, d := range []string{live, mine, other} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s was removed: %v", filepath.Base(d), err)
		}
	}
}
