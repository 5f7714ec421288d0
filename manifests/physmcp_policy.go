package manifests

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/goccy/go-yaml"
)

var (
	pmPolicyKeys   = []string{"physmcp_policy_version", "defaults", "capabilities", "time_windows", "identity", "emergency"}
	pmDefaultsKeys = []string{"require_permission", "rate_limit", "audit_all"}
	pmRuleKeys     = []string{"type", "allow_during", "deny_during", "require", "max", "min_peers", "on_failure", "min", "on_violation"}
	pmRuleTypes    = []string{"time_window", "permission", "rate", "quorum", "range_guard"}
	pmWindowKeys   = []string{"days", "start", "end", "timezone"}
	// pmRuleFields are the keys each rule type takes besides type.
	pmRuleFields = map[string][]string{
		"time_window": {"allow_during", "deny_during"},
		"permission":  {"require"},
		"rate":        {"max"},
		"quorum":      {"min_peers", "on_failure"},
		"range_guard": {"min", "max", "on_violation"},
	}
)

// rangeGuard is a policy's range_guard on one do tool: the manifest's
// constraints are narrowed to it, and clamp says whether a value outside is
// clamped (true) or refused.
type rangeGuard struct {
	min, max *float64
	clamp    bool
}

// physmcpRangeGuards reads the range guards of a PhysMCP policy, by tool.
// A policy's range guard narrows the manifest's constraints (this format
// keeps bounds in the manifest), so the manifest needs them.
func physmcpRangeGuards(file string, data []byte) (map[string]rangeGuard, error) {
	_, pt, err := translatePolicyDoc(file, data, nil)
	if err != nil {
		return nil, err
	}
	return pt.guards, nil
}

func translatePhysMCPPolicy(file string, data []byte, info *physmcpInfo) (yaml.MapSlice, error) {
	doc, _, err := translatePolicyDoc(file, data, info)
	return doc, err
}

// parsePhysMCPPolicy is ParsePolicy for a PhysMCP policy file.
func parsePhysMCPPolicy(file string, data []byte, m *Manifest) (*Policy, error) {
	var info *physmcpInfo
	if m != nil {
		info = m.physmcp
	}
	doc, pt, err := translatePolicyDoc(file, data, info)
	if err != nil {
		return nil, err
	}
	out, err := yaml.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", file, err)
	}
	pol, err := ParsePolicy(file+" (as converted)", out, m)
	if err != nil {
		return nil, fmt.Errorf("%s: the PhysMCP policy translates into a policy that does not validate (see `promcp-device convert`):\n%w", file, err)
	}
	pol.File = file
	// Positions in the file as written, not as converted.
	pol.Identity, pol.Notes = pt.identity, pt.notes
	if pol.Emergency != nil {
		pol.Emergency.Pos = pt.d.at("emergency")
		pol.Emergency.Pos.File = file
	}
	for tool, a := range pol.Actions {
		if a.Quorum != nil {
			a.Quorum.Pos = pt.quorumPos[tool] // zero when the manifest declared it
			a.Quorum.Pos.File = file
		}
	}
	return pol, nil
}

// permissionRoles are the roles PhysMCP's requires_permission admits: the
// level named and those above it. viewer is read-only here (it reads and
// asks can_do), so even "none" admits only the roles that may act.
func permissionRoles(p string) []string {
	all := []string{"viewer", "operator", "supervisor", "admin"}
	switch p {
	case "", "none", "operator":
		return all[1:]
	case "supervisor":
		return all[2:]
	}
	return all[3:]
}

