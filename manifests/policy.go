package manifests

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"

	"github.com/promcp/promcp-device/internal/asciiname"
)

// Policy is a validated policy file: the rules that decide, for each do_*
// action of a manifest, who may run it, when, how often, within which
// bounds, with whose approval and under which interlocks. The manifest
// names it (policy: greenhouse.policy.yml, beside the manifest by
// convention); see Manifest.PolicyFile.
type Policy struct {
	File    string
	Version int
	// Location is the time zone of time windows that name none; UTC when
	// the file says nothing.
	Location *time.Location
	// Roles are the role names callers may hold; by default viewer,
	// operator, supervisor and admin. A caller whose role is not among
	// them may not act.
	Roles []string
	// ReadOnly are the roles of Roles that read and ask can_do but never
	// act (roles: [{name: auditor, read_only: true}]); by default viewer,
	// unless declared with read_only: false.
	ReadOnly []string
	// DefaultRoles may run an action whose policy names no roles; by
	// default every role that is not read-only.
	DefaultRoles []string
	// Actions holds the rules of each action, by do_* tool name. An action
	// without an entry gets the defaults only.
	Actions map[string]*ActionPolicy
	// Identity holds the identity providers (nil: none declared; callers
	// over HTTP are then those of the tokens file).
	Identity *Identity
	// Emergency says who may use an emergency override, and for how long
	// (nil: overrides are refused). See [Emergency].
	Emergency *Emergency
	// Notes are what the policy declares that is accepted but not
	// honoured in full (lint warns of each).
	Notes []Note
}

// DefaultRoleNames are the roles a policy knows when it declares none.
var DefaultRoleNames = []string{"viewer", "operator", "supervisor", "admin"}

// DefaultReadOnlyRoles are the roles that are read-only unless a policy
// says otherwise (roles: [{name: viewer, read_only: false}]).
var DefaultReadOnlyRoles = []string{"viewer"}

// ActionPolicy holds the rules of one do_* action. Zero fields do not
// restrict.
type ActionPolicy struct {
	Tool string
	// Roles may run the action; nil means the policy's DefaultRoles.
	Roles []string
	// Clamp makes a value outside min/max (or beyond MaxChange) be clamped
	// to the nearest allowed value instead of refused.
	Clamp bool
	// MaxChange bounds one write's change relative to the current value,
	// in the capability's unit.
	MaxChange *float64
	// Cooldown is the minimum time between successful actuations: an
	// action it applies to is refused until Cooldown has passed since the
	// last actuation (of any value).
	Cooldown time.Duration
	// CooldownWhen limits the cooldown to requested values that meet it (a
	// pump that may not restart within 10 minutes, while stopping it is
	// never held back: when {equals: true}); nil applies it to every value.
	CooldownWhen *ValueCondition
	// RateLimit caps successful actuations per window.
	RateLimit *RateLimit
	// Windows restrict the times of day the action may run.
	Windows *Windows
	// Approval says when a human must approve the action.
	Approval *Approval
	// Interlocks deny the action while another reading meets a condition.
	Interlocks []Interlock
	// Quorum requires peers to agree (fleet deployments).
	Quorum *Quorum
	// Revert is the action's dead-man limit: the gateway itself reverts
	// the actuator to Revert.To once it has been away from it for
	// Revert.After, unless a new do_* renews it (max_on: T is revert to the
	// safe value after T). nil sets none.
	Revert *Revert
	// Shared holds the action's cooldown, lease and rate limit fleet-wide
	// (package fleet/shared): every gateway that claims its actuator
	// compare-and-sets one replicated record, and the action is refused
	// partition_no_quorum when that write cannot commit.
	Shared bool
	// Equipment, set by shared: NAME, names a piece of equipment that
	// several gateways drive (a boiler, a site-wide pump limit): their
	// actions of the same tool compare-and-set one record, named by it,
	// instead of one per gateway. "" with shared: true keeps the record
	// this gateway's own.
	Equipment string
}

// RateLimit allows at most Max successful actuations in any Per window.
type RateLimit struct {
	Max int
	Per time.Duration
}

