package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateCLI = flag.Bool("update-cli", false, "rewrite testdata/cli_errors/want.txt from the current output")

// TestCLIErrorsGolden runs the real binary on each line of
// testdata/cli_errors/cases.txt and holds what it prints (stdout, stderr)
// and its exit code in want.txt: every user-facing error of the CLI, and
// of the manifest, policy and site-test files it loads, with its file and
// position, so that a wrong or misleading message is seen in review.
func TestCLIErrorsGolden(t *testing.T) {
	dir := filepath.Join("testdata", "cli_errors")
	cases, err := os.ReadFile(filepath.Join(dir, "cases.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	for _, line := range strings.Split(string(cases), "\n") {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		stdout, stderr, code := runCLI(t, strings.Fields(line)...)
		fmt.Fprintf(&got, "$ promcp-device %s\nexit %d\n", line, code)
		if stdout != "" {
			fmt.Fprintf(&got, "--- stdout\n%s", stdout)
		}
		if stderr != "" {
			fmt.Fprintf(&got, "--- stderr\n%s", stderr)
		}
		got.WriteString("\n")
	}
	want := filepath.Join(dir, "want.txt")
	if *updateCLI {
		if err := os.WriteFile(want, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != string(b) {
		t.Errorf("CLI output differs from %s (rerun with -update-cli and review the diff):\n%s", want, got.String())
	}
}
