package surface_test

import (
	"slices"
	"testing"

	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/surface"
)

func TestCheck(t *testing.T) {
	expected := []string{"can_do", "do_set_heater", "read_heater", "read_temperature"}
	tests := []struct {
		name   string
		served []string
		ok     bool
		check  func(surface.Report) bool
	}{
		{"exact", []string{"read_heater", "do_set_heater", "can_do", "read_temperature"}, true, nil},
		{"missing", []string{"read_heater", "can_do", "read_temperature"}, false,
			func(r surface.Report) bool { return slices.Equal(r.Missing, []string{"do_set_heater"}) }},
		{"unexpected and unclassified", append(slices.Clone(expected), "get_status"), false,
			func(r surface.Report) bool {
				return slices.Equal(r.Unexpected, []string{"get_status"}) && slices.Equal(r.Unclassified, []string{"get_status"})
			}},
		{"served twice", append(slices.Clone(expected), "read_heater"), false,
			func(r surface.Report) bool { return slices.Equal(r.Duplicates, []string{"read_heater"}) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := surface.Check(expected, tc.served)
			if r.OK() != tc.ok {
				t.Fatalf("Check(%v).OK() = %t, want %t: %+v", tc.served, r.OK(), tc.ok, r)
			}
			if tc.check != nil && !tc.check(r) {
				t.Fatalf("Check(%v) = %+v", tc.served, r)
			}
		})
	}
}

func TestExpectedGreenhouse(t *testing.T) {
	m, err := manifests.Load("../manifests/examples/greenhouse.yml")
	if err != nil {
		t.Fatal(err)
	}
	exp := surface.Expected(m)
	tr := surface.Classify(exp)
	if len(tr.CanDo) != 1 || len(tr.Do) == 0 || len(tr.Read) != len(m.Capabilities) || len(tr.Unclassified) != 0 {
		t.Fatalf("greenhouse triage = %+v", tr)
	}
}

// TestSeeds: the seed's buckets hold each classified tool exactly once;
// unclassified tools are in none (they are drift).
func TestSeeds(t *testing.T) {
	tr := surface.Classify([]string{"read_heater", "do_set_heater", "can_do", "read_temperature", "get_status"})
	s := tr.Seeds()
	if !slices.Equal(s.RealDispatch, []string{"do_set_heater"}) || !slices.Equal(s.ReadOnly, []string{"can_do", "read_heater", "read_temperature"}) ||
		len(s.NativeOnly) != 0 {
		t.Fatalf("Seeds() = %+v", s)
	}
	if server, native := s.Summary(); server != 4 || native != 0 {
		t.Fatalf("Summary() = %d, %d; want 4 server-side, 0 native only", server, native)
	}
}
