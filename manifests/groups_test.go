package manifests

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestGroupMembers: a group holds what its name list, location and tags
// pick, in manifest order, and groups may overlap.
func TestGroupMembers(t *testing.T) {
	file := filepath.Join("testdata", "groups_valid", "manifest.yml")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Parse(file, data)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"east": {"valve1", "door"}, "west-field": {"valve2", "door"}}
	if got := m.GroupNames(); !slices.Equal(got, []string{"east", "west-field"}) {
		t.Fatalf("groups %v", got)
	}
	for name, members := range want {
		g, ok := m.Group(name)
		if !ok || !slices.Equal(g.Members, members) {
			t.Errorf("group %s: members %v, want %v", name, g.Members, members)
		}
	}
	if tools, do := m.Surface([]string{"valve1", "door"}); tools != 4 || do != 1 {
		t.Errorf("surface of east: %d tools, %d do_*; want 4 and 1", tools, do)
	}
}
