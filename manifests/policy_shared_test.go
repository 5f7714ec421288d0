package manifests

import (
	"strings"
	"testing"
)

// shared: true marks an action whose cooldown, lease and rate limit the
// fleet holds (package fleet/shared); it is false unless said, and must be
// a boolean.
func TestPolicyShared(t *testing.T) {
	m, p := validPolicy(t)
	if !p.Actions["do_set_pump"].Shared || p.Actions["do_set_fan"].Shared {
		t.Errorf("shared: do_set_pump %t, do_set_fan %t; want true where declared only", p.Actions["do_set_pump"].Shared, p.Actions["do_set_fan"].Shared)
	}
	_, err := ParsePolicy("bad.policy.yml", []byte("version: 1\nactions:\n  do_set_pump:\n    shared: yes please\n"), m)
	if err == nil || !strings.Contains(err.Error(), "bad.policy.yml:4:") || !strings.Contains(err.Error(), "shared") {
		t.Fatalf("shared: yes please = %v, want a positioned error naming shared", err)
	}
	p, err = ParsePolicy("named.policy.yml", []byte("version: 1\nactions:\n  do_set_pump:\n    shared: boiler_room\n"), m)
	if err != nil {
		t.Fatal(err)
	}
	if a := p.Actions["do_set_pump"]; !a.Shared || a.Equipment != "boiler_room" {
		t.Errorf("shared: boiler_room = %+v, want shared, equipment boiler_room", a)
	}
	_, err = ParsePolicy("dots.policy.yml", []byte("version: 1\nactions:\n  do_set_pump:\n    shared: boiler.room\n"), m)
	if err == nil || !strings.Contains(err.Error(), "dots.policy.yml:4:") || !strings.Contains(err.Error(), "letters, digits") {
		t.Fatalf("shared: boiler.room = %v, want a positioned error saying what a name may be", err)
	}
}
