package trust_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nkeys"

	"github.com/promcp/promcp-device/fleet/trust"
)

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// init writes every file with a safe mode, refuses to overwrite, and the
// identities file names every node with its key.
func TestInitFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fleet")
	nodes, err := trust.Init(dir, trust.InitOptions{Hubs: []string{"hub1", "hub2"}, Gateways: []string{"gw1"}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]os.FileMode{dir: 0o700, filepath.Join(dir, "ca.key"): 0o600, filepath.Join(dir, "ca.crt"): 0o644,
		filepath.Join(dir, "identities"): 0o644, filepath.Join(dir, "hub1"): 0o700, filepath.Join(dir, "hub1", "hub1.nk"): 0o600,
		filepath.Join(dir, "hub1", "hub1.key"): 0o600, filepath.Join(dir, "gw1", "gw1.nk"): 0o600}
	for p, m := range want {
		if got := mode(t, p); got != m {
			t.Errorf("%s: mode %04o, want %04o", p, got, m)
		}
	}
	if len(nodes) != 3 || nodes[2].Cert != "" || nodes[0].Cert == "" {
		t.Errorf("nodes = %+v", nodes)
	}
	ids, err := trust.ReadIdentities(filepath.Join(dir, "identities"))
	if err != nil || len(ids) != 3 || ids[2].Node != "gw1" || ids[2].Role != trust.RoleGateway || ids[0].Role != trust.RoleHub {
		t.Fatalf("identities %+v %v", ids, err)
	}
	kp, err := trust.ReadSeed(nodes[2].Seed)
	if err != nil {
		t.Fatal(err)
	}
	if pub, _ := kp.PublicKey(); pub != ids[2].Key {
		t.Errorf("gw1's seed is not its listed key")
	}
	if _, err := trust.Init(dir, trust.InitOptions{Hubs: []string{"hub1"}}); !errors.Is(err, trust.ErrExists) {
		t.Errorf("init over a fleet: %v, want ErrExists", err)
	}
	for _, bad := range [][]string{{"hub.1"}, {"hub1", "hub1"}, {}} {
		if _, err := trust.Init(filepath.Join(t.TempDir(), "f"), trust.InitOptions{Hubs: bad}); err == nil {
			t.Errorf("hubs %q accepted", bad)
		}
	}
}

// add-gateway adds a line and a directory; revoke marks the line, leaving
// the others; a revoked node cannot be revoked twice, a live one not added
// twice, the last hub not revoked.
func TestAddAndRevoke(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fleet")
	if _, err := trust.Init(dir, trust.InitOptions{Hubs: []string{"hub1"}, Gateways: []string{"gw1"}}); err != nil {
		t.Fatal(err)
	}
	before, _ := trust.ReadIdentities(filepath.Join(dir, "identities"))
	nf, err := trust.AddGateway(dir, "gw7")
	if err != nil {
		t.Fatal(err)
	}
	if mode(t, nf.Seed) != 0o600 || nf.Cert != "" {
		t.Errorf("gw7's files %+v", nf)
	}
	if _, err := trust.AddGateway(dir, "gw7"); err == nil || !strings.Contains(err.Error(), "in the fleet already") {
		t.Errorf("gw7 added twice: %v", err)
	}
	id, err := trust.Revoke(dir, "gw7")
	if err != nil || !id.Revoked || id.Node != "gw7" {
		t.Fatalf("revoke: %+v %v", id, err)
	}
	after, err := trust.ReadIdentities(filepath.Join(dir, "identities"))
	if err != nil || len(after) != 3 || after[0] != before[0] || after[1] != before[1] || !after[2].Revoked {
		t.Fatalf("after revoking gw7: %+v %v", after, err)
	}
	if _, err := trust.Revoke(dir, "gw7"); err == nil {
		t.Error("gw7 revoked twice")
	}
	if _, err := trust.Revoke(dir, "hub1"); err == nil || !strings.Contains(err.Error(), "last hub") {
		t.Errorf("the last hub revoked: %v", err)
	}
	if _, err := trust.AddGateway(dir, "gw7"); !errors.Is(err, trust.ErrExists) {
		t.Errorf("gw7 re-added over its old directory: %v, want ErrExists", err)
	}
}

