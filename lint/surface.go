package lint

import (
	"fmt"
	"strings"
)

// Density limits of the spec: more tools than this per server, or more
// do_* than that, should be grouped.
const (
	MaxTools = 8
	MaxDo    = 5
)

// surfaceRules: S001–S005, the reference linter's surface.
var surfaceRules = []surfaceRule{
	{Rule{"S001", Error, "the server has a can_do", false}, func(ts []*Tool) []string {
		return when(countCanDo(ts) == 0, "No 'can_do' tool found. Every proMCP-compliant server must expose exactly one.")
	}},
	{Rule{"S002", Error, "the server has exactly one can_do", false}, func(ts []*Tool) []string {
		n := countCanDo(ts)
		return when(n > 1, fmt.Sprintf("Found %d 'can_do' tools. Exactly one is permitted.", n))
	}},
	{Rule{"S003", Error, "no tool name is served twice", false}, func(ts []*Tool) []string {
		var out []string
		seen := map[string]bool{}
		for _, t := range ts {
			if seen[t.Name] {
				out = append(out, fmt.Sprintf("Duplicate tool name: '%s'.", t.Name))
			}
			seen[t.Name] = true
		}
		return out
	}},
	{Rule{"S004", Warning, fmt.Sprintf("at most %d tools per server", MaxTools), false}, func(ts []*Tool) []string {
		return when(len(ts) > MaxTools, fmt.Sprintf("%d tools exceeds recommended maximum of %d. Consider splitting by domain or workflow phase.", len(ts), MaxTools))
	}},
	{Rule{"S005", Warning, fmt.Sprintf("at most %d do_* tools per server", MaxDo), false}, func(ts []*Tool) []string {
		n := 0
		for _, t := range ts {
			if isDo(t.Name) {
				n++
			}
		}
		return when(n > MaxDo, fmt.Sprintf("%d do_* tools. Recommended maximum is %d.", n, MaxDo))
	}},
	{Rule{"S006", Warning, "each start_* has its read_status_* (proMCP v0.3)", false}, func(ts []*Tool) []string {
		names := map[string]bool{}
		for _, t := range ts {
			names[t.Name] = true
		}
		var out []string
		for _, t := range ts {
			if c, ok := strings.CutPrefix(t.Name, "start_"); ok && c != "" && !names["read_status_"+c] {
				out = append(out, fmt.Sprintf("'%s' has no 'read_status_%s': an agent cannot follow the action it starts.", t.Name, c))
			}
		}
		return out
	}},
}

func countCanDo(ts []*Tool) int {
	n := 0
	for _, t := range ts {
		if t.Name == "can_do" {
			n++
		}
	}
	return n
}
