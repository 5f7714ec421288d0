package sitetest

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"

	"github.com/promcp/promcp-device/manifests"
)

func (d *dec) step(n ast.Node, field string) Step {
	st := Step{Pos: manifests.NodePos(n)}
	st.Pos.File = d.file
	before := len(d.errs)
	f := d.fields(n, field, stepKeys...)
	if f == nil {
		return st
	}
	unknown := len(d.errs) > before // an unknown key: maybe the misspelt action
	st.Name, _ = d.str(f["name"], join(field, "name"))
	actions := 0
	for _, k := range []string{"advance", "advance_to", "call", "set", "approve", "deny"} {
		if !isNull(f[k]) {
			actions++
		}
	}
	if actions > 1 || actions == 0 && !unknown {
		d.add(n, field, manifests.ErrMissing, "a step does exactly one of advance, advance_to, call, set, approve or deny (got %d)", actions)
	}
	if s, ok := d.str(f["advance_to"], join(field, "advance_to")); ok {
		if _, err := time.Parse(time.RFC3339, s); err != nil && !varRe().MatchString(s) {
			d.add(f["advance_to"], join(field, "advance_to"), manifests.ErrType, `%q (want an RFC 3339 time, or ${name} of a captured one)`, s)
		}
		st.AdvanceTo = s
	}
	if s, ok := d.str(f["advance"], join(field, "advance")); ok {
		dur, err := time.ParseDuration(s)
		if err != nil || dur <= 0 || dur > 400*24*time.Hour {
			d.add(f["advance"], join(field, "advance"), manifests.ErrRange, `%q (want a duration such as "90s" or "2h", more than 0, at most 400 days)`, s)
		}
		st.Advance = dur
	}
	st.Call, _ = d.str(f["call"], join(field, "call"))
	if st.Call == "" {
		for _, k := range []string{"args", "as", "expect", "capture", "record"} {
			if !isNull(f[k]) {
				d.add(f[k], join(field, k), manifests.ErrNotAllowed, "only on a call step")
			}
		}
	}
	if v, ok := d.value(f["args"], join(field, "args")); ok && v != nil {
		if m, ok := v.(map[string]any); ok {
			st.Args = m
		} else {
			d.add(f["args"], join(field, "args"), manifests.ErrType, "want a mapping of the tool's arguments")
		}
	}
	st.As = d.caller(f["as"], join(field, "as"))
	st.Expect = d.expect(f["expect"], join(field, "expect"))
	st.Capture = d.captures(f["capture"], join(field, "capture"))
	d.record(&st, f, field)
	if !isNull(f["set"]) {
		st.Set = d.set(f["set"], join(field, "set"))
	}
	for _, k := range []string{"approve", "deny"} {
		if !isNull(f[k]) {
			st.Decide = d.decision(f[k], join(field, k), k == "approve")
		}
	}
	return st
}

var decisionKeys = []string{"as", "tool", "idempotency_key"}

// decision reads approve: or deny: {as: {name, role}, tool, idempotency_key}.
func (d *dec) decision(n ast.Node, field string, approve bool) *Decision {
	dc := &Decision{Approve: approve}
	f := d.fields(n, field, decisionKeys...)
	if f == nil {
		return dc
	}
	d.required(f, n, field, "as")
	if c := d.caller(f["as"], join(field, "as")); c != nil {
		dc.As = *c
	}
	dc.Tool, _ = d.str(f["tool"], join(field, "tool"))
	dc.Key, _ = d.str(f["idempotency_key"], join(field, "idempotency_key"))
	return dc
}

// record reads record: a list of paths whose observed values --update
// writes into the step as its expect, in place of the record key.
func (d *dec) record(st *Step, f map[string]ast.Node, field string) {
	n := f["record"]
	if isNull(n) {
		return
	}
	if !isNull(f["expect"]) {
		d.add(n, join(field, "record"), manifests.ErrNotAllowed, "beside expect: record writes the step's expect (remove one)")
		return
	}
	for i, it := range d.seq(n, join(field, "record")) {
		if s, ok := d.str(it, fmt.Sprintf("%s.record[%d]", field, i)); ok {
			if _, err := parsePath(s); err != nil {
				d.add(it, fmt.Sprintf("%s.record[%d]", field, i), manifests.ErrType, "%v", err)
			}
			st.Record = append(st.Record, s)
		}
	}
	d.recordSpan(st, n)
}

