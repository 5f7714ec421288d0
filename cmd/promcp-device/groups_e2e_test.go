package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/manifests/manifesttest"
	"github.com/promcp/promcp-device/promcp"
)

// groupTools is what the endpoint of group g of m serves, sorted.
func groupTools(t *testing.T, m *manifests.Manifest, g string) []string {
	t.Helper()
	names, err := expectedTools(m, g)
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// TestGroupsLintStrictLive: every group of every example, served by the
// real binary at /mcp/<group>, passes lint --strict --call-reads (no
// finding at all, every read_* and can_do answer checked) and serves
// exactly the group's tools (--manifest --group: no drift).
func TestGroupsLintStrictLive(t *testing.T) {
	t.Parallel()
	for _, file := range []string{greenhouse, labBench, irrigation} {
		m := manifesttest.Load(t, file)
		if len(m.Groups) == 0 {
			t.Fatalf("%s declares no groups", file)
		}
		url := startHTTP(t, "--manifest", file)
		for _, g := range m.Groups {
			out, stderr, code := runCLI(t, "lint", "--strict", "--call-reads", "--manifest", file, "--group", g.Name, "--url", url+"/"+g.Name)
			if code != 0 || !strings.Contains(out, "0 error(s)  0 warning(s)  0 info") || strings.Contains(out, "✗") {
				t.Errorf("lint --strict --call-reads %s/%s: exit %d\n%s\n%s", url, g.Name, code, out, stderr)
			}
			t.Logf("%s group %s:\n%s", filepath.Base(file), g.Name, out)
		}
	}
}

// TestGroupSharesCooldown: a do_* through a group endpoint and one through
// /mcp, at once, are decided by one gateway: the fan's 5-minute cooldown
// lets exactly one through, the other is cooldown_active. A key spent on
// the group replays on /mcp.
func TestGroupSharesCooldown(t *testing.T) {
	url := startHTTP(t, "--manifest", greenhouse)
	fan := httpSession(t, url+"/fan", protocols[1])
	all := httpSession(t, url, protocols[1])
	results := make([]map[string]any, 2)
	var wg sync.WaitGroup
	for i, s := range []*session{fan, all} {
		wg.Go(func() {
			results[i], _ = s.call("do_set_fan_speed", map[string]any{"value": 20 + 10*i, "idempotency_key": "shared-" + string(rune('a'+i))})
		})
	}
	wg.Wait()
	got := map[string]int{}
	for _, r := range results {
		switch {
		case r["status"] == "success":
			got["success"]++
		case r["permission"] == "cooldown_active":
			got["cooldown_active"]++
		}
	}
	if got["success"] != 1 || got["cooldown_active"] != 1 {
		t.Fatalf("do_set_fan_speed through /mcp/fan and /mcp at once: %v; want one success, one cooldown_active", results)
	}
	// The same key through the other surface: the kept result, not a new
	// decision.
	for i, r := range results {
		if r["status"] != "success" {
			continue
		}
		other := []*session{all, fan}[i]
		again, _ := other.call("do_set_fan_speed", map[string]any{"value": 20 + 10*i, "idempotency_key": "shared-" + string(rune('a'+i))})
		if again["status"] != "success" || again["timestamp"] != r["timestamp"] {
			t.Errorf("the key replayed through the other endpoint = %v, want the kept success %v", again, r)
		}
	}
}

// TestGroupCanDoScoped: a group's can_do names only the group's tools in
// its candidates, blocked actions, related reads and observations, and in
// its description and note, for intents that match inside the group,
// outside it, and everywhere. (A reason may cite a reading outside the
// group that a decision rests on, such as the heater's dependency on both
// zones' temperatures: a refusal says its true cause.)
var toolName = regexp.MustCompile(`\b(?:read|do)_[a-z0-9_]+\b|\bcan_do\b`)

// checkNames fails when text names a tool outside own.
func checkNames(t *testing.T, group, what, text string, own []string) {
	t.Helper()
	for _, name := range toolName.FindAllString(text, -1) {
		if !slices.Contains(own, name) {
			t.Errorf("/mcp/%s: %s names %s, not one of its tools: %s", group, what, name, text)
		}
	}
}

func TestGroupCanDoScoped(t *testing.T) {
	m := manifesttest.Load(t, greenhouse)
	url := startHTTP(t, "--manifest", greenhouse)
	intents := []map[string]any{
		{"action": "open the vent"}, {"action": "do_set_fan_speed", "value": 20}, {"semantic_tags": []any{"temperature"}},
		{"semantic_tags": []any{"energy"}}, {"location": "zone2"}, {"action": "heat", "location": "zone1", "value": true},
		{"target": "fan", "value": 45}, {},
	}
	for _, g := range m.Groups {
		own := groupTools(t, m, g.Name)
		s := httpSession(t, url+"/"+g.Name, protocols[1])
		var listed []string
		for _, tl := range s.tools {
			listed = append(listed, tl.Name)
			if tl.Name == "can_do" {
				checkNames(t, g.Name, "the can_do description", tl.Description, own)
			}
		}
		slices.Sort(listed)
		if !slices.Equal(listed, own) {
			t.Errorf("/mcp/%s lists %v, want %v", g.Name, listed, own)
		}
		actions := 0
		for _, intent := range intents {
			r, _ := s.call("can_do", map[string]any{"intent": intent})
			var rep promcp.CapabilityReport
			b, _ := json.Marshal(r)
			if err := json.Unmarshal(b, &rep); err != nil {
				t.Fatal(err)
			}
			var named []string
			for _, c := range rep.Candidates {
				named = append(named, c.Capability)
			}
			for _, c := range rep.Blocked {
				named = append(named, c.Capability)
			}
			named = append(named, rep.Context.RelatedReads...)
			for k := range rep.Context.CurrentObservations {
				named = append(named, k)
			}
			for _, name := range named {
				if !slices.Contains(own, name) {
					t.Errorf("/mcp/%s can_do(%v) names %s, not one of its tools: %s", g.Name, intent, name, b)
				}
			}
			checkNames(t, g.Name, fmt.Sprintf("can_do(%v).metadata.note", intent), rep.Metadata.Note, own)
			actions += len(rep.Candidates) + len(rep.Blocked)
		}
		if strings.Contains(strings.Join(own, " "), "do_") && actions == 0 {
			t.Errorf("/mcp/%s: no intent matched any of its actions", g.Name)
		}
	}
}

// TestStdioGroup: serve --group NAME over stdio serves that group only; an
// unknown group is refused before anything opens, naming the groups.
func TestStdioGroup(t *testing.T) {
	m := manifesttest.Load(t, greenhouse)
	s := stdioSession(t, protocols[1], "--manifest", greenhouse, "--group", "zone1")
	var listed []string
	for _, tl := range s.tools {
		listed = append(listed, tl.Name)
	}
	slices.Sort(listed)
	if want := groupTools(t, m, "zone1"); !slices.Equal(listed, want) {
		t.Fatalf("serve --group zone1 lists %v, want %v", listed, want)
	}
	r, _ := s.call("can_do", map[string]any{"intent": map[string]any{"action": "do_set_fan_speed"}})
	if c, _ := r["candidates"].([]any); len(c) != 0 {
		t.Errorf("can_do for the fan on zone1 = %v, want no candidate: the fan is not in zone1", r)
	}
	_, stderr, code := runCLI(t, "serve", "--sim", "--manifest", greenhouse, "--group", "zone9")
	if code != 2 || !strings.Contains(stderr, "zone1, zone2, fan, energy") {
		t.Errorf("serve --group zone9: exit %d, %q; want exit 2 naming the groups", code, stderr)
	}
	_, stderr, code = runCLI(t, "serve", "--sim", "--manifest", greenhouse, "--group", "zone1", "--http", "127.0.0.1:0")
	if code != 2 || !strings.Contains(stderr, "/mcp/<group>") {
		t.Errorf("serve --group with --http: exit %d, %q; want exit 2", code, stderr)
	}
	for _, args := range [][]string{{"lint", "--group", "zone1", "--url", "http://127.0.0.1:1/mcp"},
		{"lint", "--manifest", greenhouse, "--group", "zone9", "--url", "http://127.0.0.1:1/mcp"},
		{"tools", "--manifest", greenhouse, "--group", "zone9"}} {
		if _, stderr, code := runCLI(t, args...); code != 2 || !strings.Contains(stderr, "--group") {
			t.Errorf("%v: exit %d, %q; want exit 2 about --group, before connecting", args, code, stderr)
		}
	}
	out, _, code := runCLI(t, "tools", "--manifest", greenhouse, "--group", "fan")
	if code != 0 || strings.Count(out, "\n") != 5 || !strings.Contains(out, "do_set_fan_speed") || strings.Contains(out, "heater") {
		t.Errorf("tools --group fan: exit %d\n%s", code, out)
	}
}

// TestLintSuggestsGroups: a manifest over the spec's limits without groups
// gets a warning with groups to declare; pasted into the manifest, they
// validate and each is within the limits.
func TestLintSuggestsGroups(t *testing.T) {
	data := readFile(t, greenhouse)
	text := string(data)
	start, end := strings.Index(text, "\ngroups:\n"), strings.Index(text, "\nsim:\n")
	if start < 0 || end < start {
		t.Fatal("the greenhouse example has no groups: key before sim:")
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "greenhouse.yml")
	os.WriteFile(file, []byte(text[:start]+text[end:]), 0o644)
	policy, _ := os.ReadFile(filepath.Join(filepath.Dir(greenhouse), "greenhouse.policy.yml"))
	os.WriteFile(filepath.Join(dir, "greenhouse.policy.yml"), policy, 0o644)

	out, _, code := runCLI(t, "lint", file)
	if code != 0 || !strings.Contains(out, "warning: the default surface /mcp is over the spec's limits per server (S004 15 tools, more than 8)") ||
		!strings.Contains(out, "      location: zone1\n      capabilities: [heater, vent]\n") {
		t.Fatalf("lint of the greenhouse without groups: exit %d\n%s", code, out)
	}
	var suggestion strings.Builder
	for _, line := range strings.Split(out[strings.Index(out, "  groups:\n"):], "\n") {
		if !strings.HasPrefix(line, "  ") {
			break // the suggestion ends with its indentation
		}
		suggestion.WriteString(line[2:] + "\n")
	}
	os.WriteFile(file, []byte(text[:start]+"\n"+suggestion.String()+text[end:]), 0o644)
	out, _, code = runCLI(t, "lint", file)
	if code != 0 || strings.Contains(out, "warning") || strings.Count(out, ": ok: group ") != 3 {
		t.Fatalf("lint with the suggested groups pasted in: exit %d\n%s", code, out)
	}
}
