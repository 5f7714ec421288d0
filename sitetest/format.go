// Package sitetest runs site tests: scripted agent sessions against a
// manifest on the simulator, on a driven clock, with expectations on every
// answer. A site test is a YAML file next to the manifest it tests:
//
//	version: 1
//	test: heater_interlock
//	manifest: ../greenhouse.yml       # relative to this file
//	policy: ../greenhouse.policy.yml  # optional: default the one the manifest names
//	scenario: ../greenhouse-faults.yml  # optional: a fault scenario played from the start
//	start: "2026-11-30T12:00:00"      # the simulator's start, in time_zone
//	time_zone: Europe/Berlin          # default UTC
//	caller: {name: ci, role: operator}  # who calls, unless a step says otherwise
//	steps:
//	  - call: do_set_vent
//	    args: {value: true}
//	    expect: {status: success}
//	  - call: can_do
//	    args: {intent: {action: do_set_heater, value: true}}
//	    expect: {blocked: do_set_heater}
//	  - advance: 10m
//	  - set: {device: door_switch, on: false}
//	  - approve: {as: {name: sue, role: supervisor}}  # the newest waiting request
//
// A step does one thing: advance the clock (by a duration, or to an
// instant such as a captured valid_until), call a tool, set something
// in the simulated world (a GPIO input, an ADC input's volts, a pulse
// rate, an MQTT device's value or presence, a fault), or approve or deny
// a do_* call waiting for a person's approval, as a person does in the
// operator console (serve --console): approve: or deny: {as: {name, role},
// tool, idempotency_key}, tool and key picking the request (default the
// newest waiting one). The deciding role must be one of the test's
// approvers: (default supervisor and admin, as serve's
// --console-approvers), and nobody decides their own request. A call step may
// expect things of the answer, capture values from it for later calls
// (${name}), and, with record, have `promcp-device test --update` write
// what came back into the file as its expectation.
package sitetest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/goccy/go-yaml/ast"

	"github.com/promcp/promcp-device/manifests"
)

// Test is one parsed site test.
type Test struct {
	File        string // the path it was read from
	Name        string
	Description string
	// Manifest, Policy and Scenario are paths relative to the working
	// directory (resolved against File's directory); Policy and Scenario
	// may be "".
	Manifest, Policy, Scenario string
	Start                      time.Time
	Caller                     Caller
	// Approvers are the roles that may approve or deny in an approve or
	// deny step; DefaultApprovers when the test names none.
	Approvers []string
	Steps     []Step
	// Loaded is the manifest at Manifest, checked.
	Loaded *manifests.Manifest
	// Faults is the scenario at Scenario, checked against Loaded; nil
	// without one.
	Faults *manifests.Scenario
	data   []byte
	// manifestPos and scenarioPos are where the file names them.
	manifestPos, scenarioPos manifests.Position
}

// Caller is who calls: a name and a role of the policy.
type Caller struct{ Name, Role string }

// Step is one step; exactly one of Advance, Call and Set is given.
type Step struct {
	Pos     manifests.Position
	Name    string
	Advance time.Duration
	// AdvanceTo moves the clock to an instant: RFC 3339, or ${name} of a
	// captured one (a valid_until).
	AdvanceTo string
	Call      string
	Args      map[string]any
	As        *Caller
	Expect    *Expect
	Capture   map[string]string // capture name → path in the answer
	Record    []string          // paths whose observed values --update writes
	Set       *Set
	// Decide approves or denies a waiting request (approve:, deny:).
	Decide *Decision
	// record is where the record key and its value are in the file.
	recordFrom, recordTo int
}

// Decision is an approve or deny step: a person (As) decides the newest
// waiting request, of Tool and with Key when given.
type Decision struct {
	Approve bool
	As      Caller
	Tool    string
	Key     string
}

// DefaultApprovers are the roles that approve when a test names none: the
// default of serve --console-approvers.
var DefaultApprovers = []string{"supervisor", "admin"}

// Expect is what a call's answer must show.
type Expect struct {
	// Body maps a path ("value", "error.code", "candidates[0].permission")
	// to what it must hold.
	Body       []FieldCheck
	Candidates []string // can_do: these actions are among the candidates
	Blocked    []string // can_do: these actions are blocked
	NotListed  []string // can_do: neither candidate nor blocked
	IsError    *bool    // the MCP result's isError
	Audit      []map[string]any
}

// FieldCheck is one path's expectation.
type FieldCheck struct {
	Path string
	M    Matcher
}

// Set changes the simulated world.
type Set struct {
	Device string
	On     *bool          // a gpio_in line's logical level
	Input  *int           // an ADC input (with Volts)
	Volts  *float64       //
	Pulse  *float64       // a pulse counter's rate, Hz
	Online *bool          // an MQTT device's presence
	Values map[string]any // an MQTT device's channels
	Fault  *manifests.Fault
	Clear  bool // end the fault injected on Device
	// Zone names a simulated zone (instead of Device): its Temperature or
	// the Outside temperature it drifts toward, °C.
	Zone                 string
	Temperature, Outside *float64
}

var (
	testKeys   = []string{"version", "test", "description", "manifest", "policy", "scenario", "start", "time_zone", "caller", "approvers", "steps"}
	stepKeys   = []string{"name", "advance", "advance_to", "call", "args", "as", "expect", "capture", "record", "set", "approve", "deny"}
	callerKeys = []string{"name", "role"}
	expectKeys = []string{"body", "quality", "permission", "status", "value", "candidate", "blocked", "not_listed", "is_error", "audit"}
	setKeys    = []string{"device", "zone", "temperature", "outside", "on", "input", "volts", "pulse_rate", "online", "values", "fault", "channel", "value", "amplitude", "delay", "clear_fault"}
)

