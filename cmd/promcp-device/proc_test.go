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
	cmd := exec.Command(bin, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = stderr
	if stderr == nil {
		cmd.Stderr = os.Stderr
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopProc(t, cmd, stop) })
	lines := bufio.NewScanner(out)
	re := regexp.MustCompile(pattern)
	for lines.Scan() {
		if m := re.FindStringSubmatch(lines.Text()); m != nil {
			go io.Copy(io.Discard, out)
			return cmd, m[1]
		}
	}
	stopProc(t, cmd, os.Kill)
	return cmd, ""
}
