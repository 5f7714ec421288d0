package sharedtest

import (
	"strings"
	"testing"
	"time"
)

// TestCheck: each invariant of History.Check finds its violation in a
// history made up for it, and a clean history has none.
func TestCheck(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	limits := map[string]Limit{"do_rate": {Max: 2, Per: time.Hour}}
	cases := []struct {
		name  string
		h     *History
		want  string // "" when clean
		check func(h *History) []string
	}{
		{name: "clean", h: &History{
			execs: []Exec{{Action: "do_rate", At: at(0)}, {Action: "do_rate", At: at(3600)}, {Key: "a", At: at(1), Deadline: at(2)}},
			holds: []Hold{{Unit: "u", Client: "gw1", Invoked: at(0), Granted: at(1), Settle: at(2), Committed: true, Lease: 30 * time.Second},
				{Unit: "u", Client: "gw2", Invoked: at(1), Granted: at(3), Settle: at(4), Committed: true, Lease: 30 * time.Second}}}},
		{name: "rate", want: "do_rate executed 3 times", h: &History{
			execs: []Exec{{Action: "do_rate", At: at(0)}, {Action: "do_rate", At: at(10)}, {Action: "do_rate", At: at(3599)}}}},
		{name: "twice", want: "key a executed more than once", h: &History{
			execs: []Exec{{Key: "a", At: at(0)}, {Key: "a", At: at(1)}}}},
		{name: "late", want: "after its deadline", h: &History{
			execs: []Exec{{Key: "a", At: at(3), Deadline: at(2)}}}},
		{name: "overlap within the lease", want: "executed at once", h: &History{
			holds: []Hold{{Unit: "u", Client: "gw1", Invoked: at(0), Granted: at(1), Settle: at(10), Lease: 30 * time.Second},
				{Unit: "u", Client: "gw2", Invoked: at(2), Granted: at(3), Settle: at(4), Committed: true, Lease: 30 * time.Second}}}},
		{name: "taken over, then committed", want: "executed at once", h: &History{
			holds: []Hold{{Unit: "u", Client: "gw1", Invoked: at(0), Granted: at(0), Settle: at(5), Committed: true, Lease: time.Second},
				{Unit: "u", Client: "gw2", Invoked: at(1), Granted: at(2), Settle: at(3), Committed: true, Lease: time.Second}}}},
		{name: "taken over, commit refused", h: &History{
			holds: []Hold{{Unit: "u", Client: "gw1", Invoked: at(0), Granted: at(0), Settle: at(5), Lease: time.Second},
				{Unit: "u", Client: "gw2", Invoked: at(1), Granted: at(2), Settle: at(3), Committed: true, Lease: time.Second}}}},
		{name: "healthy refused", want: "healthy gw1 refused as unreachable", h: &History{
			ops: []*Op{{Client: "gw1", Outcome: Failed, Reason: "partition_no_quorum: cut off"}, {Client: "gw9", Outcome: Failed, Reason: "partition_no_quorum"}}},
			check: func(h *History) []string { return h.CheckHealthy([]string{"gw1"}) }},
	}
	for _, c := range cases {
		check := c.check
		if check == nil {
			check = func(h *History) []string { return h.Check(limits) }
		}
		v := check(c.h)
		switch {
		case c.want == "" && len(v) > 0:
			t.Errorf("%s: violations %q, want none", c.name, v)
		case c.want != "" && (len(v) != 1 || !strings.Contains(v[0], c.want)):
			t.Errorf("%s: violations %q, want one with %q", c.name, v, c.want)
		}
	}
}
