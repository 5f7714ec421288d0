package shared

import (
	"path/filepath"
	"testing"

	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/policy"
)

// shared: true gives each gateway a record of its own (its actuators);
// shared: NAME gives every gateway that drives the named equipment the
// same record, so their actions race on one compare-and-set.
func TestRulesOwner(t *testing.T) {
	m, err := manifests.Load(filepath.Join("..", "..", "manifests", "testdata", "policy", "base.yml"))
	if err != nil {
		t.Fatal(err)
	}
	rule := func(gw, shared string) Rule {
		t.Helper()
		pol, err := manifests.ParsePolicy("p.yml", []byte("version: 1\nactions:\n  do_set_pump:\n    shared: "+shared+"\n"), m)
		if err != nil {
			t.Fatal(err)
		}
		r, ok := RulesFromPolicy(gw, pol, nil)(policy.Claim{Action: "do_set_pump", Value: true})
		if !ok {
			t.Fatalf("shared: %s on %s: not shared", shared, gw)
		}
		return r
	}
	if a, b := rule("gw1", "true"), rule("gw2", "true"); a.Owner != "gw1" || b.Owner != "gw2" {
		t.Errorf("shared: true: owners %q, %q; want each gateway its own", a.Owner, b.Owner)
	}
	a, b := rule("gw1", "boiler_room"), rule("gw2", "boiler_room")
	if a.Owner != b.Owner || a.Owner != "equipment-boiler_room" {
		t.Errorf("shared: boiler_room: owners %q, %q; want one record for both", a.Owner, b.Owner)
	}
	if k := leaseKey(a.Owner, "do_set_pump"); k != "cooldown.equipment-boiler_room.do_set_pump" {
		t.Errorf("lease key %q", k)
	}
	// One gateway's rules over both kinds: the named owner does not leak
	// into the next claim.
	pol, err := manifests.ParsePolicy("p.yml", []byte("version: 1\nactions:\n  do_set_pump:\n    shared: boiler_room\n  do_set_fan:\n    shared: true\n"), m)
	if err != nil {
		t.Fatal(err)
	}
	rules := RulesFromPolicy("gw1", pol, nil)
	p, _ := rules(policy.Claim{Action: "do_set_pump", Value: true})
	f, _ := rules(policy.Claim{Action: "do_set_fan", Value: 50.0})
	if p.Owner != "equipment-boiler_room" || f.Owner != "gw1" {
		t.Errorf("owners pump %q, fan %q; want equipment-boiler_room and gw1", p.Owner, f.Owner)
	}
}
