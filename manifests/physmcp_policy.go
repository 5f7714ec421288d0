package manifests

import (
	"fmt"
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
	_, guards, err := translatePolicyDoc(file, data, nil)
	return guards, err
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
	doc, err := translatePhysMCPPolicy(file, data, info)
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
	return pol, nil
}

// permissionRoles are the roles PhysMCP's requires_permission admits: the
// level named and those above it.
func permissionRoles(p string) []string {
	all := []string{"viewer", "operator", "supervisor", "admin"}
	switch p {
	case "", "none":
		return all
	case "operator":
		return all[1:]
	case "supervisor":
		return all[2:]
	}
	return all[3:]
}

// translatePolicyDoc translates a PhysMCP policy into ours, merging the
// rules that the manifest's capabilities declare (info; nil to only read
// the range guards). A rule of the policy file overrides the manifest's.
func translatePolicyDoc(file string, data []byte, info *physmcpInfo) (yaml.MapSlice, map[string]rangeGuard, error) {
	p := &problems{file: file}
	root, ok := parseYAML(p, data)
	if !ok {
		return nil, nil, p.err()
	}
	d := newDecoder(p, root)
	guards := map[string]rangeGuard{}
	o, ok := d.document(root, pmPolicyKeys, "physmcp_policy_version and capabilities")
	if !ok {
		return nil, nil, p.err()
	}
	if v, ok := o.strOK("physmcp_policy_version"); ok && v != "0.1" {
		o.add("physmcp_policy_version", ErrUnknownValue, "%q (want \"0.1\")", v)
	}
	o.require("physmcp_policy_version", `"0.1"`)
	if o.has("identity") {
		o.add("identity", ErrUnsupported, "(callers are identified by bearer tokens that promcp-device token issues, with a role each; JWT issuers and mTLS are not checked)")
	}
	if o.has("emergency") {
		o.add("emergency", ErrUnsupported, "(there is no override of the policy; a do_* to the capability's safe_value is never held back by rate, cooldown or window)")
	}
	doc := yaml.MapSlice{{Key: "version", Value: 1}}
	var defPerm string
	var defRate *RateLimit
	if df, ok := o.sub("defaults", pmDefaultsKeys); ok {
		enum(df, "require_permission", &defPerm, pmPermissions, false)
		if s, ok := df.strOK("rate_limit"); ok {
			defRate = parseRate(df, "rate_limit", s)
		}
		if df.has("audit_all") && !df.boolean("audit_all") {
			df.add("audit_all", ErrUnsupported, ": false (every do_* is audited when serve --audit is given)")
		}
	}
	if defPerm != "" {
		roles := slices.DeleteFunc(permissionRoles(defPerm), func(r string) bool { return r == "viewer" })
		if defPerm == "none" {
			roles = permissionRoles(defPerm)
		}
		doc = append(doc, yaml.MapItem{Key: "default_roles", Value: roles})
	}

	// named time windows
	type namedWindow struct {
		item yaml.MapSlice
		tz   string
	}
	windows := map[string]namedWindow{}
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
		windows[name] = namedWindow{item, tz}
	}

	actions := yaml.MapSlice{}
	seen := map[string]bool{}
	for _, e := range d.entries(o.f["capabilities"], "capabilities") {
		tool := keyString(e.Key)
		path := join("capabilities", tool)
		seen[tool] = true
		c, ok := d.obj(e.Value, path, []string{"rules"})
		if !ok {
			continue
		}
		var r pmRules
		if info != nil {
			r = info.rules[tool]
		}
		var roles []string
		clamp := false
		var win yaml.MapSlice
		var g rangeGuard
		hasGuard := false
		for i, n := range d.seq(c.f["rules"], c.at("rules")) {
			rp := index(c.at("rules"), i)
			ru, ok := d.item(n, rp, pmRuleKeys)
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
			switch typ {
			case "time_window":
				var tz string
				for _, k := range []string{"allow_during", "deny_during"} {
					var list []yaml.MapSlice
					for j, name := range ru.strs(k) {
						nw, ok := windows[name]
						if !ok {
							d.add(index(ru.at(k), j), ErrBadReference, "time window %q (want one of time_windows: %s)", name, oneOf(keysOf(windows)))
							continue
						}
						if tz != "" && nw.tz != tz {
							d.add(index(ru.at(k), j), ErrUnsupported, ": time window %q is in %s, another of this rule in %s (one action's windows share a zone)", name, nw.tz, tz)
						}
						tz = nw.tz
						list = append(list, nw.item)
					}
					if len(list) > 0 {
						win = append(win, yaml.MapItem{Key: map[string]string{"allow_during": "allow", "deny_during": "deny"}[k], Value: list})
					}
				}
				if tz != "" {
					win = append(yaml.MapSlice{{Key: "timezone", Value: tz}}, win...)
				}
			case "permission":
				roles = ru.strs("require")
				for j, role := range roles {
					if role == "none" {
						d.add(index(ru.at("require"), j), ErrNotAllowed, "none in a require list (omit the rule to allow everyone)")
					}
				}
				ru.require("require", "the roles that may run the action, such as [operator]")
			case "rate":
				if s, ok := ru.strOK("max"); ok {
					r.RateLimit = parseRate(ru, "max", s)
				}
				ru.require("max", `the rate, such as "6/hour"`)
			case "quorum":
				if v, ok := ru.integer("min_peers"); ok {
					if v < 1 {
						ru.add("min_peers", ErrRange, "%d (want 1 or more)", v)
					}
					r.Quorum = int(v)
				}
				ru.require("min_peers", "the gateways that must be reachable")
				if s, ok := ru.strOK("on_failure"); ok && s != "deny" {
					ru.add("on_failure", ErrUnsupported, ": %q (without quorum an action is always denied)", s)
				}
			case "range_guard":
				hasGuard = true
				g.min, g.max = ru.numPtr("min"), ru.numPtr("max")
				var how string
				enum(ru, "on_violation", &how, []string{"clamp", "deny", "warn"}, false)
				switch how {
				case "clamp":
					g.clamp, clamp = true, true
				case "warn":
					ru.add("on_violation", ErrUnsupported, ": warn (a value outside the bounds is refused or clamped, never let through)")
				}
			}
		}
		if hasGuard {
			guards[tool] = g
		}
		actions = append(actions, yaml.MapItem{Key: tool, Value: actionItem(r, roles, clamp, win)})
	}
	if info != nil {
		for _, tool := range keysOf(info.rules) {
			if !seen[tool] {
				actions = append(actions, yaml.MapItem{Key: tool, Value: actionItem(info.rules[tool], nil, false, nil)})
			}
		}
	}
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
	if err := p.err(); err != nil {
		return nil, nil, err
	}
	return doc, guards, nil
}

func rateItem(r *RateLimit) yaml.MapSlice {
	return yaml.MapSlice{{Key: "max", Value: r.Max}, {Key: "per", Value: r.Per.String()}}
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
		a = append(a, yaml.MapItem{Key: "cooldown", Value: r.Cooldown.String()})
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
