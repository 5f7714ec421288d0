package lint_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/promcp/promcp-device/lint"
	"github.com/promcp/promcp-device/promcp"
)

// tool is a tool definition as JSON.
type tool = map[string]any

func schema(t *testing.T, k promcp.Kind) map[string]any {
	t.Helper()
	m, err := promcp.SchemaMap(k)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// goodRead, goodDo and goodCanDo break no rule.
func goodRead(t *testing.T, name string) tool {
	return tool{
		"name": name, "description": "Fan speed setpoint on the drive; the counter was reset at boot. Returns value, unit, timestamp, quality.",
		"inputSchema":  map[string]any{"type": "object", "properties": map[string]any{}},
		"outputSchema": schema(t, promcp.KindRead),
		"annotations":  map[string]any{"readOnlyHint": true, "idempotentHint": true, "destructiveHint": false},
	}
}

func goodDo(t *testing.T, name string) tool {
	return tool{
		"name": name, "description": "Switch the pump on (true) or off (false). Compensable: call again with the previous value.",
		"inputSchema": map[string]any{"type": "object", "properties": map[string]any{
			"value": map[string]any{"type": "boolean"}, "idempotency_key": map[string]any{"type": "string"}}},
		"outputSchema": schema(t, promcp.KindDo),
		"annotations":  map[string]any{"readOnlyHint": false, "destructiveHint": false, "idempotentHint": true},
	}
}

func goodCanDo(t *testing.T) tool {
	return tool{
		"name": "can_do", "description": "Which actions match an intent and whether each may run now.",
		"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"intent": map[string]any{
			"type": "object", "properties": map[string]any{"semantic_tags": map[string]any{"type": "array"}}}}},
		"outputSchema": schema(t, promcp.KindCanDo),
		"annotations":  map[string]any{"readOnlyHint": true, "idempotentHint": true},
	}
}

// with returns a copy of tl with path (keys separated by ".") set to v, or
// deleted when v is nil.
func with(tl tool, path string, v any) tool {
	out := deepCopy(tl).(map[string]any)
	keys := strings.Split(path, ".")
	m := out
	for _, k := range keys[:len(keys)-1] {
		m = m[k].(map[string]any)
	}
	if v == nil {
		delete(m, keys[len(keys)-1])
	} else {
		m[keys[len(keys)-1]] = v
	}
	return out
}

func deepCopy(v any) any {
	b, _ := json.Marshal(v)
	var out any
	json.Unmarshal(b, &out)
	return out
}

// findings lints tools and returns "tool:code" per finding, sorted.
func findings(t *testing.T, tools []tool) []string {
	t.Helper()
	b, _ := json.Marshal(tools)
	ts, err := lint.ParseTools(b)
	if err != nil {
		t.Fatal(err)
	}
	return codes(lint.Check("test", ts))
}

func codes(r *lint.Report) []string {
	var out []string
	for _, f := range r.All() {
		out = append(out, f.Tool+":"+f.Code)
	}
	slices.Sort(out)
	return out
}

