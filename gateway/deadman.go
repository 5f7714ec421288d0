package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/promcp/promcp-device/audit"
	"github.com/promcp/promcp-device/capabilities"
	"github.com/promcp/promcp-device/jobs"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/promcp"
	"github.com/promcp/promcp-device/server"
)

// DeadManCaller is the caller named in the audit log for a dead-man revert.
const DeadManCaller = "dead-man"

// EventDeadManRevert is the audit event of a dead-man revert.
const EventDeadManRevert = "deadman_revert"

func (g *Gateway) revertRule(tool string) *manifests.Revert {
	if g.deadman == nil || g.opts.Policy == nil {
		return nil
	}
	if a := g.opts.Policy.Actions[tool]; a != nil {
		return a.Revert
	}
	return nil
}

// armBefore arms (durably) the dead-man timer of an action about to write
// value, before it touches the device: a crash after the write still
// reverts. Writing the revert value itself arms nothing. It runs under
// the actuator's reservation and returns how to settle the timer when the
// reservation ends: disarm it (only the arming this call saw or made, by
// its Gen) when the actuator then holds the revert value.
func (g *Gateway) armBefore(c *capabilities.Capability, value any) func(applied any, actuated bool) {
	rule := g.revertRule(c.Do.Tool)
	if rule == nil {
		return nil
	}
	var gen uint64
	if t, armed := g.deadman.Due(c.Do.Tool); armed {
		gen = t.Gen
	}
	if !equalValue(value, rule.To) {
		now := g.srv.Clock().Now()
		t, err := g.deadman.Arm(jobs.Timer{Tool: c.Do.Tool, To: rule.To, At: now.Add(rule.After), Armed: now, Value: value})
		if err != nil {
			g.srv.Logger().Error("dead-man timer not recorded: it holds in memory only", "tool", c.Do.Tool, "err", err)
		}
		gen = t.Gen
	}
	return func(applied any, actuated bool) {
		if gen == 0 || !actuated || applied == nil || !equalValue(applied, rule.To) {
			return
		}
		if _, err := g.deadman.Disarm(c.Do.Tool, gen); err != nil {
			g.srv.Logger().Error("dead-man timer", "tool", c.Do.Tool, "err", err)
		}
	}
}

// armedAs reports whether tool's dead-man timer is the arming gen.
func (g *Gateway) armedAs(tool string, gen uint64) bool {
	if g.deadman == nil {
		return false
	}
	t, armed := g.deadman.Due(tool)
	return armed && t.Gen == gen
}

// afterDo says in r when the dead-man limit will revert the action, if a
// timer is armed (do settled it under the reservation).
func (g *Gateway) afterDo(c *capabilities.Capability, r *promcp.DoResult) {
	if g.revertRule(c.Do.Tool) == nil {
		return
	}
	if t, armed := g.deadman.Due(c.Do.Tool); armed && (r.AppliedValue == nil || !equalValue(r.AppliedValue, t.To)) {
		at := t.At.UTC()
		r.RevertAt = &at
	}
}

// revertAt is when the action's dead-man limit would revert it, for
// can_do: the armed timer, or now plus the limit.
func (g *Gateway) revertAt(c *capabilities.Capability) *time.Time {
	rule := g.revertRule(c.Do.Tool)
	if rule == nil {
		return nil
	}
	at := g.srv.Clock().Now().Add(rule.After)
	if t, armed := g.deadman.Due(c.Do.Tool); armed {
		at = t.At
	}
	at = at.UTC()
	return &at
}

// revert is a dead-man timer falling due: a move to the safe value
// through the one actuation path, acting for the policy under a role it
// allows, with its own idempotency key (per arming and try). Under the
// actuator's reservation it checks that t is still the armed timer: if a
// renewal re-armed it first, the revert is dropped (jobs.ErrRenewed).
func (g *Gateway) revert(ctx context.Context, t jobs.Timer) error {
	var c *capabilities.Capability
	for _, cc := range g.set.All() {
		if cc.Do != nil && cc.Do.Tool == t.Tool {
			c = cc
		}
	}
	if c == nil {
		return fmt.Errorf("%s is no longer served; dropping its timer", t.Tool)
	}
	caller := server.Caller{Name: DeadManCaller, Role: g.systemRole(t.Tool)}
	// The arming is named by when it ran and its Gen: a Gen alone restarts
	// from the store's after a restart, and a new arming reusing an old
	// revert's key would be answered from the idempotency store (replayed)
	// without writing: the actuator left on with its timer gone.
	key := fmt.Sprintf("deadman-%s-%d.%d-%d", t.Tool, t.Armed.UnixNano(), t.Gen, t.Tries)
	r := g.act(server.WithCaller(ctx, caller), c, server.Internal{Key: key, Caller: caller, Value: t.To}, actuation{revert: &t})
	if r.Status == promcp.StatusFailed && r.Reason == errRenewed {
		return jobs.ErrRenewed
	}
	if r.Status == promcp.StatusFailed {
		return fmt.Errorf("%s value=%s: %s", t.Tool, server.FormatValue(t.To), r.Reason)
	}
	return nil
}

// systemRole is a role the policy lets run tool, for the gateway's own
// reverts.
func (g *Gateway) systemRole(tool string) string {
	if pol := g.opts.Policy; pol != nil {
		if a := pol.Actions[tool]; a != nil && len(a.Roles) > 0 {
			return a.Roles[0]
		}
		if len(pol.DefaultRoles) > 0 {
			return pol.DefaultRoles[0]
		}
	}
	return g.opts.DefaultRole
}

// noteRevert writes a dead-man revert to the audit log.
func (g *Gateway) noteRevert(ctx context.Context, t jobs.Timer, err error) {
	rec := audit.Record{Event: EventDeadManRevert, Caller: DeadManCaller, Role: g.systemRole(t.Tool), Tool: t.Tool,
		Status: string(promcp.StatusSuccess),
		Reason: fmt.Sprintf("held %s since %s; reverted to %s at %s (limit due %s)", server.FormatValue(t.Value), t.Armed.UTC().Format(time.RFC3339),
			server.FormatValue(t.To), g.srv.Clock().Now().UTC().Format(time.RFC3339), t.At.UTC().Format(time.RFC3339))}
	if err != nil {
		rec.Status, rec.Reason = string(promcp.StatusFailed), "revert failed, retried later: "+err.Error()
	}
	rec.Arguments, _ = json.Marshal(map[string]any{"value": t.To})
	_ = g.srv.Audit(ctx, rec)
	g.srv.Logger().Info("dead-man revert", "tool", t.Tool, "to", t.To, "err", err)
}
