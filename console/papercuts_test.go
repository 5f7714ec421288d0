package console

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/promcp"
)

// The machine's times in a policy's reason read as a person's: a 24-hour
// clock with the zone, durations in words, and the "(for …)" that repeated
// the reason's own "… more" is gone.
func TestReasonsInHumanTime(t *testing.T) {
	at := time.Date(2026, 12, 1, 17, 49, 41, 0, time.UTC)
	reason := "cooldown of 5m0s after the last actuation at 2026-12-01T17:49:41Z is active for 4m41s more"
	got := humanize(reason)
	want := "cooldown of 5 min after the last actuation at " + clock(at) + " is active for 4 min 41 s more"
	if got != want {
		t.Errorf("humanize = %q, want %q", got, want)
	}
	if strings.Contains(got, "2026-12-01T") || strings.Contains(got, "4m41s") {
		t.Errorf("humanize left a raw time: %q", got)
	}
	if c := clock(at); !strings.HasPrefix(c, at.Local().Format("15:04:05")) || !strings.Contains(c, at.Local().Format("MST")) {
		t.Errorf("clock = %q, want a 24-hour clock with the zone", c)
	}
	until := at.Add(281 * time.Second)
	lines := states(promcp.CapabilityReport{Blocked: []promcp.Blocked{{Permission: promcp.CooldownActive, Reason: reason, ValidUntil: &until}}}, at)
	if len(lines) != 1 || lines[0].Remaining != "" || lines[0].Reason != want {
		t.Errorf("a cooldown's state line = %+v, want the reason in human time once, without a repeated (for …)", lines)
	}
	lines = states(promcp.CapabilityReport{Blocked: []promcp.Blocked{{Permission: promcp.PolicyDenied, Reason: "outside its window", ValidUntil: &until}}}, at)
	if len(lines) != 1 || lines[0].Remaining != "until "+clock(until)+", in 4 min 41 s" {
		t.Errorf("a window's state line = %+v, want until a clock time, in words", lines)
	}
}

// Units are shown with the values: the policy's approval limit, and a
// waiting request's value.
func TestUnitsInRulesAndRequests(t *testing.T) {
	above := 45.0
	m := &manifests.Manifest{Capabilities: []manifests.Capability{{Name: "fan_speed_setpoint", Type: manifests.TypeNumber, Unit: "Hz",
		Location: "zone1", Do: &manifests.Action{Tool: "do_set_fan_speed"}}}}
	pol := &manifests.Policy{Actions: map[string]*manifests.ActionPolicy{"do_set_fan_speed": {Cooldown: 5 * time.Minute,
		Approval: &manifests.Approval{Above: &above}}}}
	c := &Console{cfg: Config{Manifest: m, Policy: pol}}
	if got := c.rules("do_set_fan_speed"); !strings.Contains(got, "a person approves above 45 Hz") || !strings.Contains(got, "cooldown 5 min") {
		t.Errorf("rules = %q, want the approval limit in Hz and the cooldown in words", got)
	}
}

// A fan card keeps its current value while can_do answers with a block (a
// cooldown) that carries no current state: the value comes from its read.
func TestCurrentValueKeptDuringCooldown(t *testing.T) {
	m := &manifests.Manifest{Capabilities: []manifests.Capability{{Name: "fan_speed_setpoint", Type: manifests.TypeNumber, Unit: "Hz",
		Do: &manifests.Action{Tool: "do_set_fan_speed"}}}}
	c := &Console{cfg: Config{Manifest: m}}
	s := &snapshot{Values: []valueRow{{Tool: "read_fan_speed_setpoint", Capability: "fan_speed_setpoint", Value: "30", Unit: "Hz"}},
		Actuators: []actuatorRow{{Tool: "do_set_fan_speed", States: []stateLine{{Permission: "cooldown_active"}}}}}
	c.keepCurrent(s)
	if got := s.Actuators[0].Current; got != "30 Hz" {
		t.Errorf("the fan's current value during a cooldown = %q, want 30 Hz", got)
	}
}

// Values are grouped by location, in the manifest's order, those without
// one last.
func TestValuesByLocation(t *testing.T) {
	s := &snapshot{Values: []valueRow{{Tool: "a", Location: "zone1"}, {Tool: "b"}, {Tool: "c", Location: "tank"}, {Tool: "d", Location: "zone1"}}}
	var got []string
	for _, g := range s.ByLocation() {
		var tools []string
		for _, r := range g.Rows {
			tools = append(tools, r.Tool)
		}
		got = append(got, g.Location+":"+strings.Join(tools, ","))
	}
	if strings.Join(got, " ") != "zone1:a,d tank:c :b" {
		t.Errorf("groups = %v, want zone1:a,d tank:c :b", got)
	}
}

func TestParseValue(t *testing.T) {
	b := &manifests.Capability{Type: manifests.TypeBoolean}
	if v, err := parseValue(b, "on"); err != nil || v != true {
		t.Errorf("on = %v %v", v, err)
	}
	if _, err := parseValue(b, "maybe"); err == nil {
		t.Error("a boolean took maybe")
	}
	if v, err := parseValue(&manifests.Capability{Type: manifests.TypeNumber}, "42,5"); err != nil || v != 42.5 {
		t.Errorf("42,5 = %v %v", v, err)
	}
	if _, err := parseValue(nil, ""); err == nil {
		t.Error("an empty value was taken")
	}
}

// The CSV holds the same buckets the chart draws, with their quality.
func TestCSVOfTheChartQuery(t *testing.T) {
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	d := chartData{Capability: "site_power", Unit: "W", Range: "1h", Agg: "mean", Buckets: []chartBucket{
		{Start: start, Value: 150.0, Quality: "good", Samples: 30},
		{Start: start.Add(time.Minute), Value: 500075.0, Quality: "degraded", Samples: 30, Counts: map[string]int{"good": 15, "degraded": 15}},
	}}
	w := httptest.NewRecorder()
	writeCSV(w, d)
	want := "start,capability,mean,unit,quality,samples,good,stale,degraded,error\n" +
		"2026-12-01T10:00:00Z,site_power,150,W,good,30,30,0,0,0\n" +
		"2026-12-01T10:01:00Z,site_power,500075,W,degraded,30,15,0,15,0\n"
	if got := w.Body.String(); got != want {
		t.Errorf("CSV =\n%s\nwant\n%s", got, want)
	}
	if cd := w.Header().Get("Content-Disposition"); !strings.Contains(cd, "site_power-1h.csv") {
		t.Errorf("Content-Disposition = %q", cd)
	}
}
