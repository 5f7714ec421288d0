package main

// Every process a test starts is waited for under a deadline: a binary
// that hangs on exit fails the test that started it, killed, instead of
// hanging the run.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"testing"
	"time"
)

// exitTimeout bounds every wait for a process to exit.
const exitTimeout = 30 * time.Second

// waitExit waits for cmd to exit, at most exitTimeout; past it, it kills
// the process, fails the test and returns the error.
func waitExit(t testing.TB, cmd *exec.Cmd) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(exitTimeout):
		cmd.Process.Kill()
		<-done
		err := fmt.Errorf("%v did not exit within %v: killed", cmd.Args, exitTimeout)
		t.Error(err)
		return err
	}
}

// stopProc sends sig to cmd, unless it never started or has exited, and
// waits for it (see waitExit).
func stopProc(t testing.TB, cmd *exec.Cmd, sig os.Signal) error {
	t.Helper()
	if cmd.Process == nil || cmd.ProcessState != nil {
		return nil
	}
	cmd.Process.Signal(sig)
	return waitExit(t, cmd)
}

// command returns a one-shot command that is killed when it outlives
// exitTimeout or the test.
func command(t testing.TB, name string, args ...string) *exec.Cmd {
	ctx, cancel := context.WithTimeout(t.Context(), exitTimeout)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// launch starts bin with args, its stderr to stderr (os.Stderr when nil),
// and returns it with the first submatch of pattern in what it prints on
// stdout (the address it chose), or "" when it printed none (it is then
// stopped). When the test ends it is sent stop and waited for.
func launch(t testing.TB, stop os.Signal, stderr io.Writer, bin, pattern string, args ...string) (*exec.Cmd, string) {
	t.Helper()
	p := startProc(t, stop, stderr, bin, pattern, args...)
	if a, ok := <-p.got; ok {
		return p.cmd, a
	}
	stopProc(t, p.cmd, os.Kill)
	return p.cmd, ""
}

// proc is a process a test started and the address it printed.
type proc struct {
	cmd  *exec.Cmd
	args []string
	got  chan string // the first submatch of the pattern; closed unsent when none came
}

// startProc starts bin with args, its stderr to stderr (os.Stderr when
// nil), without waiting for it: launch and addr wait for the first
// submatch of pattern on its stdout. When the test ends it is sent stop
// and waited for.
func startProc(t testing.TB, stop os.Signal, stderr io.Writer, bin, pattern string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(bin, args...), args: args, got: make(chan string, 1)}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stderr = stderr
	if stderr == nil {
		p.cmd.Stderr = os.Stderr
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopProc(t, p.cmd, stop) })
	re := regexp.MustCompile(pattern)
	go func() {
		lines := bufio.NewScanner(out)
		for lines.Scan() {
			if m := re.FindStringSubmatch(lines.Text()); m != nil {
				p.got <- m[1]
				break
			}
		}
		close(p.got)
		io.Copy(io.Discard, out)
	}()
	return p
}

// addr waits at most within for the address p prints, failing the test
// when p exits without it or takes longer.
func (p *proc) addr(t testing.TB, within time.Duration) string {
	t.Helper()
	select {
	case a, ok := <-p.got:
		if !ok {
			t.Fatalf("%v exited without printing its address", p.args)
		}
		return a
	case <-time.After(within):
		t.Fatalf("%v printed no address within %v", p.args, within)
	}
	return ""
}

// kill ends the process at once (SIGKILL), as a crash or a power cut.
func (p *proc) kill(t testing.TB) { t.Helper(); stopProc(t, p.cmd, os.Kill) }