// Windows restrict when an action may run. With Allow windows, the action
// runs only inside one of them; inside a Deny window it never runs.
type Windows struct {
	Location *time.Location
	Allow    []Window
	Deny     []Window
	// When limits the windows to requested values that meet it (deny only
	// opening the vent at night: when {equals: true}); nil applies them to
	// every value.
	When *ValueCondition
}

// ValueCondition is a condition on a value: above, below, or equal to.
type ValueCondition struct {
	Above, Below *float64
	Equals       any
}

// Window is a daily period on some weekdays. From and To are wall-clock
// times in the windows' zone, as offsets from midnight; To < From crosses
// midnight (20:00–06:00), and From == To is refused. A window that crosses
// midnight belongs to the day it starts on. On daylight-saving change days
// the policy package checks a repeated wall time at both offsets and never
// moves a skipped one (see policy/windows.go).
type Window struct {
	Days     []time.Weekday
	From, To time.Duration
}

// Approval says when a human must approve an action.
type Approval struct {
	Always bool
	// Above and Below require approval for values beyond them.
	Above, Below *float64
	// NotCompensable requires approval when the action is not compensable.
	NotCompensable bool
	// TTL is how long an out-of-band approval stays usable; 0 means 10m.
	TTL time.Duration
	// Via says how the approval may be given: ViaOutOfBand (the default)
	// or ViaElicitation.
	Via string
}

// Interlock denies an action while a reading meets its condition. It
// fails closed: a reading whose quality is not good denies as well.
type Interlock struct {
	// Read is the read_* tool of the capability observed.
	Read string
	// One condition: the reading is above, below, or equal to a value.
	Above, Below *float64
	Equals       any
	// Reason is said to the agent when the interlock denies.
	Reason string
	// When limits the interlock to requested values that meet it (no
	// heater on while the vent is open: when {equals: true}, so that
	// switching the heater off stays allowed); nil applies it to every value.
	When *ValueCondition
}

// Quorum requires MinPeers gateways (this one included) to be reachable.
type Quorum struct {
	MinPeers int
	// Pos is where min_peers is written.
	Pos Position
}

// PolicyNone is the manifest's policy: value that says it has no policy.
const PolicyNone = "none"

// How an approval may be given (the approval's via:).
const (
	// ViaOutOfBand accepts only a token from `promcp-device approve` (or
	// another channel outside the caller's MCP session): the default.
	ViaOutOfBand = "out_of_band"
	// ViaElicitation also accepts a "yes" through the caller's own MCP
	// client (elicitation). The client may be the agent's: opt in only
	// where that is acceptable.
	ViaElicitation = "elicitation"
)

// policyName decodes the manifest's top-level policy: a file name relative
// to the manifest, or "none".
func (d *decoder) policyName(n ast.Node) string {
	s, ok := d.str(n, "policy")
	if !ok {
		return ""
	}
	if strings.TrimSpace(s) == "" {
		d.add("policy", ErrUnknownValue, "%q (want the policy file beside the manifest, such as \"greenhouse.policy.yml\", or none)", s)
		return ""
	}
	return s
}

// PolicyFile returns the policy file the manifest names, resolved against
// the manifest's directory: "" when the manifest says policy: none or says
// nothing (tell them apart with m.Policy).
func (m *Manifest) PolicyFile() string {
	if m.Policy == "" || m.Policy == PolicyNone {
		return ""
	}
	if filepath.IsAbs(m.Policy) {
		return m.Policy
	}
	return filepath.Join(filepath.Dir(m.File), m.Policy)
}

// PolicyPath returns the policy file that belongs beside a manifest:
// "greenhouse.yml" → "greenhouse.policy.yml".
func PolicyPath(manifest string) string {
	ext := filepath.Ext(manifest)
	return strings.TrimSuffix(manifest, ext) + ".policy" + ext
}

// IsCompanion reports whether path names a file that accompanies a
// manifest rather than a manifest: one with a second extension, such as
// greenhouse.policy.yml beside greenhouse.yml.
func IsCompanion(path string) bool {
	base := filepath.Base(path)
	return strings.Count(strings.TrimSuffix(base, filepath.Ext(base)), ".") > 0
}

