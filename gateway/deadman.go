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
// reverts. Writing the revert value itself arms nothing.
func (g *Gateway) armBefore(c *capabilities.Capability, value any) {
	rule := g.revertRule(c.Do.Tool)
	if rule == nil || equalValue(value, rule.To) {
		return
	}
	now := g.srv.Clock().Now()
	t := jobs.Timer{Tool: c.Do.Tool, To: rule.To, At: now.Add(rule.After), Armed: now, Value: value}
	if err := g.deadman.Arm(t); err != nil {
		g.srv.Logger().Error("dead-man timer not recorded: it holds in memory only", "tool", c.Do.Tool, "err", err)
	}
}

// afterDo settles the dead-man timer with what the device holds after an
// action, and says in r when the revert will happen.
func (g *Gateway) afterDo(c *capabilities.Capability, r *promcp.DoResult) {
	rule := g.revertRule(c.Do.Tool)
	if rule == nil {
		return
	}
	if r.Status != promcp.StatusFailed && r.AppliedValue != nil && equalValue(r.AppliedValue, rule.To) {
		if err := g.deadman.Disarm(c.Do.Tool); err != nil {
			g.srv.Logger().Error("dead-man timer", "tool", c.Do.Tool, "err", err)
		}
		return
	}
	if t, armed := g.deadman.Due(c.Do.Tool); armed {
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

// revert is a dead-man timer falling due: the action's do_* path with the
// revert value, acting for the policy under a role it allows.
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
	ctx = server.WithCaller(ctx, server.Caller{Name: DeadManCaller, Role: g.systemRole(t.Tool)})
	r, err := g.do(ctx, c, server.DoRequest{Tool: t.Tool, Value: t.To, IdempotencyKey: "deadman-" + t.Armed.UTC().Format(time.RFC3339Nano)}, &doTrace{})
	if err != nil {
		return err
	}
	g.afterDo(c, &r)
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
