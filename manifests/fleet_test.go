package manifests_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/promcp/promcp-device/fleet/trust"
	"github.com/promcp/promcp-device/manifests"
)

const edgeFleet = `version: 1
role: edge
gateway: gw1
zone: greenhouse_a
tags: [north, glass]
hubs: [nats://127.0.0.1:7422, nats://127.0.0.1:7423]
insecure: true
`

func TestParseFleetDefaults(t *testing.T) {
	f, err := manifests.ParseFleet("gw1.fleet.yml", []byte(edgeFleet))
	if err != nil {
		t.Fatal(err)
	}
	if f.Role != manifests.RoleEdge || f.Gateway != "gw1" || f.Zone != "greenhouse_a" || len(f.Hubs) != 2 {
		t.Fatalf("fleet = %+v", f)
	}
	if f.LeafPing.Interval != time.Second || f.LeafPing.MaxMissed != 2 || f.CanDoBudget != 500*time.Millisecond || f.Profile != "full" {
		t.Fatalf("defaults: ping %+v budget %s profile %q", f.LeafPing, f.CanDoBudget, f.Profile)
	}
}

func TestParseFleetHub(t *testing.T) {
	src := `version: 1
role: hub
gateway: hub1
listen: {client: "127.0.0.1:4222", cluster: "127.0.0.1:6222", leaf: "127.0.0.1:7422"}
cluster:
  peers: [nats://127.0.0.1:6223, nats://127.0.0.1:6224]
http: 127.0.0.1:8090
leaf_ping: {interval: 2s, max_missed: 3}
can_do_budget: 300ms
limits: {audit_max_age: 168h, records_max_bytes: 67108864}
insecure: true
`
	f, err := manifests.ParseFleet("hub1.yml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if f.Cluster.Name != "hub" || len(f.Cluster.Peers) != 2 || f.Profile != "aggregator" || f.LeafPing.Interval != 2*time.Second ||
		f.LeafPing.MaxMissed != 3 || f.CanDoBudget != 300*time.Millisecond || f.Listen.Leaf != "127.0.0.1:7422" {
		t.Fatalf("hub = %+v", f)
	}
	if f.Limits != (manifests.FleetLimits{AuditMaxAge: 168 * time.Hour, AuditMaxBytes: manifests.DefaultAuditMaxBytes, RecordsMaxBytes: 64 << 20}) {
		t.Errorf("limits = %+v", f.Limits)
	}
}

// Each bad file is refused with the problem at its line:column and field.
func TestParseFleetErrors(t *testing.T) {
	wantFleetErrors(t, "f.yml", []fleetCase{
		{"version: 1\nrole: edge\ngateway: gw1\n", `f.yml:1:1: hubs: missing hubs`},
		{"version: 1\nrole: boss\ngateway: gw1\nhubs: [a:1]\n", `f.yml:2:7: role: unknown value`},
		{"version: 1\nrole: edge\ngateway: Gw-1\nhubs: [a:1]\n", `f.yml:3:10: gateway: bad name "Gw-1"`},
		{"version: 1\nrole: edge\ngateway: gw1\nhubs: [http://x:1]\n", `f.yml:4:8: hubs[0]: unknown value "http://x:1"`},
		{"version: 1\nrole: edge\ngateway: gw1\nhubs: [a:1]\ncan_do_budget: 1m\n", `f.yml:5:16: can_do_budget: out of range`},
		{"version: 1\nrole: edge\ngateway: gw1\nhubs: [a:1]\nleaf_ping: {interval: 5ms}\n", `leaf_ping.interval: out of range`},
		{"version: 1\nrole: hub\ngateway: h1\nlisten: {client: \"a:1\"}\nhttp: \"a:2\"\n", `listen: missing listen.cluster`},
		{"version: 1\nrole: edge\ngateway: gw1\nhubs: [a:1]\nlisten: {leaf: \"a:2\"}\n", `listen: not allowed`},
		{"version: 1\nrole: edge\ngatway: gw1\n", `gatway: unknown field`},
		{hubLimits + "limits: {audit_max_age: 10m}\n", `f.yml:6:25: limits.audit_max_age: out of range`},
		{hubLimits + "limits: {audit_max_bytes: 1000}\n", `f.yml:6:27: limits.audit_max_bytes: out of range`},
		{hubLimits + "limits: {records_max_bytes: -1}\n", `limits.records_max_bytes: out of range`},
		{hubLimits + "limits: {audit_max_bytes: lots}\n", `limits.audit_max_bytes`},
		{hubLimits + "limits: {max_age: 1h}\n", `limits.max_age: unknown field`},
		{"version: 1\nrole: edge\ngateway: gw1\nhubs: [a:1]\nlimits: {audit_max_age: 2h}\n", `f.yml:5:9: limits: not allowed`},
	})
}

// hubLimits is a hub's fleet file, five lines, for its limits: to follow.
const hubLimits = "version: 1\nrole: hub\ngateway: h1\nlisten: {client: \"a:1\", cluster: \"a:2\", leaf: \"a:3\"}\nhttp: \"a:4\"\n"

// fleetCase is a fleet file and a part of the error it must be refused
// with.
type fleetCase struct{ src, want string }

// wantFleetErrors parses each case's src as file: it must be refused with
// *manifests.Error values whose text holds want.
func wantFleetErrors(t *testing.T, file string, cases []fleetCase) {
	t.Helper()
	for _, tc := range cases {
		_, err := manifests.ParseFleet(file, []byte(tc.src))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want %q", tc.src, err, tc.want)
		}
		var me *manifests.Error
		if err != nil && !errors.As(err, &me) {
			t.Errorf("%q: %T is no *manifests.Error", tc.src, err)
		}
	}
}

