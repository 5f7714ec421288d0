package sitetest

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/promcp/promcp-device/manifests"
)

const good = `version: 1
test: t
manifest: ../greenhouse.yml
start: "2026-03-29T01:30:00"
time_zone: Europe/Amsterdam
caller: {name: ci, role: operator}
steps:
  - advance: 90s
  - call: do_set_heater
    args: {value: true, idempotency_key: "${key}"}
    as: {name: guest, role: viewer}
    expect:
      status: failed
      body: {value: {min: 1, max: 2}, reason: {pattern: "^no"}, error: {absent: true}, "candidates[0].capability": do_x}
      blocked: [do_a, do_b]
      audit: {event: refused, tool: do_set_heater}
    capture: {key: $.idempotency_key}
  - set: {device: door, on: true}
  - set: {device: s, fault: implausible, value: 85, channel: temperature}
  - call: read_vent
    record: [value, quality]
`

func TestParse(t *testing.T) {
	tt, err := Parse("site/x.yml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	loc, _ := time.LoadLocation("Europe/Amsterdam")
	if !tt.Start.Equal(time.Date(2026, 3, 29, 1, 30, 0, 0, loc)) || tt.Manifest != "greenhouse.yml" || tt.Caller != (Caller{"ci", "operator"}) {
		t.Errorf("start %v manifest %q caller %v", tt.Start, tt.Manifest, tt.Caller)
	}
	if len(tt.Steps) != 5 || tt.Steps[0].Advance != 90*time.Second {
		t.Fatalf("steps %+v", tt.Steps)
	}
	call := tt.Steps[1]
	if call.As == nil || call.As.Role != "viewer" || call.Capture["key"] != "$.idempotency_key" || call.Args["idempotency_key"] != "${key}" {
		t.Errorf("call %+v", call)
	}
	e := call.Expect
	if len(e.Body) != 5 || len(e.Blocked) != 2 || len(e.Audit) != 1 {
		t.Fatalf("expect %+v", e)
	}
	checks := map[string]Matcher{}
	for _, fc := range e.Body {
		checks[fc.Path] = fc.M
	}
	if m := checks["value"]; m.Min == nil || *m.Min != 1 || *m.Max != 2 || m.Match(1.5, true) != "" || m.Match(3.0, true) == "" {
		t.Errorf("range %+v", m)
	}
	if m := checks["error"]; !m.Absent || m.Match(nil, false) != "" || m.Match(nil, true) == "" {
		t.Errorf("absent %+v", m)
	}
	if m := checks["status"]; m.Match("failed", true) != "" || m.Match("success", true) != "differs" {
		t.Errorf("equals %+v", m)
	}
	if s := tt.Steps[3].Set; s.Fault == nil || s.Fault.Kind != manifests.FaultImplausible || *s.Fault.Value != 85 {
		t.Errorf("fault %+v", s)
	}
	if r := tt.Steps[4]; len(r.Record) != 2 || r.recordFrom != 21 || r.recordTo != 21 {
		t.Errorf("record %+v", r)
	}
}

// TestParseDecisions: approve: and deny: steps say who decides and which
// request; approvers: defaults to the console's default approvers.
func TestParseDecisions(t *testing.T) {
	tt, err := Parse("x.yml", []byte(`version: 1
test: t
manifest: m
steps:
  - approve: {as: {name: sue, role: supervisor}}
  - deny: {as: {name: al, role: admin}, tool: do_set_fan_speed, idempotency_key: k1}
`))
	if err != nil {
		t.Fatal(err)
	}
	a, d := tt.Steps[0].Decide, tt.Steps[1].Decide
	if a == nil || !a.Approve || a.As != (Caller{"sue", "supervisor"}) || a.Tool != "" {
		t.Errorf("approve step: %+v", a)
	}
	if d == nil || d.Approve || d.As != (Caller{"al", "admin"}) || d.Tool != "do_set_fan_speed" || d.Key != "k1" {
		t.Errorf("deny step: %+v", d)
	}
	if !tt.Decides() || strings.Join(tt.Approvers, ",") != "supervisor,admin" {
		t.Errorf("Decides %t, approvers %v; want true, supervisor and admin", tt.Decides(), tt.Approvers)
	}
}

func TestParseErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"version: 2\ntest: t\nmanifest: m\nsteps: [{advance: 1s}]\n", "x.yml:1:10: version: unknown value: 2 (want 1)"},
		{"version: 1\ntest: t\nsteps: [{advance: 1s}]\n", "x.yml:1:1: manifest: missing"},
		{"version: 1\ntest: t\nmanifest: m\nsteps:\n  - {advance: 1s, call: read_x}\n", "x.yml:5:5: steps[0]: missing: a step does exactly one of advance, advance_to, call, set, approve or deny (got 2)"},
		{"version: 1\ntest: t\nmanifest: m\nsteps:\n  - approve: {tool: do_x}\n", "x.yml:5:14: steps[0].approve.as: missing"},
		{"version: 1\ntest: t\nmanifest: m\nsteps:\n  - {approve: {as: {name: a}}, deny: {as: {name: a}}}\n", "a step does exactly one of advance, advance_to, call, set, approve or deny (got 2)"},
		{"version: 1\ntest: t\nmanifest: m\nsteps:\n  - deny: {as: {name: a}, value: 3}\n", "steps[0].deny.value: unknown field"},
		{"version: 1\ntest: t\nmanifest: m\nsteps:\n  - call: read_x\n    expect: {value: {min: low}}\n", "x.yml:6:27: steps[0].expect.value.min: wrong type: want a number"},
		{"version: 1\ntest: t\nmanifest: m\nsteps:\n  - call: read_x\n    expect: {body: {reason: {pattern: \"(\"}}}\n", "steps[0].expect.body.reason.pattern: wrong type"},
		{"version: 1\ntest: t\nmanifest: m\ntime_zone: Mars/Olympus\nsteps: [{advance: 1s}]\n", "x.yml:4:12: time_zone: unknown value"},
		{"version: 1\ntest: t\nmanifest: m\nsteps:\n  - set: {device: d, on: true, pulse_rate: 2}\n", "steps[0].set: missing: set one of"},
		{"version: 1\ntest: t\nmanifest: m\nsteps:\n  - call: x\n    capture: {k: \"a[b]\"}\n", "steps[0].capture.k: wrong type: path \"a[b]\""},
		{"version: 1\ntest: t\nmanifest: m\nsteps:\n  - call: x\n    record: [value]\n    expect: {value: 1}\n", "steps[0].record: not allowed"},
		{"version: 1\ntest: t\nmanifest: m\nsteps:\n  - advance: 1s\n    args: {}\n", "steps[0].args: not allowed: only on a call step"},
		{"a: [\n", "x.yml:"},
		{"version: 1\ntest: t\nmanifest: m\nsteps:\n  - set: {zone: z, device: d, temperature: 3}\n", "x.yml:5:10: steps[0].set: missing: device or zone"},
		{"version: 1\ntest: t\nmanifest: m\nsteps:\n  - advance_to: tomorrow\n", "x.yml:5:17: steps[0].advance_to: wrong type: \"tomorrow\" (want an RFC 3339 time"},
		{"version: 1\ntest: &a t\nmanifest: *a\nsteps: [{advance: 1s}]\n", "manifest: not allowed: aliases"},
	} {
		_, err := Parse("x.yml", []byte(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q:\n got %v\nwant %s", c.in, err, c.want)
			continue
		}
		var pe *manifests.Error
		if !errors.As(err, &pe) || pe.Pos.File != "x.yml" || pe.Pos.Line < 1 {
			t.Errorf("%q: not a positioned error: %#v", c.in, err)
		}
	}
}