// DefaultStart is the simulator's start when a test gives none.
var DefaultStart = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// Load reads the site test at path and the manifest (and scenario) it
// names. Errors say file:line:col field: what.
func Load(path string) (*Test, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load site test: %w", err)
	}
	t, err := Parse(path, data)
	if err != nil {
		return nil, err
	}
	if err := t.loadFiles(); err != nil {
		return nil, err
	}
	if err := t.checkDevices(); err != nil {
		return nil, err
	}
	return t, nil
}

// Parse decodes a site test held in data (file names it in errors),
// without reading the files it names. It returns every problem found,
// joined, each a *manifests.Error; it never panics.
func Parse(file string, data []byte) (*Test, error) {
	d := &dec{file: file}
	t := &Test{File: file, data: data, Start: DefaultStart, Caller: Caller{Name: "site-test", Role: "operator"}}
	if root := d.parseYAML(data); root != nil {
		d.test(t, root)
	}
	if len(d.errs) > 0 {
		return nil, joinErrs(d.errs)
	}
	return t, nil
}

func (d *dec) test(t *Test, root ast.Node) {
	f := d.fields(root, "", testKeys...)
	if f == nil {
		if root != nil && len(d.errs) == 0 {
			d.add(root, "", manifests.ErrType, "want a mapping with version, test, manifest and steps")
		}
		return
	}
	if v, ok := d.number(f["version"], "version"); ok && v != 1 {
		d.add(f["version"], "version", manifests.ErrUnknownValue, "%g (want 1)", v)
	}
	d.required(f, root, "", "version", "test", "manifest", "steps")
	t.Name, _ = d.str(f["test"], "test")
	t.Description, _ = d.str(f["description"], "description")
	dir := filepath.Dir(file(t.File))
	if s, ok := d.str(f["manifest"], "manifest"); ok {
		t.Manifest = rel(dir, s)
		t.manifestPos = manifests.NodePos(f["manifest"])
		t.manifestPos.File = t.File
	}
	if s, ok := d.str(f["policy"], "policy"); ok {
		t.Policy = rel(dir, s)
	}
	if s, ok := d.str(f["scenario"], "scenario"); ok {
		t.Scenario = rel(dir, s)
		t.scenarioPos = manifests.NodePos(f["scenario"])
		t.scenarioPos.File = t.File
	}
	d.startTime(t, f)
	if c := d.caller(f["caller"], "caller"); c != nil {
		t.Caller = *c
	}
	t.Approvers = slices.Clone(DefaultApprovers)
	if !isNull(f["approvers"]) {
		t.Approvers = d.names(f["approvers"], "approvers")
	}
	for i, n := range d.seq(f["steps"], "steps") {
		t.Steps = append(t.Steps, d.step(n, fmt.Sprintf("steps[%d]", i)))
	}
	if f["steps"] != nil && len(t.Steps) == 0 && !isNull(f["steps"]) {
		d.add(f["steps"], "steps", manifests.ErrMissing, "at least one step")
	}
}

func file(f string) string {
	if f == "" {
		return "."
	}
	return f
}

func rel(dir, p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}

// required reports keys of f that are absent or null, at the mapping.
// requiredWants say what each required key holds, for its "missing".
var requiredWants = map[string]string{
	"version":  "version: 1",
	"test":     `the test's name, such as "night heating stays off"`,
	"manifest": "the manifest to test, relative to this file",
	"steps":    "a list of steps, such as [{call: read_temperature}]",
	"as":       "the person who decides, such as {name: maria, role: supervisor}",
}

func (d *dec) required(f map[string]ast.Node, at ast.Node, field string, keys ...string) {
	for _, k := range keys {
		if isNull(f[k]) {
			n := f[k]
			if n == nil {
				n = at
			}
			d.add(n, join(field, k), manifests.ErrMissing, "%s", requiredWants[k])
		}
	}
}

// startTime reads start and time_zone: start is a local time in the zone
// (2006-01-02T15:04:05), or RFC 3339 with its own offset.
func (d *dec) startTime(t *Test, f map[string]ast.Node) {
	loc := time.UTC
	if s, ok := d.str(f["time_zone"], "time_zone"); ok {
		l, err := time.LoadLocation(s)
		if err != nil || s == "" || s == "Local" {
			d.add(f["time_zone"], "time_zone", manifests.ErrUnknownValue, "%q (want an IANA zone such as Europe/Berlin, or UTC)", s)
		} else {
			loc = l
		}
	}
	t.Start = time.Date(2026, 11, 30, 12, 0, 0, 0, loc)
	s, ok := d.str(f["start"], "start")
	if !ok {
		return
	}
	if at, err := time.ParseInLocation("2006-01-02T15:04:05", s, loc); err == nil {
		t.Start = at
		return
	}
	if at, err := time.Parse(time.RFC3339, s); err == nil {
		t.Start = at.In(loc)
		return
	}
	d.add(f["start"], "start", manifests.ErrType, `%q (want a local time such as "2026-11-30T12:00:00", or RFC 3339)`, s)
}

func (d *dec) caller(n ast.Node, field string) *Caller {
	f := d.optFields(n, field, callerKeys...)
	if f == nil {
		return nil
	}
	c := &Caller{Name: "site-test", Role: "operator"}
	if s, ok := d.str(f["name"], join(field, "name")); ok {
		c.Name = s
	}
	if s, ok := d.str(f["role"], join(field, "role")); ok {
		c.Role = s
	}
	return c
}