// TestRules breaks each static rule once, on a surface that is otherwise
// clean (a read, a do and can_do), and checks that exactly the expected
// findings fire: the rule where it should, nothing anywhere else.
func TestRules(t *testing.T) {
	read, do, canDo := goodRead(t, "read_level"), goodDo(t, "do_set_pump"), goodCanDo(t)
	many := func(n int, mk func(i int) tool) []tool {
		var out []tool
		for i := range n {
			out = append(out, mk(i))
		}
		return out
	}
	cases := []struct {
		name string
		// tools replace the base tool of the same name, or are added.
		tools []tool
		// drop removes base tools by name.
		drop []string
		want []string
	}{
		{name: "clean", want: nil},
		{name: "N001", tools: []tool{with(read, "name", "")}, want: []string{"(unnamed):N001"}},
		{name: "N002", tools: []tool{with(read, "name", "read_Level2")}, want: []string{"read_Level2:N002"}},
		{name: "N003", tools: []tool{with(read, "name", "get_level")}, want: []string{"get_level:N003"}},
		{name: "N004", tools: []tool{with(read, "name", "read_")}, want: []string{"read_:N004"}},
		{name: "N005", tools: []tool{with(do, "name", "do_")}, want: []string{"do_:N005"}},
		{name: "N006", tools: []tool{with(read, "name", "read_"+strings.Repeat("x", 60))}, want: []string{"read_" + strings.Repeat("x", 60) + ":N006"}},
		{name: "N007", tools: []tool{with(read, "name", "read_data")}, want: []string{"read_data:N007"}},
		{name: "N008", tools: []tool{with(do, "name", "start_")}, want: []string{"start_:N008"}},
		// proMCP v0.3: start_* is named and typed as a do_*, its
		// read_status_* as a read_*.
		{name: "start and read_status clean", tools: []tool{with(do, "name", "start_irrigation"), with(read, "name", "read_status_irrigation")}, want: nil},
		{name: "start answers as a do_*", tools: []tool{with(with(do, "name", "start_irrigation"), "outputSchema.properties.compensable", nil),
			with(read, "name", "read_status_irrigation")}, want: []string{"start_irrigation:R004", "start_irrigation:R006"}},
		{name: "start takes an idempotency_key", tools: []tool{with(with(do, "name", "start_irrigation"), "inputSchema.properties.idempotency_key", nil),
			with(read, "name", "read_status_irrigation")}, want: []string{"start_irrigation:I003"}},
		{name: "read_status answers as a read_*", tools: []tool{with(do, "name", "start_irrigation"),
			with(with(read, "name", "read_status_irrigation"), "outputSchema.properties.quality", nil)}, want: []string{"read_status_irrigation:R001"}},
		{name: "S006", tools: []tool{with(do, "name", "start_irrigation")}, want: []string{"server:S006"}},
		{name: "D001", tools: []tool{with(read, "description", nil)}, want: []string{"read_level:D001"}},
		{name: "D002", tools: []tool{with(read, "description", "Tank level.")}, want: []string{"read_level:D002"}},
		{name: "D003", tools: []tool{with(read, "description", "Tank level; sends a reset to the gauge first.")}, want: []string{"read_level:D003"}},
		{name: "I001", tools: []tool{with(canDo, "inputSchema.properties.intent", nil)}, want: []string{"can_do:I001"}},
		{name: "I002", tools: []tool{with(canDo, "inputSchema.properties.intent.properties.semantic_tags", nil)}, want: nil},
		{name: "I002 declared fields", tools: []tool{with(with(canDo, "inputSchema.properties.intent.properties.semantic_tags", nil),
			"inputSchema.properties.intent.properties.action", map[string]any{"type": "string"})}, want: []string{"can_do:I002"}},
		{name: "I003", tools: []tool{with(do, "inputSchema.properties.idempotency_key", nil)}, want: []string{"do_set_pump:I003"}},
		{name: "R000", tools: []tool{with(read, "outputSchema", nil)}, want: []string{"read_level:M002", "read_level:R000"}},
		{name: "responseSchema read like outputSchema", tools: []tool{with(with(read, "responseSchema", read["outputSchema"]), "outputSchema", nil)}, want: []string{"read_level:M002"}},
		{name: "R001", tools: []tool{with(read, "outputSchema.properties.timestamp", nil)}, want: []string{"read_level:R001"}},
		{name: "R002", tools: []tool{with(read, "outputSchema.properties.quality.enum", []any{"good", "stale", "degraded", "error", "fine"})}, want: []string{"read_level:R002"}},
		{name: "R003", tools: []tool{with(read, "outputSchema.properties.quality.enum", []any{"good", "error"})}, want: []string{"read_level:R003"}},
		{name: "R004 R006", tools: []tool{with(do, "outputSchema.properties.compensable", nil)}, want: []string{"do_set_pump:R004", "do_set_pump:R006"}},
		{name: "R004", tools: []tool{with(do, "outputSchema.properties.status", nil)}, want: []string{"do_set_pump:R004"}},
		{name: "R005", tools: []tool{with(do, "outputSchema.properties.status.enum", []any{"success", "partial", "failed", "queued"})}, want: []string{"do_set_pump:R005"}},
		{name: "R004 R007", tools: []tool{with(do, "outputSchema.properties.idempotency_key", nil)}, want: []string{"do_set_pump:R004", "do_set_pump:R007"}},
		{name: "R008", tools: []tool{with(do, "outputSchema.properties.side_effects", nil)}, want: []string{"do_set_pump:R008"}},
		{name: "R009", tools: []tool{with(canDo, "outputSchema.properties.query_id", nil)}, want: []string{"can_do:R009"}},
		{name: "R010", tools: []tool{with(canDo, "outputSchema.properties.candidates.items.properties.valid_until", nil)}, want: []string{"can_do:R010"}},
		{name: "R012", tools: []tool{with(canDo, "outputSchema.properties.candidates.items.properties.permission.enum", []any{"allowed", "maybe"})}, want: []string{"can_do:R012"}},
		{name: "R013", tools: []tool{with(canDo, "outputSchema.properties.blocked.items.properties.reason", nil)}, want: []string{"can_do:R013"}},
		{name: "SE001", tools: []tool{with(read, "outputSchema.properties.side_effects", map[string]any{"type": "array"})}, want: []string{"read_level:SE001"}},
		{name: "S001", drop: []string{"can_do"}, want: []string{"server:S001"}},
		{name: "S002 S003", tools: []tool{canDo}, want: []string{"server:S002", "server:S003"}},
		{name: "S003", tools: []tool{read}, want: []string{"server:S003"}},
		{name: "S004", tools: many(6, func(i int) tool { return goodRead(t, fmt.Sprintf("read_level_%d", i)) }), want: []string{"server:S004"}},
		{name: "S005", tools: many(5, func(i int) tool { return goodDo(t, fmt.Sprintf("do_set_valve_%d", i)) }), want: []string{"server:S005"}},
		{name: "M001", tools: []tool{with(read, "inputSchema", nil)}, want: []string{"read_level:M001"}},
		{name: "M001 not an object", tools: []tool{with(read, "inputSchema.type", "array")}, want: []string{"read_level:M001"}},
		{name: "M002", tools: []tool{with(with(do, "responseSchema", do["outputSchema"]), "outputSchema", nil)}, want: []string{"do_set_pump:M002"}},
		{name: "M003", tools: []tool{with(read, "outputSchema.properties.value", map[string]any{"type": "decimal"})}, want: []string{"read_level:M003"}},
		{name: "M004", tools: []tool{with(do, "inputSchema.properties.idempotency_key.type", "integer")}, want: []string{"do_set_pump:M004"}},
		{name: "M005", tools: []tool{with(read, "annotations.readOnlyHint", nil)}, want: []string{"read_level:M005"}},
		{name: "M006", tools: []tool{with(canDo, "annotations.idempotentHint", false)}, want: []string{"can_do:M006"}},
		{name: "M007", tools: []tool{with(do, "annotations.readOnlyHint", true)}, want: []string{"do_set_pump:M007"}},
		{name: "M008", tools: []tool{with(do, "description", "Switch the pump on (true) or off (false); it is not compensable.")}, want: []string{"do_set_pump:M008"}},
		{name: "M008 compensable by schema", tools: []tool{with(with(do, "description", "Switch the pump on (true) or off (false)."),
			"outputSchema.properties.compensable", map[string]any{"const": true})}, want: nil},
		{name: "do destructive by default", tools: []tool{with(with(do, "description", "Switch the pump on (true) or off (false)."), "annotations", nil)}, want: nil},
	}
	fired := map[string]bool{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base := []tool{read, do, canDo}
			surface := slices.DeleteFunc(slices.Clone(base), func(b tool) bool { return slices.Contains(tc.drop, b["name"].(string)) })
			for _, x := range tc.tools {
				i := slices.IndexFunc(surface, func(b tool) bool { return b["name"] == x["name"] })
				replace := i >= 0 && !strings.HasPrefix(tc.name, "S00")
				if replace {
					surface[i] = x
				} else if i2 := slices.IndexFunc(surface, func(b tool) bool { return b["name"] == kindBase(x) }); i2 >= 0 && !strings.HasPrefix(tc.name, "S00") {
					surface[i2] = x
				} else {
					surface = append(surface, x)
				}
			}
			got := findings(t, surface)
			if !slices.Equal(got, tc.want) {
				t.Errorf("findings %v, want %v", got, tc.want)
			}
			for _, f := range got {
				fired[f[strings.Index(f, ":")+1:]] = true
			}
		})
	}
	for _, r := range lint.Rules() {
		if strings.HasPrefix(r.Code, "C") || strings.HasPrefix(r.Code, "X") {
			continue // answers and drift: TestFixtureServer, TestDrift
		}
		if !fired[r.Code] {
			t.Errorf("no case breaks %s (%s)", r.Code, r.Summary)
		}
	}
}

