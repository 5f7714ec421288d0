package manifests

import (
	"path/filepath"
	"testing"
	"time"
)

// TestPolicyGolden checks the policy files under testdata/policy/<case>/
// against testdata/policy/base.yml: want.err holds the exact errors (empty
// for a valid file).
func TestPolicyGolden(t *testing.T) {
	m := mustLoad(t, "policy", "base.yml")
	files, _ := filepath.Glob(filepath.Join("testdata", "policy", "*", "policy.yml"))
	if len(files) == 0 {
		t.Fatal("no policy golden cases")
	}
	for _, f := range files {
		compareGolden(t, f, func(data []byte) (bool, error) {
			p, err := ParsePolicy("policy.yml", data, m)
			return p != nil, err
		})
	}
}

func TestPolicyValid(t *testing.T) {
	_, p := validPolicy(t)
	light := p.Actions["do_set_light_level"]
	if !light.Clamp || *light.MaxChange != 20 || *light.Approval.Above != 90 || light.Approval.TTL != 5*time.Minute {
		t.Errorf("do_set_light_level = %+v", light)
	}
	fan := p.Actions["do_set_fan"].Windows
	if fan.Location != time.UTC || len(fan.Allow[0].Days) != 5 || fan.Allow[0].From != 6*time.Hour || fan.Deny[0].To != 24*time.Hour {
		t.Errorf("do_set_fan windows = %+v", fan)
	}
	if light.Approval.Via != ViaElicitation || p.Actions["do_set_valve"].Approval.Via != ViaOutOfBand {
		t.Errorf("approval via: light %q, valve %q; want elicitation where declared, out_of_band by default",
			light.Approval.Via, p.Actions["do_set_valve"].Approval.Via)
	}
	if f := p.Actions["do_set_fan"]; f.Cooldown != 10*time.Minute || f.CooldownWhen == nil || f.CooldownWhen.Equals != true {
		t.Errorf("do_set_fan cooldown = %s when %+v, want 10m when equals true", f.Cooldown, f.CooldownWhen)
	}
	if p.Actions["do_set_pump"].Cooldown != 5*time.Minute || p.Actions["do_set_pump"].CooldownWhen != nil {
		t.Errorf("do_set_pump cooldown = %+v, want 5m for every value", p.Actions["do_set_pump"])
	}
	if got := p.Actions["do_set_valve"].Roles; len(got) != 1 || got[0] != "supervisor" {
		t.Errorf("do_set_valve roles = %v", got)
	}
	if p.Location.String() != "Europe/Amsterdam" || len(p.Roles) != 5 || len(p.DefaultRoles) != 3 {
		t.Errorf("policy = %+v", p)
	}
	if PolicyPath("dir/greenhouse.yml") != "dir/greenhouse.policy.yml" {
		t.Errorf("PolicyPath = %q", PolicyPath("dir/greenhouse.yml"))
	}
}

// The manifest names its policy relative to itself; none and silence are
// told apart.
func TestManifestNamesPolicy(t *testing.T) {
	m := mustLoad(t, "policy_named", "manifest.yml")
	if want := filepath.Join("testdata", "policy_named", "bench.policy.yml"); m.Policy != "bench.policy.yml" || m.PolicyFile() != want {
		t.Errorf("Policy %q, PolicyFile %q; want bench.policy.yml, %s", m.Policy, m.PolicyFile(), want)
	}
	for _, tc := range []struct{ policy, file string }{{PolicyNone, ""}, {"", ""}, {"/etc/promcp/p.yml", "/etc/promcp/p.yml"}} {
		m := &Manifest{File: "dir/m.yml", Policy: tc.policy}
		if got := m.PolicyFile(); got != tc.file {
			t.Errorf("policy: %q: PolicyFile = %q, want %q", tc.policy, got, tc.file)
		}
	}
}

func FuzzParsePolicy(f *testing.F) {
	m := mustLoad(f, "policy", "base.yml")
	files, _ := filepath.Glob(filepath.Join("testdata", "policy", "*", "policy.yml"))
	seedFiles(f, files...)
	fuzzParse(f, "ParsePolicy", func(data []byte) (bool, error) {
		p, err := ParsePolicy("policy.yml", data, m)
		return p != nil, err
	})
}

func TestSafeValueProblem(t *testing.T) {
	enum := Constraints{Enum: []string{"idle", "run"}}
	tests := []struct {
		t    ValueType
		v    any
		want error
	}{
		{TypeEnum, "idle", nil},
		{TypeEnum, "stop", ErrRange},
		{TypeEnum, true, ErrRange},
		{TypeNumber, "zero", ErrType},
		{TypeBoolean, false, nil},
		{TypeInteger, 3.0, nil},
	}
	for _, tc := range tests {
		if got, why := safeValueProblem(tc.t, enum, tc.v); got != tc.want {
			t.Errorf("safeValueProblem(%s, %v) = %v %q, want %v", tc.t, tc.v, got, why, tc.want)
		}
	}
}