// ManifestOf returns the manifest a companion file belongs to:
// "greenhouse.policy.yml" → "greenhouse.yml".
func ManifestOf(companion string) string {
	if filepath.Base(companion) == PhysMCPPolicyName {
		return filepath.Join(filepath.Dir(companion), PhysMCPManifestName)
	}
	ext := filepath.Ext(companion)
	stem := strings.TrimSuffix(companion, ext)
	return strings.TrimSuffix(stem, filepath.Ext(stem)) + ext
}

// LoadPolicy reads and validates the policy file at path against m (every
// action and reading it names must exist in m). See ParsePolicy.
func LoadPolicy(path string, m *Manifest) (*Policy, error) {
	return loadFile(path, "policy", func(file string, data []byte) (*Policy, error) { return ParsePolicy(file, data, m) })
}

var (
	policyKeys     = []string{"version", "timezone", "roles", "default_roles", "actions", "identity", "emergency"}
	roleKeys       = []string{"name", "read_only"}
	actionPolKeys  = []string{"roles", "clamp", "max_change", "cooldown", "rate_limit", "windows", "approval", "interlocks", "quorum", "max_on", "revert", "shared"}
	rateLimitKeys  = []string{"max", "per"}
	cooldownKeys   = []string{"for", "when"}
	windowsKeys    = []string{"timezone", "allow", "deny", "when"}
	whenKeys       = []string{"above", "below", "equals"}
	windowKeys     = []string{"days", "from", "to"}
	approvalKeys   = []string{"always", "above", "below", "not_compensable", "ttl", "via"}
	interlockKeys  = []string{"read", "above", "below", "equals", "reason", "when"}
	quorumKeys     = []string{"min_peers"}
	weekdayAliases = map[string][]time.Weekday{
		"mon": {time.Monday}, "tue": {time.Tuesday}, "wed": {time.Wednesday}, "thu": {time.Thursday},
		"fri": {time.Friday}, "sat": {time.Saturday}, "sun": {time.Sunday},
		"weekdays": {time.Monday, time.Tuesday, time.Wednesday, time.Thursday, time.Friday},
		"weekend":  {time.Saturday, time.Sunday},
		"all":      {time.Sunday, time.Monday, time.Tuesday, time.Wednesday, time.Thursday, time.Friday, time.Saturday},
	}
)

// ParsePolicy decodes and validates a policy file held in data against m.
// Errors are *Error values, positioned and sorted, joined, as for Parse.
func ParsePolicy(file string, data []byte, m *Manifest) (*Policy, error) {
	f, err := parseBytes(data) // once: the keys that tell a PhysMCP policy come off the same tree
	if err == nil && isPhysMCPPolicyKeys(fileKeys(f)) {
		return parsePhysMCPPolicy(file, data, m)
	}
	return parseParsed(file, f, err, func(d *decoder, root ast.Node) *Policy {
		pol := d.policy(root, m)
		pol.File = file
		return pol
	})
}

func (d *decoder) policy(root ast.Node, m *Manifest) *Policy {
	pol := &Policy{Location: time.UTC, Actions: map[string]*ActionPolicy{}}
	o, ok := d.document(root, policyKeys, "version and actions")
	if !ok {
		return pol
	}
	pol.Version = o.version()
	if loc, ok := o.timezone("timezone"); ok {
		pol.Location = loc
	}
	d.declareRoles(o, pol)
	if o.has("default_roles") {
		pol.DefaultRoles = o.roles("default_roles", pol)
	}
	pol.Identity = o.identity("identity", &pol.Notes)
	pol.Emergency = o.emergency("emergency", pol)

	actions := map[string]*Capability{}
	reads := map[string]*Capability{}
	if m != nil {
		for i := range m.Capabilities {
			c := &m.Capabilities[i]
			reads["read_"+c.Name] = c
			if c.Do != nil {
				actions[c.Do.Tool] = c
			}
		}
	}
	for _, e := range d.entries(o.f["actions"], "actions") {
		tool := keyString(e.Key)
		path := join("actions", tool)
		cap, known := actions[tool]
		if !known {
			d.addAt(e.Key, path, ErrBadReference, "%q (want a do tool of the manifest: %s)", tool, oneOf(slices.Sorted(maps.Keys(actions))))
		}
		if _, dup := pol.Actions[tool]; dup {
			d.addAt(e.Key, path, ErrDuplicate, "action %q", tool)
			continue
		}
		pol.Actions[tool] = d.actionPolicy(e.Value, path, actionRef{tool, cap, reads, pol})
	}
	return pol
}

