package manifests_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	})
}

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

// The credentials files are read relative to the fleet file; a hub
// accepts its own user and those its users file lists.
func TestParseFleetCredentials(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string, mode os.FileMode) { writeFile(t, dir, name, body, mode) }
	write("fleet.credentials", "hub\nhub-secret\n", 0o600)
	write("gateways.users", "# gateway users\ngw1:s1\n\ngw2:s:2\n", 0o600)
	src := "version: 1\nrole: hub\ngateway: h1\nlisten: {client: \"a:1\", cluster: \"a:2\", leaf: \"a:3\"}\nhttp: \"a:4\"\n" +
		"credentials: fleet.credentials\nusers: gateways.users\n"
	f, err := manifests.ParseFleet(filepath.Join(dir, "hub1.yml"), []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := []manifests.FleetUser{{User: "gw1", Password: "s1"}, {User: "gw2", Password: "s:2"}}
	if f.Credentials != (manifests.FleetUser{User: "hub", Password: "hub-secret"}) || len(f.Users) != 2 || f.Users[0] != want[0] || f.Users[1] != want[1] || f.Insecure {
		t.Fatalf("credentials %+v users %+v insecure %v", f.Credentials, f.Users, f.Insecure)
	}
}

// Without credentials (and without insecure: true) a fleet file is
// refused; a credentials file others may read, a malformed one or a
// missing one is refused at the key that names it.
func TestParseFleetCredentialsErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string, mode os.FileMode) { writeFile(t, dir, name, body, mode) }
	write("open.credentials", "gw1\nsecret\n", 0o644)
	write("group.credentials", "gw1\nsecret\n", 0o640)
	write("short.credentials", "gw1\n", 0o600)
	write("ok.credentials", "gw1\nsecret\n", 0o600)
	write("bad.users", "gw1 secret\n", 0o600)
	write("open.users", "gw1:secret\n", 0o604)
	write("dup.users", "gw2:x\ngw1:secret\n", 0o600)
	const edge = "version: 1\nrole: edge\ngateway: gw1\nhubs: [a:1]\n"
	const hub = "version: 1\nrole: hub\ngateway: h1\nlisten: {client: \"a:1\", cluster: \"a:2\", leaf: \"a:3\"}\nhttp: \"a:4\"\n"
	wantFleetErrors(t, filepath.Join(dir, "f.yml"), []fleetCase{
		{edge, "f.yml:1:1: credentials: missing credentials"},
		{hub, "f.yml:1:1: credentials: missing credentials"},
		{hub + "users: ok.credentials\n", "credentials: missing credentials"},
		{edge + "credentials: open.credentials\n", "f.yml:5:14: credentials: unknown value: " + filepath.Join(dir, "open.credentials") + " is readable by others (mode 0644): chmod 600 it"},
		{edge + "credentials: group.credentials\n", "f.yml:5:14: credentials: unknown value: " + filepath.Join(dir, "group.credentials") + " is readable by others (mode 0640)"},
		{edge + "credentials: short.credentials\n", "f.yml:5:14: credentials: unknown value: " + filepath.Join(dir, "short.credentials") + ": want the username on the first line"},
		{edge + "credentials: none.credentials\n", "f.yml:5:14: credentials: unknown value: stat " + filepath.Join(dir, "none.credentials")},
		{edge + "credentials: ok.credentials\nusers: ok.credentials\n", "f.yml:6:8: users: not allowed: only a hub accepts users"},
		{edge + "credentials: ok.credentials\ninsecure: true\n", "f.yml:6:11: insecure: not allowed with credentials"},
		{hub + "credentials: ok.credentials\nusers: bad.users\n", "f.yml:7:8: users: unknown value: " + filepath.Join(dir, "bad.users") + ":1: want user:password"},
		{hub + "credentials: ok.credentials\nusers: open.users\n", "users: unknown value: " + filepath.Join(dir, "open.users") + " is readable by others (mode 0604)"},
		{edge + "insecure: yes please\n", "insecure: wrong type"},
		{hub + "credentials: ok.credentials\nusers: dup.users\n", `f.yml:7:8: users: duplicate user "gw1": it is already the hub's own`},
	})
	if _, err := manifests.ParseFleet(filepath.Join(dir, "f.yml"), []byte(edge+"credentials: ok.credentials\n")); err != nil {
		t.Errorf("a private credentials file was refused: %v", err)
	}
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