// kindBase is the base tool a broken one replaces: the one of its kind.
func kindBase(x tool) string {
	name, _ := x["name"].(string)
	switch {
	case name == "can_do":
		return "can_do"
	case strings.HasPrefix(name, "do_") || strings.HasPrefix(name, "start_"):
		return "do_set_pump"
	}
	return "read_level"
}

// TestD003Words: mutation words match as words, and not as states.
func TestD003Words(t *testing.T) {
	for desc, want := range map[string]bool{
		"Circulation fan speed setpoint on the VFD.":             false,
		"Energy used since the meter was reset.":                 false,
		"Asset tag of the unit, as printed on its label.":        false,
		"Reads the counter, then resets it to zero.":             true,
		"Level of the tank. Use this to set the pump's target.":  true,
		"Last value the controller wrote; it is updated hourly.": false,
		"Temperature; triggers a new conversion on each call.":   true,
	} {
		tl := goodRead(t, "read_level")
		tl["description"] = desc
		got := slices.Contains(findings(t, []tool{tl, goodCanDo(t)}), "read_level:D003")
		if got != want {
			t.Errorf("D003 on %q: %t, want %t", desc, got, want)
		}
	}
}

// TestRulesDocumented: every rule has a code, a severity and a summary,
// and the codes are unique.
func TestRulesDocumented(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range lint.Rules() {
		if r.Code == "" || r.Summary == "" || !slices.Contains([]lint.Severity{lint.Error, lint.Warning, lint.Info}, r.Severity) || seen[r.Code] {
			t.Errorf("rule %+v", r)
		}
		seen[r.Code] = true
	}
	want := []string{"D001", "D002", "D003", "I001", "I002", "I003", "N001", "N002", "N003", "N004", "N005", "N006", "N007",
		"R000", "R001", "R002", "R003", "R004", "R005", "R006", "R007", "R008", "R009", "R010", "R012", "R013",
		"S001", "S002", "S003", "S004", "S005", "SE001"}
	for _, c := range want {
		if !seen[c] {
			t.Errorf("reference rule %s missing", c)
		}
	}
}

