package gateway_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/promcp/promcp-device/gateway"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/promcp"
)

const greenhouseManifest = "../manifests/examples/greenhouse.yml"

// TestScore: the examples of the "can_do matching" section of docs/policy.md, on
// the greenhouse's actions.
func TestScore(t *testing.T) {
	m, err := manifests.Load(greenhouseManifest)
	if err != nil {
		t.Fatal(err)
	}
	score := func(in promcp.Intent, name string) (float64, bool) {
		for _, c := range m.Capabilities {
			if c.Name == name {
				return gateway.Score(in, c, m.Gateway+"/"+c.Read.Device)
			}
		}
		t.Fatalf("no capability %s", name)
		return 0, false
	}
	for _, tc := range []struct {
		intent promcp.Intent
		// want is the score per action; a missing action is no match.
		want map[string]float64
	}{
		// The actuator named ranks above one that has the word only in
		// its tags ("ventilation"); the verb is filler.
		{promcp.Intent{Action: "open the vent"}, map[string]float64{"vent": 1, "fan_speed_setpoint": 0.5}},
		{promcp.Intent{Action: "do_set_heater"}, map[string]float64{"heater": 1}},
		{promcp.Intent{Action: "set_heater"}, map[string]float64{"heater": 1}},
		{promcp.Intent{Action: "heat"}, map[string]float64{"heater": 1}},
		{promcp.Intent{SemanticTags: []string{"cooling"}}, map[string]float64{"vent": 1, "fan_speed_setpoint": 1}},
		{promcp.Intent{Action: "cool", Location: "zone2"}, map[string]float64{"vent": 0.5, "fan_speed_setpoint": 0.5}},
		// An intent that names nothing matches nothing.
		{promcp.Intent{}, nil},
		{promcp.Intent{Action: "turn it on", Target: "the"}, nil},
		{promcp.Intent{SemanticTags: []string{" ", "-"}}, nil},
	} {
		for _, c := range m.Capabilities {
			if c.Do == nil {
				continue
			}
			got, ok := score(tc.intent, c.Name)
			want, wantOK := tc.want[c.Name]
			if ok && got < gateway.MinConfidence {
				ok = false // left out of the report
			}
			if ok != wantOK || ok && got != want {
				t.Errorf("Score(%+v, %s) = %v, %t; want %v, %t", tc.intent, c.Name, got, ok, want, wantOK)
			}
		}
	}
}

// TestCanDoConfidence: through MCP, candidates below 0.7 say they need
// confirmation and the report's metadata says why; an empty intent gets an
// empty report that says it named nothing.
func TestCanDoConfidence(t *testing.T) {
	c := newPolicyBench(t).c
	canDo := func(intent map[string]any) promcp.CapabilityReport {
		t.Helper()
		var rep promcp.CapabilityReport
		if err := callInto(t.Context(), c, "can_do", map[string]any{"intent": intent}, &rep); err != nil {
			t.Fatal(err)
		}
		if err := rep.Validate(); err != nil {
			t.Fatalf("can_do(%v): %v", intent, err)
		}
		return rep
	}

	// "dim" names nothing here: half the words of the phrase match.
	rep := canDo(map[string]any{"action": "dim the light"})
	if len(rep.Candidates) != 1 || rep.Candidates[0].Capability != "do_set_light_level" || rep.Candidates[0].Confidence != 0.5 || !rep.Candidates[0].RequiresConfirmation {
		t.Fatalf("dim the light: candidates %+v; want do_set_light_level at 0.5, requiring confirmation", rep.Candidates)
	}
	if !strings.Contains(rep.Metadata.Note, "below 0.7") {
		t.Errorf("metadata.note = %q; want it to say some candidates are below 0.7", rep.Metadata.Note)
	}
	rep = canDo(map[string]any{"action": "light level"})
	if len(rep.Candidates) != 1 || rep.Candidates[0].Confidence != 1 || rep.Candidates[0].RequiresConfirmation || rep.Metadata.Note != "" {
		t.Fatalf("light level: candidates %+v, note %q; want do_set_light_level at 1, confirmed, no note", rep.Candidates, rep.Metadata.Note)
	}
	raw, _ := json.Marshal(rep.Candidates[0])
	if strings.Contains(string(raw), "requires_confirmation") {
		t.Errorf("a confirmed candidate carries the flag: %s", raw)
	}

	rep = canDo(map[string]any{"action": "do_set_pump"})
	if len(rep.Candidates) != 1 || rep.Candidates[0].RequiresConfirmation || rep.Metadata.Note != "" {
		t.Fatalf("do_set_pump named: %+v, note %q; want one confirmed candidate and no note", rep.Candidates, rep.Metadata.Note)
	}

	for _, intent := range []map[string]any{{}, {"action": "  "}, {"action": "turn it on"}, {"value": true}} {
		rep = canDo(intent)
		if len(rep.Candidates)+len(rep.Blocked) != 0 || rep.Feasible || !strings.Contains(rep.Metadata.Note, "names nothing") {
			t.Errorf("can_do(%v) = %d candidates, %d blocked, feasible %t, note %q; want nothing, and a note that it names nothing",
				intent, len(rep.Candidates), len(rep.Blocked), rep.Feasible, rep.Metadata.Note)
		}
	}
}