// writeFile writes body to dir/name with mode (past the umask).
func writeFile(t *testing.T, dir, name, body string, mode os.FileMode) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

// The trust files are read relative to the fleet file: a hub's nkey,
// certificate (signed by the fleet CA) and identities file, a gateway's
// nkey and the CA.
func TestParseFleetTrust(t *testing.T) {
	dir := t.TempDir()
	nodes, err := trust.Init(filepath.Join(dir, "fleet"), trust.InitOptions{Hubs: []string{"h1"}, Gateways: []string{"gw1"}})
	if err != nil {
		t.Fatal(err)
	}
	src := "version: 1\nrole: hub\ngateway: h1\nlisten: {client: \"a:1\", cluster: \"a:2\", leaf: \"a:3\"}\nhttp: \"a:4\"\n" +
		"identity: fleet/h1/h1.nk\nca: fleet/h1/ca.crt\ncert: fleet/h1/h1.crt\nkey: fleet/h1/h1.key\nidentities: fleet/identities\n"
	f, err := manifests.ParseFleet(filepath.Join(dir, "hub1.yml"), []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	ids, err := trust.ReadIdentities(f.Trust.IdentitiesFile)
	if err != nil {
		t.Fatal(err)
	}
	if pub, _ := f.Trust.Key.PublicKey(); pub != ids[0].Key || ids[0].Node != "h1" || f.Trust.Cert.Leaf.Subject.CommonName != "h1" || f.Trust.CA == nil || f.Insecure {
		t.Fatalf("hub trust %+v, identities %+v", f.Trust, ids)
	}
	edge := "version: 1\nrole: edge\ngateway: gw1\nhubs: [a:1]\nidentity: " + nodes[1].Seed + "\nca: fleet/gw1/ca.crt\n"
	g, err := manifests.ParseFleet(filepath.Join(dir, "gw1.yml"), []byte(edge))
	if err != nil {
		t.Fatal(err)
	}
	if pub, _ := g.Trust.Key.PublicKey(); pub != ids[1].Key {
		t.Errorf("gw1's key %s, want %s", pub, ids[1].Key)
	}
}

// Without identity and ca (and without insecure: true) a fleet file is
// refused; a seed others may read, a CA or certificate expired or from
// another fleet, a malformed identities file, the old user/password keys,
// are refused at the key that names them.
func TestParseFleetTrustErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := trust.Init(filepath.Join(dir, "f"), trust.InitOptions{Hubs: []string{"h1"}, Gateways: []string{"gw1"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := trust.Init(filepath.Join(dir, "old"), trust.InitOptions{Hubs: []string{"h1"}, Now: time.Now().AddDate(-11, 0, 0)}); err != nil {
		t.Fatal(err)
	}
	if _, err := trust.Init(filepath.Join(dir, "other"), trust.InitOptions{Hubs: []string{"h1"}}); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "open.nk", string(readFile(t, filepath.Join(dir, "f/gw1/gw1.nk"))), 0o644)
	writeFile(t, dir, "bad.ids", "gw1 gateway nope\n", 0o644)
	writeFile(t, dir, "ok.credentials", "gw1\nsecret\n", 0o600)
	const edge = "version: 1\nrole: edge\ngateway: gw1\nhubs: [a:1]\n"
	const hub = "version: 1\nrole: hub\ngateway: h1\nlisten: {client: \"a:1\", cluster: \"a:2\", leaf: \"a:3\"}\nhttp: \"a:4\"\n"
	const hubTrust = "identity: f/h1/h1.nk\nca: f/ca.crt\n"
	wantFleetErrors(t, filepath.Join(dir, "x.yml"), []fleetCase{
		{edge, "x.yml:1:1: identity: missing identity"},
		{edge, "x.yml:1:1: ca: missing ca"},
		{hub + hubTrust, "x.yml:1:1: cert: missing cert"},
		{hub + hubTrust, "x.yml:1:1: identities: missing identities"},
		{edge + "identity: open.nk\nca: f/ca.crt\n", "x.yml:5:11: identity: unknown value: " + filepath.Join(dir, "open.nk") + " is readable by others (mode 0644): chmod 600 it"},
		{edge + "identity: f/ca.crt\nca: f/ca.crt\n", "identity: unknown value: " + filepath.Join(dir, "f/ca.crt") + " is readable by others"},
		{edge + "identity: f/gw1/gw1.nk\nca: f/gw1/gw1.nk\n", "x.yml:6:5: ca: unknown value: " + filepath.Join(dir, "f/gw1/gw1.nk") + ": no PEM certificate"},
		{edge + "identity: f/gw1/gw1.nk\nca: old/ca.crt\n", "ca: unknown value: " + filepath.Join(dir, "old/ca.crt") + `: CA "promcp fleet CA" expired on`},
		{hub + hubTrust + "cert: old/h1/h1.crt\nkey: old/h1/h1.key\nidentities: f/identities\n", "cert: unknown value: " + filepath.Join(dir, "old/h1/h1.crt") + `: certificate "h1" expired on`},
		{hub + hubTrust + "cert: other/h1/h1.crt\nkey: other/h1/h1.key\nidentities: f/identities\n", "not signed by the fleet CA"},
		{hub + hubTrust + "cert: f/h1/h1.crt\nkey: f/h1/h1.key\nidentities: bad.ids\n", "identities: unknown value: " + filepath.Join(dir, "bad.ids") + `:1: "nope" is not a public user nkey`},
		{edge + "identity: f/gw1/gw1.nk\nca: f/ca.crt\ncert: f/h1/h1.crt\n", "cert: not allowed: only a hub has a certificate"},
		{edge + "identity: f/gw1/gw1.nk\ninsecure: true\n", "insecure: not allowed with identity"},
		{edge + "credentials: ok.credentials\n", "x.yml:5:14: credentials: not allowed: user/password fleet credentials are no longer accepted"},
		{edge + "insecure: yes please\n", "insecure: wrong type"},
	})
	if _, err := manifests.ParseFleet(filepath.Join(dir, "x.yml"), []byte(edge+"identity: f/gw1/gw1.nk\nca: f/ca.crt\n")); err != nil {
		t.Errorf("a gateway's own files were refused: %v", err)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func FuzzParseFleet(f *testing.F) {
	f.Add([]byte(edgeFleet))
	f.Add([]byte("version: 1\nrole: hub\ngateway: h\nlisten: {client: \"a:1\", cluster: \"a:2\", leaf: \"a:3\"}\nhttp: \"a:4\"\n"))
	f.Add([]byte("a: &x [*x]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fl, err := manifests.ParseFleet("fuzz.yml", data)
		if err == nil && (fl.Gateway == "" || fl.CanDoBudget <= 0 || fl.LeafPing.Interval <= 0) {
			t.Fatalf("accepted an incomplete fleet file: %+v", fl)
		}
	})
}

// routes caps, per entry node, the role a routed call may carry.
func TestParseFleetRoutes(t *testing.T) {
	f, err := manifests.ParseFleet("gw1.fleet.yml", []byte(edgeFleet+"routes:\n  hub1: {max_role: supervisor}\n  gw2: {max_role: viewer}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Routes) != 2 || f.Routes["hub1"].MaxRole != "supervisor" || f.Routes["gw2"].MaxRole != "viewer" {
		t.Fatalf("routes = %+v", f.Routes)
	}
	wantFleetErrors(t, "f.yml", []fleetCase{
		{edgeFleet + "routes:\n  hub.1: {max_role: viewer}\n", `routes.hub.1: bad name "hub.1"`},
		{edgeFleet + "routes:\n  hub1: {}\n", `routes.hub1.max_role: missing`},
		{edgeFleet + "routes:\n  hub1: {max_role: viewer, role: x}\n", `role: unknown field`},
		{edgeFleet + "routes: [hub1]\n", `routes`},
	})
}