func TestParseTools(t *testing.T) {
	for in, want := range map[string]string{
		`[{"name": "can_do"}]`:              "",
		`{"tools": [{"name": "can_do"}]}`:   "",
		`{"tool": []}`:                      `"tools" array`,
		`[]`:                                "no tools",
		`"x"`:                               "want a JSON array",
		`[{"name": 5}]`:                     "tools[0]",
		`{"tools": [{"name": "a"}, 3]}`:     "tools[1]",
		`[{"name": "a", "annotations": 1}]`: "tools[0]",
	} {
		_, err := lint.ParseTools([]byte(in))
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("ParseTools(%s) = %v, want %q", in, err, want)
		}
	}
}

// TestDrift: the served surface against a manifest's: a tool served but
// not declared, one declared but not served, and one served twice each
// fail the gate, under their own codes.
func TestDrift(t *testing.T) {
	expected := []string{"can_do", "do_set_pump", "read_level"}
	for _, tc := range []struct {
		name  string
		tools []tool
		want  []string
	}{
		{"same", []tool{goodRead(t, "read_level"), goodDo(t, "do_set_pump"), goodCanDo(t)}, nil},
		{"extra tool", []tool{goodRead(t, "read_level"), goodRead(t, "read_debug"), goodDo(t, "do_set_pump"), goodCanDo(t)}, []string{"server:X002"}},
		{"missing capability", []tool{goodRead(t, "read_level"), goodCanDo(t)}, []string{"server:X001"}},
		{"served twice", []tool{goodRead(t, "read_level"), goodDo(t, "do_set_pump"), goodDo(t, "do_set_pump"), goodCanDo(t)}, []string{"server:S003"}},
	} {
		b, _ := json.Marshal(tc.tools)
		ts, err := lint.ParseTools(b)
		if err != nil {
			t.Fatal(err)
		}
		r := lint.Check("test", ts)
		d := lint.Drift(r, expected, ts)
		got := codes(r)
		if !slices.Equal(got, tc.want) || d.OK() != (tc.want == nil) || r.Pass(false) != (tc.want == nil) {
			t.Errorf("%s: findings %v (drift ok %t), want %v", tc.name, got, d.OK(), tc.want)
		}
	}
}
