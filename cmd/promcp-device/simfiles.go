package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// simFilesPrefix names the directories where serve --sim keeps the
// simulated kernel files (w1, pwm), followed by the serving process's id.
const simFilesPrefix = "promcp-sim-sysfs-"

// makeSimFilesDir makes the directory for this process's simulated kernel
// files under the system's temporary directory, after removing those of
// processes that are gone (a gateway killed before it could clean up).
func makeSimFilesDir() (string, error) {
	sweepSimFiles(os.TempDir())
	return os.MkdirTemp("", simFilesPrefix+strconv.Itoa(os.Getpid())+"-")
}

// sweepSimFiles removes the simulated-file directories under dir whose
// process no longer runs.
func sweepSimFiles(dir string) {
	old, _ := filepath.Glob(filepath.Join(dir, simFilesPrefix+"*"))
	for _, d := range old {
		pid, _, ok := strings.Cut(strings.TrimPrefix(filepath.Base(d), simFilesPrefix), "-")
		n, err := strconv.Atoi(pid)
		if !ok || err != nil || n == os.Getpid() || alive(n) {
			continue
		}
		os.RemoveAll(d)
	}
}

// alive reports whether process pid runs (or cannot be told apart from
// one that does: it belongs to another user).
func alive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || strings.Contains(fmt.Sprint(err), "not permitted")
}
