package manifests

import (
	"strings"
	"testing"
	"time"
)

// max_on reverts to the declared safe value; revert names it again.
func TestPolicyDeadManValues(t *testing.T) {
	m := mustLoad(t, "policy", "deadman_base.yml")
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

// A dead-man limit without a declared safe value is an error naming the
// key: its revert would be an ordinary action, which a cooldown, a rate
// limit, a window or an approval can block (issue 23). revert.to must be
// the safe value.
func TestPolicyDeadManNeedsSafeValue(t *testing.T) {
	base := mustLoad(t, "policy", "base.yml")
	for _, tc := range []struct{ policy, want string }{
		{"do_set_pump: {max_on: 30m}", "actions.do_set_pump.max_on: not allowed on action do_set_pump with no safe_value"},
		{"do_set_fan: {revert: {to: false, after: 10m}}", "actions.do_set_fan.revert: not allowed on action do_set_fan with no safe_value"},
	} {
		_, err := ParsePolicy("p.yml", []byte("version: 1\nactions:\n  "+tc.policy+"\n"), base)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.policy, err, tc.want)
		}
	}
	safe := mustLoad(t, "policy", "deadman_base.yml")
	_, err := ParsePolicy("p.yml", []byte("version: 1\nactions:\n  do_set_fan: {revert: {to: false, after: 10m}}\n"), safe)
	if err == nil || !strings.Contains(err.Error(), "actions.do_set_fan.revert.to: not allowed: false is not the safe_value (true)") {
		t.Errorf("revert.to other than the safe value: error %v", err)
	}
}