// actionRef is what an action's policy is checked against: its tool, its
// capability (nil for an unknown tool), the manifest's read tools and the
// policy's roles and zone.
type actionRef struct {
	tool  string
	cap   *Capability
	reads map[string]*Capability
	pol   *Policy
}

// numeric reports whether the action takes a number (or is unknown).
func (r actionRef) numeric() bool {
	return r.cap == nil || r.cap.Type == TypeNumber || r.cap.Type == TypeInteger
}

func (d *decoder) actionPolicy(n ast.Node, path string, r actionRef) *ActionPolicy {
	a := &ActionPolicy{Tool: r.tool}
	o, ok := d.obj(n, path, actionPolKeys)
	if !ok {
		return a
	}
	if o.has("roles") {
		a.Roles = o.roles("roles", r.pol)
	}
	a.Clamp = o.boolean("clamp")
	if v, ok := o.numOK("max_change"); ok {
		if v <= 0 {
			o.add("max_change", ErrRange, "%v (want more than 0)", v)
		}
		a.MaxChange = &v
	}
	for _, k := range []string{"clamp", "max_change"} {
		if o.has(k) && !r.numeric() {
			o.add(k, ErrNotAllowed, "on %s action %s (want a number or integer capability)", r.cap.Type, r.tool)
		}
	}
	a.Cooldown, a.CooldownWhen = d.cooldown(o.f["cooldown"], o.at("cooldown"), r.cap)
	if rl, ok := o.sub("rate_limit", rateLimitKeys); ok {
		a.RateLimit = &RateLimit{Max: rl.atLeast1("max", "%d (want 1 or more)"), Per: rl.dur("per")}
		rl.require("max", "the number of actuations allowed per window")
		rl.require("per", `the window, such as "1h"`)
	}
	if w, ok := o.sub("windows", windowsKeys); ok {
		a.Windows = w.windows(r)
	}
	if ap, ok := o.sub("approval", approvalKeys); ok {
		a.Approval = ap.approval(r)
	}
	a.Interlocks = list(o, "interlocks", interlockKeys, func(o obj, il *Interlock) { o.interlock(il, r) })
	a.Revert = o.revert(r)
	if q, ok := o.sub("quorum", quorumKeys); ok {
		a.Quorum = &Quorum{MinPeers: q.atLeast1("min_peers", "%d (want 1 or more: this gateway counts)"), Pos: q.d.at(q.at("min_peers"))}
		a.Quorum.Pos.File = q.d.p.file
		q.require("min_peers", "the number of gateways that must be reachable, this one included")
	}
	o.shared(a)
	return a
}

// equipmentName is what shared: NAME may be: it becomes part of a key in
// the fleet's replicated store.
// (`^[A-Za-z0-9_-]{1,64}$`, checked without a regular expression.)
func equipmentName(s string) bool { return asciiname.Match(s, 1, 64, "_-") }

// shared decodes shared: true|false, or shared: NAME (the equipment that
// several gateways' actions drive).
func (o obj) shared(a *ActionPolicy) {
	if _, isString := o.f["shared"].(*ast.StringNode); !isString {
		a.Shared = o.boolean("shared")
		return
	}
	name := o.str("shared")
	if !equipmentName(name) {
		o.add("shared", ErrBadName, ": %q (want true, false, or the name of the shared equipment: letters, digits, _ and -, at most 64)", name)
		return
	}
	a.Shared, a.Equipment = true, name
}

// atLeast1 decodes a count of 1 or more; a smaller one is reported with
// format and kept.
func (o obj) atLeast1(k, format string) int {
	v, ok := o.integer(k)
	if ok && v < 1 {
		o.add(k, ErrRange, format, v)
	}
	return int(v)
}

