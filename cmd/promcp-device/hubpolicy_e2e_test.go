package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHubPolicyIdentity: hub --policy takes the jwt providers of the
// policy's identity block; a policy without providers, or with an mtls
// provider (the hub's fleet endpoint serves plain HTTP), is a usage error
// that names the file, before the hub starts.
func TestHubPolicyIdentity(t *testing.T) {
	dir := t.TempDir()
	fleetFile := filepath.Join(dir, "hub1.yml")
	os.WriteFile(fleetFile, []byte("version: 1\nrole: hub\ngateway: hub1\ninsecure: true\nlisten: {client: 127.0.0.1:0, leaf: 127.0.0.1:0, cluster: 127.0.0.1:0}\ncluster: {name: hub, peers: [\"nats://127.0.0.1:1\"]}\nhttp: 127.0.0.1:0\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "ca.crt"), []byte("not used"), 0o600)
	for _, tc := range []struct{ name, body, want string }{
		{"no providers", "version: 1\n", "declares no identity providers"},
		{"mtls", "version: 1\nidentity:\n  providers:\n    - {type: mtls, ca_cert_path: ca.crt}\n", "takes jwt providers only, not mtls"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pol := filepath.Join(dir, "hub.policy.yml")
			os.WriteFile(pol, []byte(tc.body), 0o600)
			_, stderr, code := runCLI(t, "hub", "--fleet", fleetFile, "--replicas", "1", "--policy", pol)
			if code != 2 || !strings.Contains(stderr, tc.want) || !strings.Contains(stderr, pol) {
				t.Fatalf("exit %d, %q; want exit 2 naming %s and %q", code, stderr, pol, tc.want)
			}
		})
	}
}
