package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// TestLogFormatJSONAndNoFirstReadNoise: with --log-format json every line
// serve logs is one JSON object with time, level and msg; reading every
// capability once logs nothing at INFO (the first good reading is DEBUG).
func TestLogFormatJSONAndNoFirstReadNoise(t *testing.T) {
	f, stderr := logFile(t)
	tr := transport.NewStdioWithOptions(binary, nil, []string{"serve", "--sim", "--manifest", greenhouse, "--log-format", "json"},
		transport.WithCommandFunc(func(ctx context.Context, command string, env []string, args []string) (*exec.Cmd, error) {
			cmd := exec.CommandContext(ctx, command, args...)
			cmd.Env = append(os.Environ(), env...)
			cmd.Stderr = f
			return cmd, nil
		}))
	s := connect(t, client.NewClient(tr, client.WithProtocolVersion(mcp.LATEST_PROTOCOL_VERSION)))
	before := stderr()
	for _, tool := range s.tools {
		if strings.HasPrefix(tool.Name, "read_") {
			s.call(tool.Name, map[string]any{})
		}
	}
	s.c.Close()
	all := stderr()
	if !strings.Contains(before, `"msg":"serving over stdio"`) {
		t.Fatalf("--log-format json: stderr %q; want the start-up line as JSON", before)
	}
	sc := bufio.NewScanner(strings.NewReader(all))
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil || line["time"] == nil || line["level"] == nil || line["msg"] == nil {
			t.Fatalf("--log-format json: line %q is not a JSON log record (%v)", sc.Text(), err)
		}
	}
	after := strings.TrimPrefix(all, before)
	for _, l := range strings.Split(strings.TrimSpace(after), "\n") {
		if strings.Contains(l, `"level":"INFO"`) && !strings.Contains(l, "stopped") {
			t.Errorf("reading each capability once logged at INFO: %s", l)
		}
	}
}

func TestLogFormatRefusesUnknown(t *testing.T) {
	_, stderr, code := runCLI(t, "serve", "--sim", "--manifest", greenhouse, "--log-format", "xml")
	if code != 2 || !strings.Contains(stderr, `--log-format "xml": want text or json`) {
		t.Fatalf("--log-format xml: exit %d, stderr %q; want exit 2 naming the flag", code, stderr)
	}
}

// TestVersionFromBuildInfo builds the binary from a clone of this
// checkout, as a user or scripts/release does (VCS stamping on, the
// version given with -ldflags -X, -trimpath as the release builds, which
// also lets the build reuse the cache whatever the clone's directory),
// and checks that `version` prints the
// version, the commit it was built from (Go's build info: vcs.revision)
// and its date (vcs.time). A git worktree gets no VCS stamp from Go,
// hence the clone.
func TestVersionFromBuildInfo(t *testing.T) {
	t.Parallel() // a build: it runs beside the tests that wait on simulated time
	rev, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not in a git checkout (git rev-parse HEAD: %v): no commit to compare with", err)
	}
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatal(err)
	}
	clone := filepath.Join(t.TempDir(), "src")
	if out, err := command(t, "git", "clone", "-q", "--shared", strings.TrimSpace(string(top)), clone).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	bin := filepath.Join(t.TempDir(), "promcp-device")
	// A build, not a process under test: it may take minutes on a loaded
	// machine, so it gets the test's deadline, not exitTimeout.
	build := exec.CommandContext(t.Context(), "go", "build", "-trimpath", "-buildvcs=true", "-ldflags", "-X main.version=v9.8.7-test", "-o", bin, "./cmd/promcp-device")
	build.Dir, build.Stderr = clone, os.Stderr
	if err := build.Run(); err != nil {
		t.Fatalf("go build: %v", err)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("version: %v", err)
	}
	git := exec.Command("git", "log", "-1", "--format=%cd", "--date=format-local:%Y-%m-%d", "HEAD")
	git.Env = append(os.Environ(), "TZ=UTC")
	date, err := git.Output()
	if err != nil {
		t.Fatal(err)
	}
	commit := strings.TrimSpace(string(rev))[:12]
	want := "promcp-device v9.8.7-test (commit " + commit + ", built " + strings.TrimSpace(string(date))
	if !strings.HasPrefix(string(out), want) {
		t.Fatalf("version = %q; want it to start %q", out, want)
	}
	// The tests' own build (no stamp) says what it does not know.
	out2, _, code := runCLI(t, "version")
	if code != 0 || !strings.HasPrefix(out2, "promcp-device ") || !strings.Contains(out2, "(commit ") {
		t.Fatalf("version = %q (exit %d)", out2, code)
	}
}
