package gateway

import "time"

// Units is units, for the external tests: the actions each action's
// do_* reserves together with.
var Units = units

// DeadManDue is the armed dead-man timer of tool: when it falls due.
func DeadManDue(g *Gateway, tool string) (at time.Time, armed bool) {
	if g.deadman == nil {
		return time.Time{}, false
	}
	t, ok := g.deadman.Due(tool)
	return t.At, ok
}