// translatePolicyDoc translates a PhysMCP policy into ours, merging the
// rules that the manifest's capabilities declare (info; nil to only read
// the range guards). A rule of the policy file overrides the manifest's.
func translatePolicyDoc(file string, data []byte, info *physmcpInfo) (yaml.MapSlice, *pmPolicy, error) {
	p := &problems{file: file}
	root, ok := parseYAML(p, data)
	if !ok {
		return nil, nil, p.err()
	}
	pt := &pmPolicy{d: newDecoder(p, root), guards: map[string]rangeGuard{}, quorumPos: map[string]Position{}}
	pt.d.physmcp = true
	o, ok := pt.d.document(root, pmPolicyKeys, "physmcp_policy_version and capabilities")
	if !ok {
		return nil, nil, p.err()
	}
	requireVersion(o, "physmcp_policy_version")
	pt.identity = o.identity("identity", &pt.notes)
	emergency := pmEmergency(o)
	doc := yaml.MapSlice{{Key: "version", Value: 1}}
	defPerm, defRate := policyDefaults(o)
	if defPerm != "" {
		doc = append(doc, yaml.MapItem{Key: "default_roles", Value: permissionRoles(defPerm)})
	}
	pt.timeWindows(o)
	actions := pt.actions(o, info)
	if defRate != nil {
		for i := range actions {
			a := actions[i].Value.(yaml.MapSlice)
			if !slices.ContainsFunc(a, func(it yaml.MapItem) bool { return it.Key == "rate_limit" }) {
				actions[i].Value = append(a, yaml.MapItem{Key: "rate_limit", Value: rateItem(defRate)})
			}
		}
	}
	if len(actions) > 0 {
		doc = append(doc, yaml.MapItem{Key: "actions", Value: actions})
	}
	if pt.identity != nil && len(pt.identity.Providers) > 0 {
		doc = append(doc, yaml.MapItem{Key: "identity", Value: identityItem(pt.identity)})
	}
	if emergency != nil {
		doc = append(doc, yaml.MapItem{Key: "emergency", Value: emergency})
	}
	if err := p.err(); err != nil {
		return nil, nil, err
	}
	return doc, pt, nil
}

var pmEmergencyKeys = []string{"override_permission", "override_token_ttl_seconds", "audit_all_overrides"}

// pmEmergency translates the emergency block (see [Emergency]): the
// override_permission level and those above it may use an override that
// lasts override_token_ttl_seconds. Every action under an override is
// audited (the gateway refuses overrides without an audit log), so
// audit_all_overrides: false cannot be honoured.
func pmEmergency(o obj) yaml.MapSlice {
	em, ok := o.sub("emergency", pmEmergencyKeys)
	if !ok {
		return nil
	}
	var perm string
	enum(em, "override_permission", &perm, pmPermissions, true)
	if perm == "none" {
		em.add("override_permission", ErrNotAllowed, ": none (an override is for a named role, such as admin)")
	}
	ttl, okTTL := atLeastOne(em, "override_token_ttl_seconds")
	em.require("override_token_ttl_seconds", "how long an override lasts, such as 300")
	if okTTL && time.Duration(ttl)*time.Second > MaxOverrideTTL {
		em.add("override_token_ttl_seconds", ErrRange, ": %d (want at most %d, %s)", ttl, int(MaxOverrideTTL.Seconds()), FormatDuration(MaxOverrideTTL))
		okTTL = false
	}
	if em.has("audit_all_overrides") && !em.boolean("audit_all_overrides") {
		em.add("audit_all_overrides", ErrUnsupported, ": false (every action under an override is audited)")
	}
	if perm == "" || perm == "none" || !okTTL {
		return nil
	}
	return yaml.MapSlice{{Key: "roles", Value: permissionRoles(perm)}, {Key: "ttl", Value: FormatDuration(time.Duration(ttl) * time.Second)}}
}

// pmPolicy is a PhysMCP policy being translated: its named time windows
// and the range guards of its do tools.
type pmPolicy struct {
	d        *decoder
	windows  map[string]pmWindow
	guards   map[string]rangeGuard
	identity *Identity
	notes    []Note
	// quorumPos: where each tool's quorum rule says min_peers.
	quorumPos map[string]Position
}

// pmWindow is a named time window, as our window, and its zone.
type pmWindow struct {
	item yaml.MapSlice
	tz   string
}

// pmAction is one do tool's action as its rules build it.
type pmAction struct {
	r     pmRules
	roles []string
	clamp bool
	win   yaml.MapSlice
	guard *rangeGuard
	// quorumPos is where a quorum rule's min_peers is written.
	quorumPos Position
}

// policyDefaults reads defaults: the permission and rate every action
// has unless it says another.
func policyDefaults(o obj) (perm string, rate *RateLimit) {
	df, ok := o.sub("defaults", pmDefaultsKeys)
	if !ok {
		return "", nil
	}
	enum(df, "require_permission", &perm, pmPermissions, false)
	if s, ok := df.strOK("rate_limit"); ok {
		rate = parseRate(df, "rate_limit", s)
	}
	if df.has("audit_all") && !df.boolean("audit_all") {
		df.add("audit_all", ErrUnsupported, ": false (every do_* is audited when serve --audit is given)")
	}
	return perm, rate
}

