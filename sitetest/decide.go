package sitetest

import (
	"fmt"
	"slices"
	"strings"

	"github.com/promcp/promcp-device/server"
)

// Decides reports whether a step of t approves or denies a request: its
// gateway then needs an approval desk (Env.Desk).
func (t *Test) Decides() bool {
	return slices.ContainsFunc(t.Steps, func(s Step) bool { return s.Decide != nil })
}

// decide approves or denies the newest waiting request that the step
// picks, as the person dc.As does in the operator console.
func (r *runner) decide(dc *Decision, sr *StepResult) {
	verb := "deny"
	if dc.Approve {
		verb = "approve"
	}
	pick := "the newest waiting request"
	if dc.Tool != "" || dc.Key != "" {
		pick = strings.TrimSpace(fmt.Sprintf("the newest waiting request %s %s", dc.Tool, keyNote(dc.Key)))
	}
	sr.Title = fmt.Sprintf("%s %s as %s (%s)", verb, pick, dc.As.Name, dc.As.Role)
	fail := func(want, got, why string) {
		sr.Checks = append(sr.Checks, Check{What: verb, Want: want, Got: got, Fail: why})
	}
	if r.desk == nil {
		fail("an approval desk", "none", "no desk")
		return
	}
	if !slices.Contains(r.t.Approvers, dc.As.Role) {
		fail("a role of the approvers: "+strings.Join(r.t.Approvers, ", "), dc.As.Role, "not an approver")
		return
	}
	var req *server.Request
	for _, q := range r.desk.Requests() { // newest first
		if q.State == server.Waiting && (dc.Tool == "" || q.Tool == dc.Tool) && (dc.Key == "" || q.Key == dc.Key) {
			req = &q
			break
		}
	}
	if req == nil {
		fail(pick, "no request waits", "nothing to decide")
		return
	}
	got, err := r.desk.Decide(req.ID, server.Caller{Name: dc.As.Name, Role: dc.As.Role}, dc.Approve)
	if err != nil {
		fail(verb+"d", err.Error(), "refused")
		return
	}
	sr.Got = fmt.Sprintf("%s: %s value=%s %s, asked by %s (%s)", got.State, got.Tool, server.FormatValue(got.Value),
		keyNote(got.Key), got.Caller.Name, got.Caller.Role)
}

func keyNote(key string) string {
	if key == "" {
		return ""
	}
	return "idempotency_key " + key
}
