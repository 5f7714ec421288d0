package main

import (
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/lint-fleet/*.golden from the current output")

// lintCase is a directory of files (name → content; a name ending in
// ".secret" is written mode 0600, ".open" 0644 and renamed without the
// suffix) and the lint command run in it. With fleet, the directory first
// gets a fleet made by the binary (fleet init fleet --hubs hub1 --gateways
// gw1), whose files the fleet files name; chmod then changes modes in it.
type lintCase struct {
	name  string
	files map[string]string
	args  []string // after "lint"; FILE names are relative to the directory
	fleet bool
	chmod map[string]os.FileMode
}

const (
	gwTrust  = "identity: fleet/gw1/gw1.nk\nca: fleet/gw1/ca.crt\n"
	hubTrust = "identity: fleet/hub1/hub1.nk\nca: fleet/hub1/ca.crt\ncert: fleet/hub1/hub1.crt\nkey: fleet/hub1/hub1.key\nidentities: fleet/identities\n"
)

var lintFleetCases = []lintCase{
	{name: "edge-ok", files: map[string]string{"gw1.yml": "version: 1\nrole: edge\ngateway: gw1\nzone: north\nhubs: [nats://127.0.0.1:7422]\nstore: store\n" + gwTrust},
		args: []string{"gw1.yml"}, fleet: true},
	{name: "edge-no-hubs", files: map[string]string{"gw1.yml": "version: 1\nrole: edge\ngateway: gw1\n" + gwTrust},
		args: []string{"gw1.yml"}, fleet: true},
	{name: "identity-missing", files: map[string]string{"gw1.yml": "version: 1\nrole: thin-edge\ngateway: gw1\nhubs: [nats://127.0.0.1:4222]\nidentity: fleet/gw1/nowhere.nk\nca: fleet/gw1/ca.crt\n"},
		args: []string{"gw1.yml"}, fleet: true},
	{name: "identity-open", files: map[string]string{"gw1.yml": "version: 1\nrole: thin-edge\ngateway: gw1\nhubs: [nats://127.0.0.1:4222]\n" + gwTrust},
		args: []string{"gw1.yml"}, fleet: true, chmod: map[string]os.FileMode{"fleet/gw1/gw1.nk": 0o644}},
	{name: "old-credentials", files: map[string]string{"gw1.yml": "version: 1\nrole: thin-edge\ngateway: gw1\nhubs: [nats://127.0.0.1:4222]\ncredentials: gw1.credentials\n",
		"gw1.credentials.secret": "gw1\ngw1-secret\n"}, args: []string{"gw1.yml"}},
	{name: "hub-two-members", files: map[string]string{"hub1.yml": "version: 1\nrole: hub\ngateway: hub1\nlisten: {client: 127.0.0.1:4222, cluster: 127.0.0.1:6222, leaf: 127.0.0.1:7422}\n" +
		"cluster:\n  peers: [nats://127.0.0.1:6223]\nhttp: 127.0.0.1:8090\n" + hubTrust}, args: []string{"hub1.yml", "--strict"}, fleet: true},
	{name: "hub-lists-itself", files: map[string]string{"hub1.yml": "version: 1\nrole: hub\ngateway: hub1\nlisten: {client: 127.0.0.1:4222, cluster: 127.0.0.1:6222, leaf: 127.0.0.1:7422}\n" +
		"cluster:\n  peers: [nats://127.0.0.1:6222, nats://127.0.0.1:6223, nats://127.0.0.1:6224, nats://127.0.0.1:6223]\nstore: store\nhttp: 127.0.0.1:8090\n" + hubTrust},
		args: []string{"--strict", "hub1.yml"}, fleet: true},
	{name: "insecure-strict", files: map[string]string{"gw1.yml": "version: 1\nrole: thin-edge\ngateway: gw1\nhubs: [nats://127.0.0.1:4222, nats://127.0.0.1:4222]\ninsecure: true\n"},
		args: []string{"gw1.yml", "--strict"}},
	{name: "unknown-kind", files: map[string]string{"what.yml": "colour: blue\nsize: 3\n"}, args: []string{"what.yml"}},
}

// TestLintFleetGolden: lint takes fleet files, told by their content,
// with flags before or after them: each case's output (the directory
// shown as DIR) and exit code are its testdata/lint-fleet/NAME.golden.
// Run with -update to rewrite them.
func TestLintFleetGolden(t *testing.T) {
	t.Parallel()
	for _, c := range lintFleetCases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if c.fleet {
				if _, errOut, code := runCLI(t, "fleet", "init", filepath.Join(dir, "fleet"), "--hubs", "hub1", "--gateways", "gw1"); code != 0 {
					t.Fatalf("fleet init: exit %d: %s", code, errOut)
				}
			}
			for name, mode := range c.chmod {
				if err := os.Chmod(filepath.Join(dir, name), mode); err != nil {
					t.Fatal(err)
				}
			}
			for name, body := range c.files {
				mode := os.FileMode(0o644)
				if n, ok := strings.CutSuffix(name, ".secret"); ok {
					name, mode = n, 0o600
				}
				name = strings.TrimSuffix(name, ".open")
				if err := os.WriteFile(filepath.Join(dir, name), []byte(body), mode); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(filepath.Join(dir, name), mode); err != nil { // whatever the umask
					t.Fatal(err)
				}
			}
			var args []string
			for _, a := range c.args {
				if !strings.HasPrefix(a, "-") {
					a = filepath.Join(dir, a)
				}
				args = append(args, a)
			}
			out, stderr, code := runCLI(t, append([]string{"lint"}, args...)...)
			got := strings.ReplaceAll("$ lint "+strings.Join(c.args, " ")+"\n"+out+stderr+"exit "+itoa(code)+"\n", dir, "DIR")
			golden := filepath.Join("testdata", "lint-fleet", c.name+".golden")
			if *updateGolden {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to write it)", err)
			}
			if got != string(want) {
				t.Errorf("lint %v:\n%s\nwant (%s):\n%s", c.args, got, golden, want)
			}
		})
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestLintKinds: lint tells a manifest, a policy, a fleet file, a fault
// scenario and a site test by their content (the examples, in one run),
// and a flag after the files works as before them.
func TestLintKinds(t *testing.T) {
	t.Parallel()
	files := []string{greenhouse, "../../manifests/examples/greenhouse.policy.yml", greenhouseFaults,
		"../../manifests/examples/site-tests/greenhouse.yml"}
	out, stderr, code := runCLI(t, append([]string{"lint"}, files...)...)
	for _, want := range []string{"greenhouse.yml: ok: gateway", "greenhouse.policy.yml: ok: policy", "scenario greenhouse_faults",
		"site-tests/greenhouse.yml: ok: site test"} {
		if !strings.Contains(out, want) {
			t.Errorf("lint the examples: no %q in\n%s%s", want, out, stderr)
		}
	}
	if code != 0 {
		t.Errorf("lint the examples: exit %d\n%s%s", code, out, stderr)
	}
}