// timeWindows reads the named time windows that time_window rules refer to.
func (pt *pmPolicy) timeWindows(o obj) {
	d := pt.d
	pt.windows = map[string]pmWindow{}
	for _, e := range d.entries(o.f["time_windows"], "time_windows") {
		name := keyString(e.Key)
		path := join("time_windows", name)
		w, ok := d.obj(e.Value, path, pmWindowKeys)
		if !ok {
			continue
		}
		item := yaml.MapSlice{}
		if days := w.strs("days"); len(days) > 0 {
			for i, day := range days {
				if _, ok := weekdayAliases[day]; !ok {
					d.add(index(join(path, "days"), i), ErrUnknownValue, "%q (want mon … sun, weekdays, weekend or all)", day)
				}
			}
			item = append(item, yaml.MapItem{Key: "days", Value: days})
		}
		from, ok1 := w.clock("start")
		to, ok2 := w.clock("end")
		w.require("start", `a time of day, such as "07:00"`)
		w.require("end", `a time of day, such as "19:00"`)
		if ok1 && ok2 {
			item = append(item, yaml.MapItem{Key: "from", Value: clockString(from)}, yaml.MapItem{Key: "to", Value: clockString(to)})
		}
		tz := w.str("timezone")
		if tz != "" {
			if _, err := time.LoadLocation(tz); err != nil {
				w.add("timezone", ErrUnknownValue, "%q (want an IANA zone such as \"Europe/Madrid\")", tz)
			}
		}
		pt.windows[name] = pmWindow{item, tz}
	}
}

// actions are our actions: one for each capability of the policy, then
// one for each do tool whose rules only the manifest declares.
func (pt *pmPolicy) actions(o obj, info *physmcpInfo) yaml.MapSlice {
	actions := yaml.MapSlice{}
	seen := map[string]bool{}
	for _, e := range pt.d.entries(o.f["capabilities"], "capabilities") {
		tool := keyString(e.Key)
		seen[tool] = true
		c, ok := pt.d.obj(e.Value, join("capabilities", tool), []string{"rules"})
		if !ok {
			continue
		}
		a := &pmAction{}
		if info != nil {
			a.r = info.rules[tool]
		}
		pt.rules(c, a)
		if a.guard != nil {
			pt.guards[tool] = *a.guard
		}
		if a.quorumPos.Line > 0 {
			pt.quorumPos[tool] = a.quorumPos
		}
		actions = append(actions, yaml.MapItem{Key: tool, Value: actionItem(a.r, a.roles, a.clamp, a.win)})
	}
	if info != nil {
		for _, tool := range slices.Sorted(maps.Keys(info.rules)) {
			if !seen[tool] {
				actions = append(actions, yaml.MapItem{Key: tool, Value: actionItem(info.rules[tool], nil, false, nil)})
			}
		}
	}
	return actions
}

// pmRuleKinds translate each type of rule into the action.
var pmRuleKinds = map[string]func(pt *pmPolicy, ru obj, a *pmAction){
	"time_window": (*pmPolicy).timeWindowRule,
	"permission":  (*pmPolicy).permissionRule,
	"rate":        (*pmPolicy).rateRule,
	"quorum":      (*pmPolicy).quorumRule,
	"range_guard": (*pmPolicy).rangeGuardRule,
}

// rules translates a capability's rules into its action.
func (pt *pmPolicy) rules(c obj, a *pmAction) {
	for i, n := range pt.d.seq(c.f["rules"], c.at("rules")) {
		ru, ok := pt.d.item(n, index(c.at("rules"), i), pmRuleKeys)
		if !ok {
			continue
		}
		var typ string
		if !enum(ru, "type", &typ, pmRuleTypes, true) {
			continue
		}
		for _, k := range pmRuleKeys[1:] {
			if ru.has(k) && !slices.Contains(pmRuleFields[typ], k) {
				ru.add(k, ErrNotAllowed, "in a %s rule (want %s)", typ, oneOf(pmRuleFields[typ]))
			}
		}
		pmRuleKinds[typ](pt, ru, a)
	}
}

