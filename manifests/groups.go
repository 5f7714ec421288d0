package manifests

import (
	"fmt"
	"slices"
	"strings"
)

// Group is a tool group: a named part of the gateway's tools, served as its
// own MCP endpoint (/mcp/<name> over HTTP, serve --group NAME over stdio)
// with its own can_do. A group picks capabilities by name, by location and
// by tag; it holds every capability that any of them picks, in manifest
// order, each with its read_* and, for an actuator, its do_*:
//
//	groups:
//	  - name: zone1
//	    description: Zone 1 climate, and the heater and vent that serve it.
//	    location: zone1              # every capability with location: zone1
//	    capabilities: [heater, vent] # and these, by name
//	  - name: energy
//	    tags: [energy]               # every capability tagged energy
//
// A group serves at most MaxGroupTools tools (its can_do counted) and at
// most MaxGroupDo do_* tools, the density limits of the proMCP spec.
type Group struct {
	// Name is used in the endpoint's URL path: lower case letters, digits,
	// _ and -, starting with a letter, at most 64 characters.
	Name        string
	Description string
	// Capabilities, Location and Tags are the selectors as written.
	Capabilities []string
	Location     string
	Tags         []string
	// Members are the names of the capabilities the group holds, in
	// manifest order (filled by Load and Parse).
	Members []string
	// Jobs are the names of the jobs whose capabilities the group holds
	// every one of, in manifest order (filled by Load and Parse): the group
	// serves their start_*, read_status_* and do_cancel_* as well.
	Jobs []string
}

// The spec's density limits, which every group keeps: at most 8 tools
// per server (can_do included) and at most 5 do_* tools.
const (
	MaxGroupTools = 8
	MaxGroupDo    = 5
)

