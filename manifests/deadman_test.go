package manifests

import (
	"testing"
	"time"
)

// max_on reverts to the safe value (false for a boolean without one);
// revert names its value.
func TestPolicyDeadManValues(t *testing.T) {
	m := mustLoad(t, "policy", "base.yml")
	p, err := ParsePolicy("p.yml", []byte("version: 1\nactions:\n  do_set_pump: {max_on: 30m}\n  do_set_backup_light: {max_on: 2m}\n  do_set_fan: {revert: {to: true, after: 10m}}\n"), m)
	if err != nil {
		t.Fatal(err)
	}
	for tool, want := range map[string]Revert{
		"do_set_pump":         {To: false, After: 30 * time.Minute},
		"do_set_backup_light": {To: 0.0, After: 2 * time.Minute},
		"do_set_fan":          {To: true, After: 10 * time.Minute},
	} {
		if got := p.Actions[tool].Revert; got == nil || *got != want {
			t.Errorf("%s: Revert %+v, want %+v", tool, got, want)
		}
	}
	if p.Actions["do_set_pump"].Cooldown != 0 {
		t.Error("max_on changed the cooldown")
	}
}
