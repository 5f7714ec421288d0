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
// suffix) and the lint command run in it.
type lintCase struct {
	name  string
	files map[string]string
	args  []string // after "lint"; FILE names are relative to the directory
}

const goodCreds = "gw1\ngw1-secret\n"

var lintFleetCases = []lintCase{
	{"edge-ok", map[string]string{"gw1.yml": "version: 1\nrole: edge\ngateway: gw1\nzone: north\nhubs: [nats://127.0.0.1:7422]\nstore: store\ncredentials: gw1.credentials\n",
		"gw1.credentials.secret": goodCreds}, []string{"gw1.yml"}},
	{"edge-no-hubs", map[string]string{"gw1.yml": "version: 1\nrole: edge\ngateway: gw1\ncredentials: gw1.credentials\n",
		"gw1.credentials.secret": goodCreds}, []string{"gw1.yml"}},
	{"credentials-missing", map[string]string{"gw1.yml": "version: 1\nrole: thin-edge\ngateway: gw1\nhubs: [nats://127.0.0.1:4222]\ncredentials: nowhere.credentials\n"},
		[]string{"gw1.yml"}},
	{"credentials-open", map[string]string{"gw1.yml": "version: 1\nrole: thin-edge\ngateway: gw1\nhubs: [nats://127.0.0.1:4222]\ncredentials: gw1.credentials\n",
		"gw1.credentials.open": goodCreds}, []string{"gw1.yml"}},
	{"hub-two-members", map[string]string{"hub1.yml": "version: 1\nrole: hub\ngateway: hub1\nlisten: {client: 127.0.0.1:4222, cluster: 127.0.0.1:6222, leaf: 127.0.0.1:7422}\n" +
		"cluster:\n  peers: [nats://127.0.0.1:6223]\nhttp: 127.0.0.1:8090\ncredentials: hub.credentials\n",
		"hub.credentials.secret": "hub1\nhub-secret\n"}, []string{"hub1.yml", "--strict"}},
	{"hub-lists-itself", map[string]string{"hub1.yml": "version: 1\nrole: hub\ngateway: hub1\nlisten: {client: 127.0.0.1:4222, cluster: 127.0.0.1:6222, leaf: 127.0.0.1:7422}\n" +
		"cluster:\n  peers: [nats://127.0.0.1:6222, nats://127.0.0.1:6223, nats://127.0.0.1:6224, nats://127.0.0.1:6223]\nstore: store\nhttp: 127.0.0.1:8090\ncredentials: hub.credentials\n",
		"hub.credentials.secret": "hub1\nhub-secret\n"}, []string{"--strict", "hub1.yml"}},
	{"insecure-strict", map[string]string{"gw1.yml": "version: 1\nrole: thin-edge\ngateway: gw1\nhubs: [nats://127.0.0.1:4222, nats://127.0.0.1:4222]\ninsecure: true\n"},
		[]string{"gw1.yml", "--strict"}},
	{"unknown-kind", map[string]string{"what.yml": "colour: blue\nsize: 3\n"}, []string{"what.yml"}},
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