// validGroupName is `^[a-z][a-z0-9_-]{0,63}$` without a regular expression
// (a counted repetition compiles to about 60 KB kept from package init).
func validGroupName(s string) bool {
	if s == "" || len(s) > 64 || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func (o obj) group(g *Group) {
	if s, ok := o.strOK("name"); ok {
		g.Name = s
		if !validGroupName(s) {
			o.add("name", ErrBadName, "%q (a group name is part of the URL /mcp/<name>: want lower case letters, digits, _ and -, starting with a letter, at most 64 characters, such as \"zone1\")", s)
		}
	}
	o.require("name", `a name for the endpoint /mcp/<name>, such as "zone1"`)
	g.Description = o.str("description")
	g.Capabilities = o.strs("capabilities")
	g.Location = o.str("location")
	g.Tags = o.strs("tags")
	if o.f != nil && !o.has("capabilities") && !o.has("location") && !o.has("tags") {
		o.add("capabilities", ErrMissing, "capabilities, location or tags (want what the group holds, such as capabilities: [heater, vent] or location: zone1)")
	}
}

// Group returns the group called name.
func (m *Manifest) Group(name string) (*Group, bool) {
	for i := range m.Groups {
		if m.Groups[i].Name == name {
			return &m.Groups[i], true
		}
	}
	return nil, false
}

// GroupNames lists the groups' names in manifest order.
func (m *Manifest) GroupNames() []string {
	return namesOf(m.Groups, func(g Group) string { return g.Name })
}

// Surface counts the tools served for the capabilities named: one read_*
// each, one do_* per action, and can_do.
func (m *Manifest) Surface(names []string) (tools, do int) {
	tools = 1
	for _, c := range m.Capabilities {
		if slices.Contains(names, c.Name) {
			tools++
			if c.Do != nil {
				tools++
				do++
			}
		}
	}
	return tools, do
}

// selects reports whether group g picks capability c.
func (g *Group) selects(c Capability) bool {
	if slices.Contains(g.Capabilities, c.Name) || g.Location != "" && c.Location == g.Location {
		return true
	}
	for _, t := range g.Tags {
		if slices.Contains(c.Tags, t) {
			return true
		}
	}
	return false
}

// checkGroups checks each group's name, selectors and size, and fills its
// members.
func (c *checker) checkGroups() {
	seen := map[string]string{}
	capNames := namesOf(c.m.Capabilities, func(cp Capability) string { return cp.Name })
	var locations, tags []string
	for _, cp := range c.m.Capabilities {
		if cp.Location != "" && !slices.Contains(locations, cp.Location) {
			locations = append(locations, cp.Location)
		}
		for _, t := range cp.Tags {
			if !slices.Contains(tags, t) {
				tags = append(tags, t)
			}
		}
	}
	for i := range c.m.Groups {
		g := &c.m.Groups[i]
		path := index("groups", i)
		c.unique(seen, "group name", g.Name, join(path, "name"))
		listed := map[string]string{}
		for j, name := range g.Capabilities {
			p := index(join(path, "capabilities"), j)
			switch {
			case name == "":
			case !slices.Contains(capNames, name):
				c.d.add(p, ErrBadReference, "capability %q (%s)", name, candidates("capability", capNames))
			default:
				c.unique(listed, "capability", name, p)
			}
		}
		if g.Location != "" && !slices.Contains(locations, g.Location) {
			c.d.add(join(path, "location"), ErrBadReference, "location %q: no capability has it (%s)", g.Location, candidates("location", locations))
		}
		for j, t := range g.Tags {
			if t != "" && !slices.Contains(tags, t) {
				c.d.add(index(join(path, "tags"), j), ErrBadReference, "tag %q: no capability has it (%s)", t, candidates("tag", tags))
			}
		}
		for _, cp := range c.m.Capabilities {
			if cp.Name != "" && g.selects(cp) {
				g.Members = append(g.Members, cp.Name)
			}
		}
		for _, j := range c.m.Jobs {
			if caps := j.Capabilities(); len(caps) > 0 && !slices.ContainsFunc(caps, func(n string) bool { return !slices.Contains(g.Members, n) }) {
				g.Jobs = append(g.Jobs, j.Name)
			}
		}
		c.groupSize(g, path)
	}
}

// groupSize reports a group that holds nothing, or more tools than the
// density limits allow.
func (c *checker) groupSize(g *Group, path string) {
	at := join(path, "name")
	if g.Name == "" {
		return // reported: one mistake, one error
	}
	if len(g.Members) == 0 {
		if c.badUnder(path, "capabilities", "location", "tags") {
			return // a selector was reported: the emptiness follows from it
		}
		if c.d.has(join(path, "capabilities")) || c.d.has(join(path, "location")) || c.d.has(join(path, "tags")) {
			c.d.add(at, ErrRange, ": group %q holds no capability (its capabilities, location and tags pick none)", g.Name)
		}
		return
	}
	tools, do := c.m.GroupSurface(g)
	jobs := ""
	if len(g.Jobs) > 0 {
		jobs = fmt.Sprintf(", with the tools of the jobs %s whose capabilities it holds", strings.Join(g.Jobs, ", "))
	}
	if tools > MaxGroupTools {
		c.d.add(at, ErrRange, ": group %q serves %d tools (%s%s); want at most %d (the spec's limit per server): split it into smaller groups",
			g.Name, tools, toolCount(tools, do), jobs, MaxGroupTools)
	}
	if do > MaxGroupDo {
		c.d.add(at, ErrRange, ": group %q serves %d do_* tools%s; want at most %d (the spec's limit per server): split it into smaller groups",
			g.Name, do, jobs, MaxGroupDo)
	}
}

// GroupSurface counts the tools group g serves: its capabilities' (see
// Surface), and three per job it serves (start_* and do_cancel_*, which
// count as do_*, and read_status_*).
func (m *Manifest) GroupSurface(g *Group) (tools, do int) {
	tools, do = m.Surface(g.Members)
	return tools + 3*len(g.Jobs), do + 2*len(g.Jobs)
}

func toolCount(tools, do int) string {
	return fmt.Sprintf("%d read_*, %d do_*, can_do", tools-do-1, do)
}

// SuggestGroups proposes groups for a manifest whose whole surface is over
// the density limits: one per location (with the location-less actions
// that depend on a reading there), then the capabilities left, device by
// device, packed in manifest order into groups within the limits. It is a
// start
// for the integrator to edit, not a guarantee: a suggestion over the
// limits is still listed, marked by the caller.
func SuggestGroups(m *Manifest) []Group {
	var out []Group
	taken := map[string]bool{}
	var locations []string
	for _, c := range m.Capabilities {
		if c.Location != "" && !slices.Contains(locations, c.Location) {
			locations = append(locations, c.Location)
		}
	}
	for _, loc := range locations {
		g := Group{Name: groupName(loc), Location: loc}
		var here []Capability
		for _, c := range m.Capabilities {
			if c.Location == loc {
				here = append(here, c)
				g.Members = append(g.Members, c.Name)
				taken[c.Name] = true
			}
		}
		for _, c := range m.Capabilities {
			if c.Location == "" && c.Do != nil && servesAny(c, here) {
				g.Capabilities = append(g.Capabilities, c.Name)
				g.Members = append(g.Members, c.Name)
				taken[c.Name] = true
			}
		}
		out = append(out, g)
	}
	// The rest, by device, packed in manifest order into groups within
	// the limits; each is named after its first capability's first tag.
	var order []string
	byDevice := map[string][]Capability{}
	for _, c := range m.Capabilities {
		if taken[c.Name] {
			continue
		}
		if _, ok := byDevice[c.Read.Device]; !ok {
			order = append(order, c.Read.Device)
		}
		byDevice[c.Read.Device] = append(byDevice[c.Read.Device], c)
	}
	var cur *Group
	for _, dev := range order {
		var names []string
		for _, c := range byDevice[dev] {
			names = append(names, c.Name)
		}
		if cur != nil {
			tools, do := m.Surface(append(slices.Clone(cur.Members), names...))
			if tools > MaxGroupTools || do > MaxGroupDo {
				out = append(out, *cur)
				cur = nil
			}
		}
		if cur == nil {
			first := byDevice[dev][0]
			name := dev
			if len(first.Tags) > 0 {
				name = first.Tags[0]
			}
			cur = &Group{Name: groupName(name)}
		}
		cur.Capabilities = append(cur.Capabilities, names...)
		cur.Members = append(cur.Members, names...)
	}
	if cur != nil {
		out = append(out, *cur)
	}
	return out
}

// servesAny reports whether action a depends on one of cs.
func servesAny(a Capability, cs []Capability) bool {
	for _, c := range cs {
		if slices.Contains(a.Do.DependsOn, c.Name) {
			return true
		}
	}
	return false
}

func groupName(s string) string {
	s = strings.ToLower(s)
	s = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			return r
		}
		return '_'
	}, s)
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		s = "g" + s
	}
	return s
}

// badUnder reports whether a problem was reported at one of path's keys,
// or within them (an element of a list).
func (c *checker) badUnder(path string, keys ...string) bool {
	for p := range c.d.bad {
		for _, k := range keys {
			if at := join(path, k); p == at || strings.HasPrefix(p, at+"[") || strings.HasPrefix(p, at+".") {
				return true
			}
		}
	}
	return false
}