func TestParseIdentitiesErrors(t *testing.T) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	k, _ := kp.PublicKey()
	for _, tc := range []struct{ src, want string }{
		{"gw1 gateway\n", "f:1: want"},
		{"# c\n\ngw.1 gateway " + k + "\n", "f:3: node id \"gw.1\""},
		{"gw1 admin " + k + "\n", `f:1: role "admin"`},
		{"gw1 gateway SUAB\n", `f:1: "SUAB" is not a public user nkey`},
		{"gw1 gateway " + k + "\ngw2 gateway " + k + "\n", "f:2: key of gw2 listed twice"},
	} {
		if _, err := trust.ParseIdentities("f", []byte(tc.src)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.src, err, tc.want)
		}
	}
}

// match reports whether NATS subject s matches pattern p (* one token, >
// the rest).
func match(p, s string) bool {
	pt, st := strings.Split(p, "."), strings.Split(s, ".")
	for i, tok := range pt {
		if tok == ">" {
			return len(st) > i
		}
		if i >= len(st) || (tok != "*" && tok != st[i]) {
			return false
		}
	}
	return len(pt) == len(st)
}

func allowed(list []string, s string) bool {
	for _, p := range list {
		if match(p, s) {
			return true
		}
	}
	return false
}

// A gateway's permissions allow its own subjects and none of another
// gateway's, nor any stream or bucket management, nor any write to the
// shared records, nor replies in another's name.
func TestGatewayPermissions(t *testing.T) {
	p := trust.GatewayPermissions("gw1")
	for _, s := range []string{"promcp.call.gw2.gw1", "promcp.cando.gw2.gw1", "promcp.audit.gw1", "promcp.shared.gw1.reserve",
		"$KV.fleet_registry.gw.gw1", "$KV.fleet_alive.gw.gw1", "$JS.hub.API.STREAM.INFO.KV_fleet_registry", "_INBOX.hub1.gw1.x"} {
		if !allowed(p.Publish, s) {
			t.Errorf("gw1 may not publish %s", s)
		}
	}
	for _, s := range []string{"promcp.call.gw1.hub1", "promcp.cando.gw1.hub1", "_INBOX.gw1.abc.1"} {
		if !allowed(p.Subscribe, s) {
			t.Errorf("gw1 may not receive %s", s)
		}
	}
	forbidden := []string{"promcp.call.gw1.gw2", "promcp.call.gw2.hub1", "promcp.cando.gw3.gw2", "promcp.audit.gw2", "promcp.shared.gw2.reserve",
		"$KV.fleet_registry.gw.gw2", "$KV.fleet_alive.gw.gw9", "$KV.fleet_lease.cooldown.x.y", "$KV.fleet_idem.idem.k", "rate.x.y.1",
		"_INBOX.hub1.gw2.x", "_INBOX.hub1.abc.1", "_INBOX.gw2.x.1", "$JS.S.abc", "$SRV.PING", "$SRV.INFO.promcp-gateway",
		"promcp.gw2.call", "promcp.cando", "$KV.fleet_lease.cooldown.equipment-site_fans.do_set_fan_speed", "$JS.hub.API.$KV.fleet_lease.cooldown.x",
		"$JS.hub.API.CONSUMER.CREATE.KV_fleet_lease.x",
		"$JS.hub.API.CONSUMER.CREATE.KV_fleet_registry.x.y", "$JS.API.CONSUMER.CREATE.KV_fleet_alive", "$JS.API.STREAM.MSG.DELETE.KV_fleet_registry"}
	for _, op := range []string{"STREAM.DELETE.", "STREAM.PURGE.", "STREAM.CREATE.", "STREAM.UPDATE.", "STREAM.MSG.DELETE."} {
		for _, st := range []string{"KV_fleet_lease", "KV_fleet_registry", "KV_fleet_alive", "FLEET_RATE", "FLEET_AUDIT", "KV_fleet_idem"} {
			forbidden = append(forbidden, "$JS.API."+op+st, "$JS.hub.API."+op+st)
		}
	}
	for _, s := range forbidden {
		if allowed(p.Publish, s) {
			t.Errorf("gw1 may publish %s", s)
		}
	}
	for _, s := range []string{"promcp.call.gw2.hub1", "promcp.cando.gw2.hub1", "promcp.audit.gw2", "_INBOX.hub1.x", "_INBOX.gw2.x"} {
		if allowed(p.Subscribe, s) {
			t.Errorf("gw1 may receive %s", s)
		}
	}
}
