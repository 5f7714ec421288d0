package manifests

import (
	"slices"
	"strings"
	"testing"
)

// TestOneEditApart checks the Damerau-Levenshtein-1 test that catches a
// misspelt role: one letter added, dropped, changed, or two neighbours
// swapped, but not two edits, not the same name and not a changed digit.
func TestOneEditApart(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"viewer", "veiwer", true},     // transposition
		{"viewer", "viewr", true},      // deletion
		{"viewer", "viewers", true},    // insertion
		{"operator", "operater", true}, // substitution
		{"viewer", "viewer", false},
		{"viewer", "vewier", false}, // two edits
		{"admin", "operator", false},
		{"pump1", "pump2", false}, // numbering, not a misspelling
		{"pump1", "pumpa", true},
		{"ab", "ba", true},
		{"", "a", true},
	} {
		if got := OneEditApart(c.a, c.b); got != c.want {
			t.Errorf("OneEditApart(%q, %q) = %t, want %t", c.a, c.b, got, c.want)
		}
		if got := OneEditApart(c.b, c.a); got != c.want {
			t.Errorf("OneEditApart(%q, %q) = %t, want %t", c.b, c.a, got, c.want)
		}
	}
}

// TestPolicyReadOnlyRoles checks that read-only is what the policy
// declares: viewer by default, any role by read_only: true, and viewer may
// be made an actor by read_only: false; default_roles leave the read-only
// roles out, and MayAct refuses undeclared and read-only roles.
func TestPolicyReadOnlyRoles(t *testing.T) {
	m := mustLoad(t, "policy", "base.yml")
	p, err := ParsePolicy("policy.yml", []byte(`version: 1
roles:
  - viewer
  - operator
  - {name: auditor, read_only: true}
  - {name: night_shift}
`), m)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"viewer", "auditor"}; !slices.Equal(p.ReadOnly, want) {
		t.Errorf("ReadOnly = %v, want %v", p.ReadOnly, want)
	}
	if want := []string{"operator", "night_shift"}; !slices.Equal(p.DefaultRoles, want) {
		t.Errorf("DefaultRoles = %v, want %v", p.DefaultRoles, want)
	}
	for role, want := range map[string]bool{"viewer": false, "auditor": false, "operator": true, "night_shift": true, "admin": false, "veiwer": false} {
		if got := p.MayAct(role); got != want {
			t.Errorf("MayAct(%q) = %t, want %t", role, got, want)
		}
	}
	p, err = ParsePolicy("policy.yml", []byte("version: 1\nroles: [{name: viewer, read_only: false}, operator]\n"), m)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.ReadOnly) != 0 || !p.MayAct("viewer") {
		t.Errorf("viewer declared read_only: false: ReadOnly %v, MayAct %t; want it an actor", p.ReadOnly, p.MayAct("viewer"))
	}
	var nilPolicy *Policy
	if nilPolicy.MayAct("viewer") || !nilPolicy.MayAct("operator") || nilPolicy.MayAct("veiwer") {
		t.Error("without a policy, want viewer read-only, operator an actor, veiwer (undeclared) refused")
	}
}

// TestPolicyMisspeltRoleRefused is issue 23's case: a policy declaring
// roles: [veiwer, operator, ...] loaded, and the veiwer token acted. The
// near miss is now an error that names both roles and the position.
func TestPolicyMisspeltRoleRefused(t *testing.T) {
	m := mustLoad(t, "policy", "base.yml")
	_, err := ParsePolicy("p.yml", []byte("version: 1\nroles: [veiwer, operator, supervisor, admin]\n"), m)
	if err == nil || !strings.Contains(err.Error(), `p.yml:2:9: roles[0]: bad name role "veiwer" is one edit from the built-in role "viewer"`) {
		t.Fatalf("err = %v, want the near miss of veiwer and viewer at 2:9", err)
	}
}