func (o obj) windows(r actionRef) *Windows {
	w := &Windows{Location: r.pol.Location}
	if loc, ok := o.timezone("timezone"); ok {
		w.Location = loc
	}
	w.Allow = list(o, "allow", windowKeys, obj.window)
	w.Deny = list(o, "deny", windowKeys, obj.window)
	w.When = o.when(r.cap)
	if len(w.Allow) == 0 && len(w.Deny) == 0 {
		o.d.add(o.path, ErrMissing, "allow or deny (want at least one window)")
	}
	return w
}

func (o obj) approval(r actionRef) *Approval {
	a := &Approval{
		Always:         o.boolean("always"),
		NotCompensable: o.boolean("not_compensable"),
		TTL:            o.dur("ttl"),
		Via:            ViaOutOfBand,
		Above:          o.numPtr("above"),
		Below:          o.numPtr("below"),
	}
	enum(o, "via", &a.Via, []string{ViaOutOfBand, ViaElicitation}, false)
	if (a.Above != nil || a.Below != nil) && !r.numeric() {
		o.d.add(o.path, ErrNotAllowed, "above/below on %s action %s (want a number or integer capability)", r.cap.Type, r.tool)
	}
	if !a.Always && !a.NotCompensable && a.Above == nil && a.Below == nil {
		o.d.add(o.path, ErrMissing, "a condition (want always, above, below or not_compensable)")
	}
	return a
}

// cooldown decodes a cooldown: a duration ("5m"), or a mapping with the
// duration in for and a when that limits it to some requested values
// ({for: 10m, when: {equals: true}}).
func (d *decoder) cooldown(n ast.Node, path string, cap *Capability) (time.Duration, *ValueCondition) {
	if _, ok := d.resolve(n, path).(*ast.MappingNode); !ok {
		return d.duration(n, path), nil
	}
	o, ok := d.obj(n, path, cooldownKeys)
	if !ok {
		return 0, nil
	}
	dur := o.dur("for")
	o.require("for", `the cooldown's duration, such as "10m"`)
	return dur, o.when(cap)
}

// roles decodes a list of roles allowed to act: each must be declared
// and not read-only.
func (o obj) roles(k string, pol *Policy) []string {
	out := []string{}
	for i, it := range o.d.seq(o.f[k], o.at(k)) {
		p := index(o.at(k), i)
		r, ok := o.d.str(it, p)
		if !ok {
			continue
		}
		switch {
		case !slices.Contains(pol.Roles, r):
			o.d.add(p, ErrUnknownValue, "%q (want a role the policy declares: %s%s)", r, oneOf(pol.Roles), didYouMean(r, pol.Roles))
			continue
		case slices.Contains(pol.ReadOnly, r):
			o.d.add(p, ErrNotAllowed, "%q is read-only: it reads and asks can_do but never acts (drop it here, or declare it with read_only: false)", r)
			continue
		}
		out = append(out, r)
	}
	return out
}

func (o obj) timezone(k string) (*time.Location, bool) {
	s, ok := o.strOK(k)
	if !ok {
		return nil, false
	}
	loc, err := time.LoadLocation(s)
	if err != nil || s == "" || s == "Local" {
		o.add(k, ErrUnknownValue, "%q (want an IANA time zone name such as \"Europe/Amsterdam\" or \"UTC\")", s)
		return nil, false
	}
	return loc, true
}