func TestLookupAndExpand(t *testing.T) {
	body := map[string]any{"a": map[string]any{"b": []any{1.0, map[string]any{"c": "x"}}}}
	if v, ok := lookup(body, "$.a.b[1].c"); !ok || v != "x" {
		t.Errorf("lookup: %v %v", v, ok)
	}
	if _, ok := lookup(body, "a.b[2]"); ok {
		t.Error("lookup past the end")
	}
	var missing []string
	got := expand(map[string]any{"k": "${key}", "s": "id-${n}", "u": "${nope}"}, map[string]any{"key": 5.0, "n": "7"}, &missing)
	m := got.(map[string]any)
	if m["k"] != 5.0 || m["s"] != "id-7" || len(missing) != 1 || missing[0] != "nope" {
		t.Errorf("expand: %v missing %v", got, missing)
	}
}

// FuzzParse: the parser never panics, and every error it returns is
// positioned in the file.
func FuzzParse(f *testing.F) {
	f.Add([]byte(good))
	f.Add([]byte("version: 1\nsteps: [{set: {device: x, fault: noise, amplitude: 2}}]\n"))
	f.Add([]byte("steps:\n  - call: x\n    expect: {body: {\"a[0]\": {equals: {min: 1}}}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := Parse("f.yml", data)
		if err == nil {
			return
		}
		var pe *manifests.Error
		if !errors.As(err, &pe) || pe.Pos.File != "f.yml" {
			t.Fatalf("not a positioned error: %v", err)
		}
	})
}