// timeWindowRule: the named windows an action is allowed in or denied in,
// all in one zone.
func (pt *pmPolicy) timeWindowRule(ru obj, a *pmAction) {
	var tz string
	for _, k := range []string{"allow_during", "deny_during"} {
		var list []yaml.MapSlice
		for j, name := range ru.strs(k) {
			nw, ok := pt.windows[name]
			if !ok {
				pt.d.add(index(ru.at(k), j), ErrBadReference, "time window %q (want one of time_windows: %s)", name, oneOf(slices.Sorted(maps.Keys(pt.windows))))
				continue
			}
			if tz != "" && nw.tz != tz {
				pt.d.add(index(ru.at(k), j), ErrUnsupported, ": time window %q is in %s, another of this rule in %s (one action's windows share a zone)", name, nw.tz, tz)
			}
			tz = nw.tz
			list = append(list, nw.item)
		}
		if len(list) > 0 {
			a.win = append(a.win, yaml.MapItem{Key: map[string]string{"allow_during": "allow", "deny_during": "deny"}[k], Value: list})
		}
	}
	if tz != "" {
		a.win = append(yaml.MapSlice{{Key: "timezone", Value: tz}}, a.win...)
	}
}

// permissionRule: the roles that may run the action.
func (pt *pmPolicy) permissionRule(ru obj, a *pmAction) {
	a.roles = ru.strs("require")
	for j, role := range a.roles {
		if role == "none" {
			pt.d.add(index(ru.at("require"), j), ErrNotAllowed, "none in a require list (omit the rule to allow everyone)")
		}
	}
	ru.require("require", "the roles that may run the action, such as [operator]")
}

// rateRule: the action's rate limit.
func (pt *pmPolicy) rateRule(ru obj, a *pmAction) {
	if s, ok := ru.strOK("max"); ok {
		a.r.RateLimit = parseRate(ru, "max", s)
	}
	ru.require("max", `the rate, such as "6/hour"`)
}

// quorumRule: the gateways that must be reachable; without them the
// action is denied.
func (pt *pmPolicy) quorumRule(ru obj, a *pmAction) {
	if v, ok := atLeastOne(ru, "min_peers"); ok {
		a.r.Quorum = int(v)
		a.quorumPos = pt.d.at(ru.at("min_peers"))
	}
	ru.require("min_peers", "the gateways that must be reachable")
	if s, ok := ru.strOK("on_failure"); ok && s != "deny" {
		ru.add("on_failure", ErrUnsupported, ": %q (without quorum an action is always denied)", s)
	}
}

// rangeGuardRule: bounds that narrow the manifest's constraints, and
// whether a value outside them is clamped.
func (pt *pmPolicy) rangeGuardRule(ru obj, a *pmAction) {
	if a.guard == nil {
		a.guard = &rangeGuard{}
	}
	a.guard.min, a.guard.max = ru.numPtr("min"), ru.numPtr("max")
	var how string
	enum(ru, "on_violation", &how, []string{"clamp", "deny", "warn"}, false)
	switch how {
	case "clamp":
		a.guard.clamp, a.clamp = true, true
	case "warn":
		ru.add("on_violation", ErrUnsupported, ": warn (a value outside the bounds is refused or clamped, never let through)")
	}
}

func rateItem(r *RateLimit) yaml.MapSlice {
	return yaml.MapSlice{{Key: "max", Value: r.Max}, {Key: "per", Value: FormatDuration(r.Per)}}
}

func actionItem(r pmRules, roles []string, clamp bool, win yaml.MapSlice) yaml.MapSlice {
	a := yaml.MapSlice{}
	if roles == nil && r.Permission != "" {
		roles = permissionRoles(r.Permission)
	}
	if roles != nil {
		a = append(a, yaml.MapItem{Key: "roles", Value: roles})
	}
	if clamp {
		a = append(a, yaml.MapItem{Key: "clamp", Value: true})
	}
	if r.Cooldown > 0 {
		a = append(a, yaml.MapItem{Key: "cooldown", Value: FormatDuration(r.Cooldown)})
	}
	if r.RateLimit != nil {
		a = append(a, yaml.MapItem{Key: "rate_limit", Value: rateItem(r.RateLimit)})
	}
	if len(win) > 0 {
		a = append(a, yaml.MapItem{Key: "windows", Value: win})
	}
	if r.Quorum > 0 {
		a = append(a, yaml.MapItem{Key: "quorum", Value: yaml.MapSlice{{Key: "min_peers", Value: r.Quorum}}})
	}
	return a
}

func clockString(d time.Duration) string {
	return fmt.Sprintf("%02d:%02d", int(d.Hours()), int(d.Minutes())%60)
}