func (o obj) window(w *Window) {
	if o.has("days") {
		for i, it := range o.d.seq(o.f["days"], o.at("days")) {
			p := index(o.at("days"), i)
			s, ok := o.d.str(it, p)
			if !ok {
				continue
			}
			days, known := weekdayAliases[strings.ToLower(s)]
			if !known {
				o.d.add(p, ErrUnknownValue, "%q (want mon, tue, wed, thu, fri, sat, sun, weekdays, weekend or all)", s)
				continue
			}
			for _, day := range days {
				if !slices.Contains(w.Days, day) {
					w.Days = append(w.Days, day)
				}
			}
		}
	} else {
		w.Days = weekdayAliases["all"]
	}
	from, fromOK := o.clock("from")
	to, toOK := o.clock("to")
	w.From, w.To = from, to
	o.require("from", `a time of day such as "20:00"`)
	o.require("to", `a time of day such as "06:00"`)
	switch {
	case fromOK && from == 24*time.Hour:
		o.add("from", ErrRange, `"24:00" (a window starts at 00:00 to 23:59; 24:00 is only an end)`)
	case fromOK && toOK && from == to:
		// Empty or the whole day? Say which.
		o.add("to", ErrNotAllowed, `"%02d:%02d", the same as from (want a window that ends at another time; the whole day is from "00:00" to "24:00")`,
			int(to/time.Hour), int(to%time.Hour/time.Minute))
	}
}

// clock parses "HH:MM" (00:00 to 24:00) into an offset from midnight, a
// wall-clock time in the window's zone.
func (o obj) clock(k string) (time.Duration, bool) {
	s, ok := o.strOK(k)
	if !ok {
		return 0, false
	}
	digit := func(i int) int {
		if c := s[i]; c >= '0' && c <= '9' {
			return int(c - '0')
		}
		return -100
	}
	var h, m int
	if len(s) == 5 && s[2] == ':' {
		h, m = digit(0)*10+digit(1), digit(3)*10+digit(4)
	}
	if len(s) != 5 || s[2] != ':' || h < 0 || m < 0 || m > 59 || h > 24 || h == 24 && m != 0 {
		o.add(k, ErrType, "%q (want a time of day HH:MM, 00:00 to 24:00)", s)
		return 0, false
	}
	return time.Duration(h)*time.Hour + time.Duration(m)*time.Minute, true
}

// when decodes the key when: a condition on the requested value of cap's
// action.
func (o obj) when(cap *Capability) *ValueCondition {
	w, ok := o.sub("when", whenKeys)
	if !ok {
		return nil
	}
	c := w.condition()
	if cap != nil && (c.Above != nil || c.Below != nil) && cap.Type != TypeNumber && cap.Type != TypeInteger {
		w.d.add(w.path, ErrNotAllowed, "above/below on %s action %s (want equals)", cap.Type, cap.Do.Tool)
	}
	return &c
}

// condition decodes the above, below and equals keys of a mapping, one of
// which must be given.
func (o obj) condition() ValueCondition {
	c := ValueCondition{Above: o.numPtr("above"), Below: o.numPtr("below")}
	if o.has("equals") {
		c.Equals = o.scalar("equals")
	}
	if c.Above == nil && c.Below == nil && c.Equals == nil && !o.d.bad[o.at("above")] && !o.d.bad[o.at("below")] && !o.d.bad[o.at("equals")] {
		o.d.add(o.path, ErrMissing, "a condition (want above, below or equals)")
	}
	return c
}

// scalar decodes a boolean, string or number.
func (d *decoder) scalar(n ast.Node, path string) any {
	switch v := d.resolve(n, path).(type) {
	case *ast.BoolNode:
		return v.Value
	case *ast.StringNode:
		return v.Value
	default:
		if x, ok := d.number(v, path); ok {
			return x
		}
	}
	return nil
}

func (o obj) interlock(il *Interlock, r actionRef) {
	il.Read = o.requiredStr("read", "the read_* tool of the reading the interlock watches")
	il.Reason = o.str("reason")
	c, known := r.reads[il.Read]
	if il.Read != "" && !known {
		o.add("read", ErrBadReference, "%q (want a read tool of the manifest: %s)", il.Read, oneOf(slices.Sorted(maps.Keys(r.reads))))
	}
	cond := o.condition()
	il.Above, il.Below, il.Equals = cond.Above, cond.Below, cond.Equals
	il.When = o.when(r.cap)
	if known && (il.Above != nil || il.Below != nil) && c.Type != TypeNumber && c.Type != TypeInteger {
		o.d.add(o.path, ErrNotAllowed, "above/below on %s reading %s (want equals)", c.Type, il.Read)
	}
	if il.Reason == "" && il.Read != "" {
		il.Reason = "interlock on " + il.Read
	}
}
