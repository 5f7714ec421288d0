package lint

import (
	"fmt"

	"github.com/promcp/promcp-device/surface"
)

// driftRules: ours, the surface against its source of truth (a manifest):
// what `tools --check` checked. Unclassified tools, duplicates and the
// can_do count are N003, S003, S001 and S002.
var driftRules = []Rule{
	{"X001", Error, "every tool the manifest declares is served", true},
	{"X002", Error, "every served tool is declared by the manifest", true},
}

// Drift adds to r the drift of the served tools from expected (the tools
// a manifest declares, surface.Expected) and returns the triage.
func Drift(r *Report, expected []string, tools []*Tool) surface.Report {
	var served []string
	for _, t := range tools {
		served = append(served, t.Name)
	}
	d := surface.Check(expected, served)
	for _, n := range d.Missing {
		r.add("server", driftRules[0], fmt.Sprintf("'%s' is declared by the manifest but not served.", n))
	}
	for _, n := range d.Unexpected {
		r.add("server", driftRules[1], fmt.Sprintf("'%s' is served but not declared by the manifest.", n))
	}
	return d
}
