package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/server"
	"github.com/promcp/promcp-device/surface"
)

// openGroups makes a surface of gw's server for each tool group of its
// manifest: the group's read_* and do_* served by the same gateway (one
// policy, one reservation and history, one idempotency store and audit
// log), and its own can_do.
func openGroups(gw *openedGateway) (map[string]*server.Server, error) {
	groups := map[string]*server.Server{}
	for _, g := range gw.manifest.Groups {
		instr := instructions(gw.manifest) + " This endpoint serves the tool group " + g.Name
		if g.Description != "" {
			instr += ": " + g.Description
		}
		instr += "; the other tools of the gateway are on its other endpoints."
		srv, err := gw.srv.Surface("promcp-device/"+gw.manifest.Gateway+"/"+g.Name, instr)
		if err != nil {
			return nil, fmt.Errorf("group %s: %w", g.Name, err)
		}
		if err := gw.gateway.ServeGroup(srv, g.Members); err != nil {
			return nil, fmt.Errorf("group %s: %w", g.Name, err)
		}
		groups[g.Name] = srv
	}
	return groups, nil
}

// stdioSurface is the server stdio serves: the whole gateway, or the group
// --group names.
func (f *serveFlags) stdioSurface(gw *openedGateway, groups map[string]*server.Server) (*server.Server, error) {
	if f.group == "" {
		return gw.srv, nil
	}
	srv, ok := groups[f.group]
	if !ok { // load checked the name
		return nil, usageErr("--group %s: no such group in %s (want %s)", f.group, f.manifest, strings.Join(gw.manifest.GroupNames(), ", "))
	}
	return srv, nil
}

// expectedTools is what the endpoint of group serves ("" for the whole
// gateway at /mcp), sorted: the drift gate's expectation.
func expectedTools(m *manifests.Manifest, group string) ([]string, error) {
	all := surface.Expected(m)
	if group == "" {
		return all, nil
	}
	g, ok := m.Group(group)
	if !ok {
		return nil, fmt.Errorf("--group %s: no such group in %s (want %s)", group, m.File, strings.Join(m.GroupNames(), ", "))
	}
	names := []string{"can_do"}
	for _, c := range m.Capabilities {
		if slices.Contains(g.Members, c.Name) {
			names = append(names, "read_"+c.Name)
			if c.Do != nil {
				names = append(names, c.Do.Tool)
			}
		}
	}
	for _, j := range m.Jobs {
		if slices.Contains(g.Jobs, j.Name) {
			names = append(names, j.StartTool(), j.StatusTool(), j.CancelTool())
		}
	}
	slices.Sort(names)
	return names, nil
}

// lintGroups reports the manifest's surfaces against the spec's density
// limits: each group's size, and, when the default surface (/mcp) is over
// them, a warning (S004 more than 8 tools, S005 more than 5 do_*) with the
// groups to declare, or those it declares.
func lintGroups(path string, m *manifests.Manifest, stdout io.Writer) {
	grouped := map[string]bool{}
	for _, g := range m.Groups {
		tools, do := m.GroupSurface(&g)
		jobs := ""
		if len(g.Jobs) > 0 {
			jobs = " with the jobs " + strings.Join(g.Jobs, ", ")
		}
		fmt.Fprintf(stdout, "%s: ok: group %s: %d tools (%d read_*, %d do_*, can_do)%s at /mcp/%s\n", path, g.Name, tools, tools-do-1, do, jobs, g.Name)
		for _, j := range g.Jobs {
			grouped[j] = true
		}
	}
	for _, j := range m.Jobs {
		if len(m.Groups) > 0 && !grouped[j.Name] {
			fmt.Fprintf(stdout, "%s: note: job %s is served at /mcp only: no group holds all of %s\n", path, j.Name, strings.Join(j.Capabilities(), ", "))
		}
	}
	all := namesOf(m)
	tools, do := m.Surface(all)
	var over []string
	if tools > manifests.MaxGroupTools {
		over = append(over, fmt.Sprintf("S004 %d tools, more than %d", tools, manifests.MaxGroupTools))
	}
	if do > manifests.MaxGroupDo {
		over = append(over, fmt.Sprintf("S005 %d do_* tools, more than %d", do, manifests.MaxGroupDo))
	}
	if len(over) == 0 {
		return
	}
	if len(m.Groups) > 0 {
		fmt.Fprintf(stdout, "%s: note: the default surface /mcp is over the spec's limits (%s); agents that want fewer tools connect to a group: %s\n",
			path, strings.Join(over, "; "), strings.Join(m.GroupNames(), ", "))
		return
	}
	fmt.Fprintf(stdout, "%s: warning: the default surface /mcp is over the spec's limits per server (%s). Serve smaller groups, each its own endpoint /mcp/<name>; for example add:\n",
		path, strings.Join(over, "; "))
	fmt.Fprint(stdout, suggestGroups(m))
}

// suggestGroups prints manifests.SuggestGroups as a groups: key to paste,
// each group with its size.
func suggestGroups(m *manifests.Manifest) string {
	var b strings.Builder
	b.WriteString("  groups:\n")
	for _, g := range manifests.SuggestGroups(m) {
		tools, do := m.Surface(g.Members)
		fmt.Fprintf(&b, "    - name: %s\n", g.Name)
		if g.Location != "" {
			fmt.Fprintf(&b, "      location: %s\n", g.Location)
		}
		if len(g.Capabilities) > 0 {
			fmt.Fprintf(&b, "      capabilities: [%s]\n", strings.Join(g.Capabilities, ", "))
		}
		size := fmt.Sprintf("%d tools, %d do_*", tools, do)
		if tools > manifests.MaxGroupTools || do > manifests.MaxGroupDo {
			size += ": still over the limits, split it"
		}
		fmt.Fprintf(&b, "      # %s\n", size)
	}
	return b.String()
}

func namesOf(m *manifests.Manifest) []string {
	var out []string
	for _, c := range m.Capabilities {
		out = append(out, c.Name)
	}
	return out
}