func (d *dec) captures(n ast.Node, field string) map[string]string {
	if isNull(n) {
		return nil
	}
	out := map[string]string{}
	for k, vn := range d.fields(n, field) {
		s, ok := d.str(vn, join(field, k))
		if !ok {
			continue
		}
		if !validName(k) {
			d.add(vn, join(field, k), manifests.ErrBadName, "%q (want letters, digits and _)", k)
		}
		if _, err := parsePath(s); err != nil {
			d.add(vn, join(field, k), manifests.ErrType, "%v", err)
		}
		out[k] = s
	}
	return out
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

func (d *dec) expect(n ast.Node, field string) *Expect {
	f := d.optFields(n, field, expectKeys...)
	if f == nil {
		return nil
	}
	e := &Expect{}
	for _, short := range []string{"value", "quality", "permission", "status"} {
		if vn, ok := f[short]; ok {
			e.Body = append(e.Body, d.check(short, vn, join(field, short)))
		}
	}
	if bf := d.fields(f["body"], join(field, "body")); bf != nil {
		for _, k := range slices.Sorted(maps.Keys(bf)) {
			fk := join(field, "body") + "." + k
			if _, err := parsePath(k); err != nil {
				d.add(bf[k], fk, manifests.ErrType, "%v", err)
				continue
			}
			e.Body = append(e.Body, d.check(k, bf[k], fk))
		}
	}
	e.Candidates = d.names(f["candidate"], join(field, "candidate"))
	e.Blocked = d.names(f["blocked"], join(field, "blocked"))
	e.NotListed = d.names(f["not_listed"], join(field, "not_listed"))
	e.IsError = optional(d.boolean, f, field, "is_error")
	e.Audit = d.audits(f["audit"], join(field, "audit"))
	return e
}

// names reads one name or a list of names.
func (d *dec) names(n ast.Node, field string) []string {
	n = d.unwrap(n, field)
	if isNull(n) {
		return nil
	}
	if _, ok := n.(*ast.SequenceNode); !ok {
		s, _ := d.str(n, field)
		return []string{s}
	}
	var out []string
	for i, it := range d.seq(n, field) {
		if s, ok := d.str(it, fmt.Sprintf("%s[%d]", field, i)); ok {
			out = append(out, s)
		}
	}
	return out
}

var auditKeys = []string{"event", "tool", "caller", "role", "permission", "status", "idempotency_key", "reason"}

// audits reads one audit record's fields, or a list of them: each must
// match a record the step's call appended to the audit log.
func (d *dec) audits(n ast.Node, field string) []map[string]any {
	n = d.unwrap(n, field)
	if isNull(n) {
		return nil
	}
	items := []ast.Node{n}
	if _, ok := n.(*ast.SequenceNode); ok {
		items = d.seq(n, field)
	}
	var out []map[string]any
	for i, it := range items {
		fi := field
		if len(items) > 1 || it != n {
			fi = fmt.Sprintf("%s[%d]", field, i)
		}
		f := d.fields(it, fi, auditKeys...)
		rec := map[string]any{}
		for k, vn := range f {
			if s, ok := d.str(vn, join(fi, k)); ok {
				rec[k] = s
			}
		}
		out = append(out, rec)
	}
	return out
}

// check reads one field's expectation: a plain value (exact), or a
// mapping of equals, min, max, pattern, absent, present.
func (d *dec) check(path string, n ast.Node, field string) FieldCheck {
	fc := FieldCheck{Path: path}
	un := d.unwrap(n, field)
	mn, isMap := un.(*ast.MappingNode)
	if !isMap {
		_, isMap = un.(*ast.MappingValueNode)
	}
	if !isMap || !isMatcher(mn, un) {
		v, _ := d.value(un, field)
		fc.M = Matcher{Equals: v, HasEquals: true}
		return fc
	}
	f := d.fields(un, field, "equals", "min", "max", "pattern", "absent", "present")
	m := Matcher{}
	if vn, ok := f["equals"]; ok {
		m.Equals, _ = d.value(vn, join(field, "equals"))
		m.HasEquals = true
	}
	m.Min = optional(d.number, f, field, "min")
	m.Max = optional(d.number, f, field, "max")
	if s, ok := d.str(f["pattern"], join(field, "pattern")); ok {
		re, err := regexp.Compile(s)
		if err != nil {
			d.add(f["pattern"], join(field, "pattern"), manifests.ErrType, "%v", errors.Unwrap(err))
		}
		m.Pattern = re
	}
	if b, ok := d.boolean(f["absent"], join(field, "absent")); ok {
		m.Absent = b
	}
	if b, ok := d.boolean(f["present"], join(field, "present")); ok {
		m.Present = b
	}
	if m.Absent && (m.HasEquals || m.Min != nil || m.Max != nil || m.Pattern != nil || m.Present) {
		d.add(n, field, manifests.ErrNotAllowed, "absent with another check")
	}
	return fc.with(m)
}

func (fc FieldCheck) with(m Matcher) FieldCheck { fc.M = m; return fc }

// isMatcher says whether a mapping is a matcher (its keys are matcher
// words) rather than an object value to compare exactly.
func isMatcher(mn *ast.MappingNode, n ast.Node) bool {
	var values []*ast.MappingValueNode
	if mn != nil {
		values = mn.Values
	} else if mv, ok := n.(*ast.MappingValueNode); ok {
		values = []*ast.MappingValueNode{mv}
	}
	if len(values) == 0 {
		return false
	}
	for _, mv := range values {
		if mv == nil || mv.Key == nil || !contains([]string{"equals", "min", "max", "pattern", "absent", "present"}, keyString(mv.Key)) {
			return false
		}
	}
	return true
}

func (d *dec) set(n ast.Node, field string) *Set {
	f := d.fields(n, field, setKeys...)
	if f == nil {
		return nil
	}
	s := &Set{}
	s.Device, _ = d.str(f["device"], join(field, "device"))
	s.Zone, _ = d.str(f["zone"], join(field, "zone"))
	if (s.Device == "") == (s.Zone == "") {
		d.add(n, field, manifests.ErrMissing, "device or zone (one of them)")
	}
	s.Temperature = optional(d.number, f, field, "temperature")
	s.Outside = optional(d.number, f, field, "outside")
	s.On = optional(d.boolean, f, field, "on")
	if v := optional(d.number, f, field, "input"); v != nil {
		i := int(*v)
		s.Input = &i
	}
	s.Volts = optional(d.number, f, field, "volts")
	s.Pulse = optional(d.number, f, field, "pulse_rate")
	s.Online = optional(d.boolean, f, field, "online")
	if v, ok := d.value(f["values"], join(field, "values")); ok && v != nil {
		m, isMap := v.(map[string]any)
		if !isMap {
			d.add(f["values"], join(field, "values"), manifests.ErrType, "want a mapping of channel: value")
		}
		s.Values = m
	}
	if b, ok := d.boolean(f["clear_fault"], join(field, "clear_fault")); ok {
		s.Clear = b
	}
	d.fault(s, f, field)
	d.setKinds(s, f, n, field)
	return s
}

// optional decodes key k of the mapping f (at field) with decode: nil when
// it is absent.
func optional[T any](decode func(n ast.Node, field string) (T, bool), f map[string]ast.Node, field, k string) *T {
	if v, ok := decode(f[k], join(field, k)); ok {
		return &v
	}
	return nil
}

// setKinds checks that a set step changes exactly one thing.
func (d *dec) setKinds(s *Set, f map[string]ast.Node, n ast.Node, field string) {
	kinds := 0
	for _, given := range []bool{s.Temperature != nil, s.Outside != nil, s.On != nil, s.Input != nil || s.Volts != nil, s.Pulse != nil, s.Online != nil, s.Values != nil, s.Fault != nil, s.Clear} {
		if given {
			kinds++
		}
	}
	if kinds != 1 {
		d.add(n, field, manifests.ErrMissing, "set one of temperature or outside (a zone), on, input+volts, pulse_rate, online, values, fault or clear_fault (a device) (got %d)", kinds)
	}
	if (s.Input == nil) != (s.Volts == nil) {
		d.add(n, field, manifests.ErrMissing, "input and volts go together")
	}
	if s.Fault == nil {
		for _, k := range []string{"channel", "value", "amplitude", "delay"} {
			if !isNull(f[k]) {
				d.add(f[k], join(field, k), manifests.ErrNotAllowed, "only with fault")
			}
		}
	}
}

func (d *dec) fault(s *Set, f map[string]ast.Node, field string) {
	k, ok := d.str(f["fault"], join(field, "fault"))
	if !ok {
		return
	}
	fl := &manifests.Fault{Kind: manifests.FaultKind(k)}
	if !contains(kindNames(), k) {
		d.add(f["fault"], join(field, "fault"), manifests.ErrUnknownValue, "%q (want one of %s)", k, strings.Join(kindNames(), ", "))
	}
	fl.Channel, _ = d.str(f["channel"], join(field, "channel"))
	fl.Value = optional(d.number, f, field, "value")
	if v, ok := d.number(f["amplitude"], join(field, "amplitude")); ok {
		fl.Amplitude = v
	}
	if ds, ok := d.str(f["delay"], join(field, "delay")); ok {
		dur, err := time.ParseDuration(ds)
		if err != nil || dur < 0 || dur > time.Minute {
			d.add(f["delay"], join(field, "delay"), manifests.ErrRange, "%q (want a duration from 0s to 1m)", ds)
		}
		fl.Delay = dur
	}
	s.Fault = fl
}

func kindNames() []string {
	var out []string
	for _, k := range manifests.FaultKinds() {
		out = append(out, string(k))
	}
	return out
}

func joinErrs(list []*manifests.Error) error {
	sort.SliceStable(list, func(i, j int) bool {
		a, b := list[i].Pos, list[j].Pos
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Column < b.Column
	})
	errs := make([]error, len(list))
	for i, e := range list {
		errs[i] = e
	}
	return errors.Join(errs...)
}

// recordSpan remembers the lines of the record key and its value (1-based,
// inclusive) and the key's column, for --update to rewrite.
func (d *dec) recordSpan(st *Step, n ast.Node) {
	first, last := 0, 0
	for _, t := range tokensOf(n) {
		if t == 0 {
			continue
		}
		if first == 0 || t < first {
			first = t
		}
		last = max(last, t)
	}
	st.recordFrom, st.recordTo = first, last
}

// tokensOf lists the lines of n's tokens and of its children's.
func tokensOf(n ast.Node) []int {
	var lines []int
	ast.Walk(visitor(func(x ast.Node) {
		if tk := x.GetToken(); tk != nil && tk.Position != nil {
			lines = append(lines, tk.Position.Line)
		}
	}), n)
	return lines
}

type visitor func(ast.Node)

func (v visitor) Visit(n ast.Node) ast.Visitor {
	if n != nil {
		v(n)
	}
	return v
}
