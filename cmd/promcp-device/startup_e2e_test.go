package main

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// pwmGateway writes a gateway manifest (no --sim) whose one output is a
// PWM channel on a chip that is a directory of ordinary files, as
// /sys/class/pwm/pwmchip0 is to the driver: opening the output writes its
// period and enables it there. It returns the manifest and the chip.
func pwmGateway(t *testing.T) (manifest, chip string) {
	t.Helper()
	dir := t.TempDir()
	chip = filepath.Join(dir, "pwmchip0")
	if err := os.MkdirAll(filepath.Join(chip, "pwm0"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"pwm0/period", "pwm0/duty_cycle", "pwm0/enable", "export"} {
		if err := os.WriteFile(filepath.Join(chip, f), []byte("0\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	manifest = filepath.Join(dir, "fan.yml")
	yml := `version: 1
gateway: startup-order
policy: none
buses:
  - {name: pwm0, kind: pwm, device: "` + chip + `"}
devices:
  - {name: fan, bus: pwm0, model: pwm, channel: 0, frequency: 25000}
capabilities:
  - name: fan_speed
    description: Fan drive, as PWM duty cycle.
    type: number
    unit: "%"
    read: {device: fan, channel: duty}
    do:
      tool: do_set_fan_speed
      description: Set the fan's duty cycle.
      side_effects: ["moves air"]
      compensable: true
      constraints: {min: 0, max: 100, step: 1}
      safe_value: 0
`
	if err := os.WriteFile(manifest, []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	return manifest, chip
}

// pwmTouched says what opening the output wrote to the chip, "" if nothing.
func pwmTouched(t *testing.T, chip string) string {
	t.Helper()
	var touched []string
	for _, f := range []string{"pwm0/period", "pwm0/enable", "export"} {
		if b := readFile(t, filepath.Join(chip, f)); string(b) != "0\n" {
			touched = append(touched, f+"="+strings.TrimSpace(string(b)))
		}
	}
	return strings.Join(touched, ", ")
}

// TestStartupChecksBeforeHardware: serve checks and binds everything that
// can fail without hardware (the --http port and certificate, the tokens,
// the state directory) before it opens a bus or sets an output, and read
// and do --dry-run check the names they are given first. A second serve on a
// port in use fails with a message naming the address, and neither the
// simulated greenhouse's GPIO outputs (its driver logs "gpio output
// opened") nor a real PWM output (a chip of plain files, whose enable a
// start-up writes) were opened. Before the fix, the second serve opened
// both, then failed to bind.
func TestStartupChecksBeforeHardware(t *testing.T) {
	stateDir := filepath.Join(t.TempDir(), "state")
	first := startServe(t, "--manifest", greenhouse, "--state", stateDir)
	u, err := url.Parse(first.url)
	if err != nil {
		t.Fatal(err)
	}
	busy := u.Host

	// The observation works: a gateway that starts enables the PWM output.
	manifest, chip := pwmGateway(t)
	cmd, served := launch(t, os.Interrupt, nil, binary, `on (https?://\S+/mcp)`, "serve", "--manifest", manifest, "--http", "127.0.0.1:0", "--allow-no-policy", "--log-level", "error")
	if served == "" || pwmTouched(t, chip) == "" {
		t.Fatalf("a gateway that started (%q) left its PWM output untouched: the test cannot see an open", served)
	}
	cmd.Process.Signal(os.Interrupt)
	cmd.Wait()

	t.Run("port in use, simulator", func(t *testing.T) {
		_, stderr, code := runCLI(t, "serve", "--sim", "--manifest", greenhouse, "--http", busy, "--log-level", "debug")
		if code != 1 || !strings.Contains(stderr, "--http "+busy) || !strings.Contains(stderr, "address already in use") {
			t.Fatalf("second serve --sim on %s: exit %d, stderr %q; want exit 1 naming the address", busy, code, stderr)
		}
		if strings.Contains(stderr, "gpio output opened") || strings.Contains(stderr, "opening buses and outputs") {
			t.Fatalf("second serve --sim on a busy port opened outputs before failing:\n%s", stderr)
		}
	})
	bad := startupTempFile(t, "bad.pem", "not a certificate\n")
	pol := startupTempFile(t, "fan.policy.yml", "version: 1\ntimezone: UTC\nroles: [viewer, operator]\nactions:\n  do_set_fan_speed:\n    roles: [operator]\n")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"port in use", []string{"serve", "--http", busy}, "--http " + busy},
		{"bad certificate", []string{"serve", "--http", "127.0.0.1:0", "--tls-cert", bad, "--tls-key", bad}, "--tls-cert " + bad},
		{"no tokens file", []string{"serve", "--http", "127.0.0.1:0", "--tokens", filepath.Join(t.TempDir(), "missing.txt")}, "missing.txt"},
		{"invalid tokens file", []string{"serve", "--http", "127.0.0.1:0", "--tokens", startupTempFile(t, "tokens.txt", "this is not a token line\n")}, "tokens.txt"},
		{"state directory not writable", []string{"serve", "--state", filepath.Join(startupTempFile(t, "file", "x"), "state")}, "--state"},
		{"state directory in use", []string{"serve", "--http", "127.0.0.1:0", "--state", stateDir}, "another promcp-device"},
		{"read of an unknown capability", []string{"read", "no_such_thing"}, "no_such_thing"},
		{"dry run of an unknown action", []string{"do", "--dry-run", "--policy", pol, "do_no_such_thing", "1"}, "do_no_such_thing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			manifest, chip := pwmGateway(t)
			_, stderr, code := runCLI(t, append([]string{tc.args[0], "--manifest", manifest, "--log-level", "debug"}, tc.args[1:]...)...)
			if code == 0 || !strings.Contains(stderr, tc.want) {
				t.Fatalf("%s: exit %d, stderr %q; want a failure naming %q", strings.Join(tc.args, " "), code, stderr, tc.want)
			}
			if w := pwmTouched(t, chip); w != "" {
				t.Fatalf("%s failed, but only after opening the PWM output (%s):\n%s", strings.Join(tc.args, " "), w, stderr)
			}
		})
	}
}

// startupTempFile writes content to a new file called name and returns its path.
func startupTempFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
