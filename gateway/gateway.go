// Package gateway is the manifest-driven proMCP gateway: it serves a
// capabilities.Set on a server.Server, one read_* per capability, one
// do_* per action and can_do over all of them, deciding each action with
// the policy and reserving its actuators.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/promcp/promcp-device/capabilities"
	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/jobs"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/policy"
	"github.com/promcp/promcp-device/promcp"
	"github.com/promcp/promcp-device/server"
)

// Gateway serves a capability set: one read_* per capability, one do_* per
// action, and can_do over all actions.
type Gateway struct {
	srv    *server.Server
	set    *capabilities.Set
	policy policy.Evaluator
	opts   GatewayOptions
	// units holds, by do_* tool, the actuators reserved with it.
	units map[string]policy.Unit

	engine *jobs.Engine // runs the manifest's jobs; nil without jobs
	// writer is the set's one actuator writer (capabilities.Set.TakeWriter),
	// used by do only.
	writer  *capabilities.Writer
	deadman *jobs.DeadMan // the policy's dead-man limits; nil without any
	holds   holds         // the actuators the running jobs hold
	bgStop  context.CancelFunc
	bgDone  chan struct{}
	// bgCtx ends with the gateway (Close); refreshes are can_do's reads
	// ahead in flight (refreshAhead), none begun once refreshEnd is set.
	bgCtx      context.Context
	refreshMu  sync.Mutex
	refreshEnd bool
	refreshes  sync.WaitGroup
	// gen counts the changes of the policy state that can_do answers
	// depend on (see answerCache).
	gen stateGen
	// jobsScope is the can_do scope of Serve's surface, which answers for
	// the jobs' start_* tools.
	jobsScope *scope
	// live is the capabilities' resources and history (ServeLive); nil
	// when not served.
	live *live
}

// GatewayOptions are the policy inputs of a Gateway.
type GatewayOptions struct {
	// Policy holds the rules of each action; nil applies the defaults only
	// (constraints, source health, and every role but viewer may act).
	Policy *manifests.Policy
	// State keeps the actuation history for cooldowns and rate limits;
	// nil means a new in-memory state.
	State policy.State
	// Reserver decides and reserves each action atomically against the
	// others in flight; nil means a policy.LocalReserver over State.
	Reserver policy.Reserver
	// DefaultRole is the role of calls that arrive without a caller (an
	// in-process client); "" means operator.
	DefaultRole string
	// Peers reports how many gateways are reachable, this one included;
	// nil means 1 (a single gateway).
	Peers func() int
	// Jobs are the manifest's long-running actions, served as start_*,
	// read_status_* and do_cancel_* on Serve's server (not on groups).
	Jobs []manifests.Job
	// JobStore keeps jobs and dead-man timers across restarts (jobs.Bolt
	// under --state); nil keeps them in memory.
	JobStore JobStore
	// RefreshAhead makes can_do read again, in the background, the
	// readings of an answer it gives again once they are half their TTL
	// old, so that the answer after them does not wait for the bus (see
	// scope.refreshAhead). Off, an answer whose readings aged out reads
	// them in the call.
	RefreshAhead bool
}

// Serve registers the tools of set on srv. Tools are registered in manifest
// order: reads, then actions, then can_do.
func Serve(srv *server.Server, set *capabilities.Set, opts ...GatewayOptions) (*Gateway, error) {
	g := &Gateway{srv: srv, set: set}
	g.holds.gen = &g.gen
	if len(opts) > 0 {
		g.opts = opts[0]
	}
	if g.opts.State == nil {
		g.opts.State = policy.NewMemoryState()
	}
	if g.opts.Reserver == nil {
		g.opts.Reserver = policy.NewLocalReserver(g.opts.State)
	}
	if g.opts.DefaultRole == "" {
		g.opts.DefaultRole = "operator"
	}
	g.units = units(set, g.opts.Policy)
	w, err := set.TakeWriter()
	if err != nil {
		return nil, err
	}
	g.writer = w
	if err := g.serve(srv, set.All()); err != nil {
		return nil, err
	}
	if err := g.startBackground(); err != nil {
		return nil, err
	}
	if err := g.serveJobs(srv); err != nil {
		return nil, err
	}
	return g, nil
}

// ServeGroup registers on srv the tools of the capabilities named (a tool
// group): their read_* and do_*, the same tools with the same handlers as
// on the server Serve was given, so one policy, one set of reservations
// and one actuation history decide them all (a cooldown started through
// one surface holds on every other), and a can_do scoped to them, whose
// candidates, blocked actions and related reads name only the group's
// tools. srv should share the idempotency store, audit log and approval
// ledger of Serve's server (server.Server.Surface makes such a server), so
// that a key or an approval spent through one surface is spent on all.
func (g *Gateway) ServeGroup(srv *server.Server, names []string) error {
	var caps []*capabilities.Capability
	for _, name := range names {
		c, ok := g.set.Get(name)
		if !ok {
			return fmt.Errorf("group: capability %q is not served by this gateway", name)
		}
		caps = append(caps, c)
	}
	// Manifest order, whatever the order of names.
	var ordered []*capabilities.Capability
	for _, c := range g.set.All() {
		if slices.Contains(caps, c) {
			ordered = append(ordered, c)
		}
	}
	if err := g.serve(srv, ordered); err != nil {
		return err
	}
	return g.serveJobDefs(srv, jobsWithin(g.opts.Jobs, names))
}

// serve registers the tools of caps on srv, in manifest order: reads, then
// actions, then can_do over caps.
func (g *Gateway) serve(srv *server.Server, caps []*capabilities.Capability) error {
	for _, c := range caps {
		if err := srv.Read(g.readTool(c), g.readHandler(c)); err != nil {
			return fmt.Errorf("capability %s: %w", c.Name, err)
		}
	}
	for _, c := range caps {
		if c.Do == nil {
			continue
		}
		if err := srv.Do(g.doTool(c), g.doHandler(c)); err != nil {
			return fmt.Errorf("capability %s: %w", c.Name, err)
		}
	}
	sc := newScope(g, caps)
	if g.jobsScope == nil {
		g.jobsScope = sc // Serve's surface, the one that serves the jobs' tools
	}
	return srv.CanDo(canDoDescription(caps), sc.canDo)
}

func (g *Gateway) readTool(c *capabilities.Capability) server.ReadTool {
	desc := c.Description
	if desc == "" {
		desc = "Read " + strings.ReplaceAll(c.Name, "_", " ") + "."
	}
	desc += fmt.Sprintf(" Returns {value, unit, timestamp, quality}; act only on quality good. Source: %s. Fresh for %s.", c.Source, c.TTL())
	return server.ReadTool{
		Name:        c.ReadTool(),
		Title:       title(c.Name),
		Description: desc,
		Unit:        promcp.Unit(c.Unit),
		Value:       valueSchema(c.Capability, false),
		Source:      c.Source,
		// Published once, referenced from each result's envelope: the
		// health lines of readEvidence's rebuttal (not its first, timed).
		Standing: server.Standing{Driver: c.Binding.Driver, Model: string(c.Model), Rebuttal: healthRebuttals(c)[1:]},
	}
}

func (g *Gateway) doTool(c *capabilities.Capability) server.DoTool {
	desc := c.Do.Description
	if desc == "" {
		desc = "Set " + strings.ReplaceAll(c.Name, "_", " ") + "."
	}
	if cons := constraintText(c.Capability); cons != "" {
		desc += " Allowed values: " + cons + "."
	}
	var ovRoles []string
	var ovTTL time.Duration
	if pol := g.opts.Policy; pol != nil && pol.Emergency != nil {
		ovRoles, ovTTL = pol.Emergency.Roles, pol.Emergency.TTL
	}
	return server.DoTool{
		ApprovalVia:   approvalVia(g.opts.Policy, c.Do.Tool),
		OverrideRoles: ovRoles,
		OverrideTTL:   ovTTL,
		BeginsItself:  true,
		Name:          c.Do.Tool,
		Title:         title(strings.TrimPrefix(c.Do.Tool, "do_")),
		Description:   desc,
		Value:         valueSchema(c.Capability, true),
		SideEffects:   c.Do.SideEffects,
		Compensable:   c.Do.Compensable,
		Source:        c.Source,
		Standing:      server.Standing{Driver: c.Binding.Driver, Model: string(c.Model)},
	}
}

func (g *Gateway) readHandler(c *capabilities.Capability) server.ReadHandler {
	health := healthRebuttals(c)
	return func(ctx context.Context, req server.ReadRequest) (promcp.ReadResult, error) {
		maxAge := c.TTL()
		if ms, ok := req.Args["max_age_ms"].(float64); ok && ms < float64(maxAge/time.Millisecond) {
			maxAge = time.Duration(ms * float64(time.Millisecond))
		}
		r := c.ReadWithin(ctx, maxAge)
		if g.live != nil {
			g.live.record(c, r)
		}
		res := readResult(c, r)
		res.Evidence = readEvidence(c, r, health)
		return res, nil
	}
}

func readResult(c *capabilities.Capability, r capabilities.Reading) promcp.ReadResult {
	res := promcp.ReadResult{Value: r.Value, Unit: promcp.Unit(c.Unit), Timestamp: r.Time, Quality: r.Quality, QualityReason: r.Reason}
	if r.Quality == promcp.QualityError {
		res.Value = nil
		msg := r.Reason
		if r.Err != nil {
			msg += ": " + r.Err.Error()
		}
		res.Error = &promcp.Error{Code: promcp.CodeSourceUnreachable, Message: msg}
	}
	return res
}

// doHandler runs a do_* call through the one actuation path (do).
func (g *Gateway) doHandler(c *capabilities.Capability) server.DoHandler {
	return g.handler(c, actuation{})
}

// handler is the DoHandler of an actuation of c: a do_* call's, or one
// the gateway makes on its own (act). It is the only caller of do.
func (g *Gateway) handler(c *capabilities.Capability, a actuation) server.DoHandler {
	return func(ctx context.Context, req server.DoRequest) (promcp.DoResult, error) {
		// Every change of the history, reservations and dead-man timers
		// happens in g.do: no can_do answer is reused or kept meanwhile.
		g.gen.begin()
		defer g.gen.end()
		tr := &doTrace{}
		r, err := g.do(ctx, c, req, tr, a)
		g.afterDo(c, &r)
		r.Evidence = doEvidence(c, req.Value, req.Approved, r, tr)
		return r, err
	}
}

// actuation is what an actuation the gateway makes on its own brings to
// do, beyond the request.
type actuation struct {
	// revert is the dead-man timer a revert belongs to: the revert is
	// dropped (errRenewed) when, under the actuator's reservation, it is
	// no longer the armed one (a renewal reserved first and won).
	revert *jobs.Timer
	// job is the job acting, whose holds do not refuse it.
	job string
	// outer begins the call this actuation is part of (a start_* call's
	// attempt, with its first step), once decided, before its own; nil for
	// none.
	outer func(context.Context) error
}

// errRenewed is the reason of a dead-man revert dropped because a renewal
// re-armed the timer first.
const errRenewed = "the dead-man timer was renewed: this revert is dropped"

// act runs an actuation the gateway makes on its own (a job step, a
// compensation, a dead-man revert) through the one path: the server's
// durable steps (idempotency key, attempt record, result record:
// server.Actuate) around do.
func (g *Gateway) act(ctx context.Context, c *capabilities.Capability, in server.Internal, a actuation) promcp.DoResult {
	in.Tool, in.SideEffects = c.Do.Tool, c.Do.SideEffects
	return g.srv.Actuate(ctx, in, g.handler(c, a))
}

// errNotBegun refuses a write that no attempt was begun for.
var errNotBegun = errors.New("no attempt was begun for this actuation (no idempotency key in flight, no audit attempt record): refusing to write")

// do is the one actuation path: every write to an actuator goes through
// it, and it runs only as a DoHandler (handler) under the server's durable
// steps (a do_* call, or server.Actuate). It decides and reserves the
// action (see policy.Reserver), begins the attempt (req.Begin: the key in
// flight and the audit attempt record, refusing to write when either
// fails; req.BeginSafe for a move to the safe value, which never refuses),
// arms the dead-man limit, writes, reads back, settles the dead-man timer
// and commits the reservation with what the device holds, or releases it
// when nothing changed. The result record is the server's.
func (g *Gateway) do(ctx context.Context, c *capabilities.Capability, req server.DoRequest, tr *doTrace, a actuation) (promcp.DoResult, error) {
	if req.Recovering {
		return g.recoverDo(ctx, c, req, tr), nil
	}
	if req.Begin == nil {
		return promcp.DoResult{}, errNotBegun
	}
	var before capabilities.Reading
	claim := g.claim(c, req.Value)
	res, d, err := g.opts.Reserver.Reserve(ctx, claim, func(ctx context.Context, v policy.View) policy.Decision {
		if a.revert != nil && !g.armedAs(c.Do.Tool, a.revert.Gen) {
			return policy.Decision{Permission: promcp.PolicyDenied, Reason: errRenewed}
		}
		before = c.Read(ctx)
		pr := g.request(ctx, c, req.Value, true, before)
		pr.Approved, pr.Override = req.Approved, req.Override
		v.Apply(&pr)
		tr.pr = pr
		if hd, held := g.holdRefusal(c, a.job, req.Value, pr.Now); held {
			return hd
		}
		return g.policy.Evaluate(pr)
	})
	tr.decided, tr.d, tr.reserved = err == nil, d, err == nil && d.Allowed()
	var previous any
	if before.Quality != promcp.QualityError {
		previous = before.Value
	}
	if r, refused := refusal(previous, d, err); refused {
		return r, nil
	}
	rv := &reserved{g: g, ctx: ctx, tool: c.Do.Tool, res: res, tr: tr}
	defer rv.onExit(d.Value)
	begin := req.Begin
	if policy.TowardSafe(d.Value, c.Do.SafeValue) && req.BeginSafe != nil {
		begin = req.BeginSafe
	}
	if a.outer != nil {
		begin = beginBoth(a.outer, begin)
	}
	if err := begin(ctx); err != nil {
		rv.end(nil, time.Time{}, false)
		return promcp.DoResult{}, err
	}
	value := d.Value
	rv.settle = g.armBefore(c, value)
	tr.wrote, tr.written = true, value
	if err := g.writer.Write(ctx, c, value); err != nil {
		return g.writeFailed(ctx, c, rv, previous, value, err), nil
	}
	wrote := g.srv.Clock().Now()
	if !sleep(ctx, g.srv.Clock(), c.Do.Settle) {
		rv.end(value, wrote, true)
		return promcp.DoResult{Status: promcp.StatusPartial, PreviousValue: previous, AppliedValue: value,
			Reason: "written, but the call ended before the settle time passed: not read back"}, nil
	}
	return g.readBack(ctx, c, rv, req.Value, d, previous, wrote), nil
}

// beginBoth begins outer, then inner; it fails with the first that fails.
func beginBoth(outer, inner func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		if err := outer(ctx); err != nil {
			return fmt.Errorf("%w: %w", errOuterNotBegun, err)
		}
		return inner(ctx)
	}
}

// errOuterNotBegun marks a call whose own attempt could not begin.
var errOuterNotBegun = errors.New("not actuated")

// refusal is the answer to an action that could not be reserved (err) or
// that the policy did not allow; refused is false when it may go ahead.
func refusal(previous any, d policy.Decision, err error) (r promcp.DoResult, refused bool) {
	if err != nil {
		reason := "another action on this actuator is still in progress: " + err.Error()
		return promcp.DoResult{Status: promcp.StatusFailed, PreviousValue: previous,
			Permission: promcp.PolicyDenied, Reason: reason,
			Error: &promcp.Error{Code: promcp.CodeRefused, Message: reason}}, true
	}
	if !d.Allowed() {
		reason := d.Reason
		if d.Details != "" {
			reason += " (" + d.Details + ")"
		}
		return promcp.DoResult{Status: promcp.StatusFailed, PreviousValue: previous,
			Permission: d.Permission, Reason: reason,
			Error: &promcp.Error{Code: promcp.CodeRefused, Field: "value", Message: reason}}, true
	}
	return promcp.DoResult{}, false
}

// reserved is an action's reservation, ended once: committed with what
// the device holds when it actuated, released when nothing changed.
type reserved struct {
	g     *Gateway
	ctx   context.Context
	tool  string
	res   *policy.Reservation
	ended bool
	tr    *doTrace // the call's evidence: the readback is noted there
	// settle settles the dead-man timer with what the actuator holds,
	// while the reservation is still held (so no renewal runs between).
	settle func(applied any, actuated bool)
}

func (rv *reserved) end(applied any, at time.Time, actuated bool) {
	rv.ended = true
	if rv.settle != nil {
		rv.settle(applied, actuated)
	}
	var err error
	if actuated {
		err = rv.g.opts.Reserver.Commit(rv.ctx, rv.res, at, applied)
	} else {
		err = rv.g.opts.Reserver.Release(rv.ctx, rv.res)
	}
	if err != nil {
		rv.g.srv.Logger().Error("ending a reservation", "tool", rv.tool, "err", err)
	}
}

// onExit ends a reservation that a panic or an early return left open:
// it frees the actuator, counted as actuated with value.
func (rv *reserved) onExit(value any) {
	if !rv.ended {
		rv.end(value, rv.g.srv.Clock().Now(), true)
	}
}

// writeFailed answers a write that failed: it may or may not have reached
// the device, so the actuator is read back to say honestly what it holds.
func (g *Gateway) writeFailed(ctx context.Context, c *capabilities.Capability, rv *reserved, previous, value any, err error) promcp.DoResult {
	after := c.Read(ctx)
	rv.tr.after = &after
	r := promcp.DoResult{Status: promcp.StatusFailed, PreviousValue: previous,
		Reason: "write failed: " + err.Error(),
		Error:  &promcp.Error{Code: promcp.CodeSourceUnreachable, Message: err.Error()}}
	switch {
	case after.Quality != promcp.QualityError && !equalValue(after.Value, previous):
		r.Status, r.AppliedValue = promcp.StatusPartial, after.Value
		rv.end(after.Value, g.srv.Clock().Now(), true)
		g.compensation(c, &r, previous)
	case after.Quality == promcp.QualityError:
		// Unknown: count it, so that a cooldown is not weakened.
		rv.end(value, g.srv.Clock().Now(), true)
	default:
		rv.end(nil, time.Time{}, false)
	}
	return r
}

// readBack answers a write that settled: what the device reads back, the
// value requested when the policy clamped it, and the compensation.
func (g *Gateway) readBack(ctx context.Context, c *capabilities.Capability, rv *reserved, requested any, d policy.Decision, previous any, wrote time.Time) promcp.DoResult {
	value := d.Value
	after := c.Read(ctx)
	rv.tr.after = &after
	r := promcp.DoResult{Status: promcp.StatusSuccess, PreviousValue: previous, AppliedValue: value}
	if d.Clamped {
		r.RequestedValue = requested
		r.Reason = fmt.Sprintf("requested %v, clamped to %v by policy", server.FormatValue(requested), server.FormatValue(value))
	}
	if requested != nil && d.Reason != "" && !d.Clamped {
		r.Reason = d.Reason // the safe value's note
	}
	if after.Quality == promcp.QualityError {
		r.Status = promcp.StatusPartial
		r.Reason = joinReason(r.Reason, "written, but the readback failed: "+after.Reason)
		rv.end(value, wrote, true)
	} else {
		r.AppliedValue = after.Value
		if !equalValue(after.Value, value) {
			r.Status = promcp.StatusPartial
			r.Reason = joinReason(r.Reason, fmt.Sprintf("wrote %v but the device reads back %v", value, after.Value))
		}
		rv.end(after.Value, wrote, true)
	}
	g.compensation(c, &r, previous)
	return r
}

// claim is what reserving action c with value asks for.
func (g *Gateway) claim(c *capabilities.Capability, value any) policy.Claim {
	cl := policy.Claim{Action: c.Do.Tool, Read: c.ReadTool(), Unit: g.units[c.Do.Tool], Value: value, Now: g.srv.Clock().Now()}
	if pol := g.opts.Policy; pol != nil {
		if r := pol.Actions[c.Do.Tool]; r != nil {
			cl.Window = max(r.Cooldown, 0)
			if r.RateLimit != nil {
				cl.Window = max(cl.Window, r.RateLimit.Per)
			}
		}
	}
	return cl
}

// units ties each action to the actuators reserved with it: those an
// interlock of either reads (directly, or through another capability of the
// same device), and those on the same device. Ties are symmetric and
// transitive: a unit is a connected set, so that a fleet can keep one
// record per unit.
func units(set *capabilities.Set, pol *manifests.Policy) map[string]policy.Unit {
	parent := map[string]string{}
	var find func(string) string
	find = func(a string) string {
		if p, ok := parent[a]; ok && p != a {
			r := find(p)
			parent[a] = r
			return r
		}
		parent[a] = a
		return a
	}
	union := func(a, b string) { parent[find(a)] = find(b) }
	byDevice := map[string][]string{} // device → do tools on it
	for _, c := range set.All() {
		if c.Do != nil {
			find(c.Do.Tool)
			byDevice[c.Capability.Read.Device] = append(byDevice[c.Capability.Read.Device], c.Do.Tool)
		}
	}
	for _, tools := range byDevice {
		for _, t := range tools[1:] {
			union(tools[0], t)
		}
	}
	if pol != nil {
		for tool, rules := range pol.Actions {
			if _, ok := parent[tool]; !ok {
				continue
			}
			for _, il := range rules.Interlocks {
				if o, ok := set.Get(strings.TrimPrefix(il.Read, "read_")); ok {
					for _, t := range byDevice[o.Capability.Read.Device] {
						union(tool, t)
					}
				}
			}
		}
	}
	out := map[string]policy.Unit{}
	for t := range parent {
		r := find(t)
		out[r] = append(out[r], t)
	}
	byTool := map[string]policy.Unit{}
	for _, u := range out {
		slices.Sort(u)
		for _, t := range u {
			byTool[t] = u
		}
	}
	return byTool
}

// recoverDo answers a retry of an attempt that never finished (the server
// stopped during it): it reads the actuator back and reports what it holds,
// without writing. A value the policy clamped then reads back as partial:
// the requested value is all the retry carries.
func (g *Gateway) recoverDo(ctx context.Context, c *capabilities.Capability, req server.DoRequest, tr *doTrace) promcp.DoResult {
	const why = "an earlier attempt with this idempotency_key did not finish (the server stopped during it); nothing was written now"
	now := c.Read(ctx)
	tr.after = &now
	if now.Quality == promcp.QualityError {
		reason := why + ", and the device cannot be read: whether it applied is unknown; read it, then act with a new key"
		return promcp.DoResult{Status: promcp.StatusFailed, Reason: reason,
			Error: &promcp.Error{Code: promcp.CodeSourceUnreachable, Message: reason + ": " + now.Reason}}
	}
	if equalValue(now.Value, req.Value) {
		return promcp.DoResult{Status: promcp.StatusSuccess, AppliedValue: now.Value,
			Reason: why + "; the device reads back the requested value"}
	}
	return promcp.DoResult{Status: promcp.StatusPartial, AppliedValue: now.Value,
		Reason: fmt.Sprintf("%s; the device reads back %s, not the requested %s", why, server.FormatValue(now.Value), server.FormatValue(req.Value))}
}

// sleep waits d on clk unless ctx ends first; it reports whether d passed.
// The settle wait runs on the server's clock, so a simulated gateway
// settles in simulated time.
func sleep(ctx context.Context, clk clock.Clock, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	return clock.Sleep(ctx, clk, d) == nil
}

func joinReason(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// compensation fills the hint that reverses the action, when the previous
// value is known.
func (g *Gateway) compensation(c *capabilities.Capability, r *promcp.DoResult, previous any) {
	r.Compensable = c.Do.Compensable && previous != nil
	if r.Compensable {
		r.CompensationHint = promcp.Hint(fmt.Sprintf("%s value=%s", c.Do.Tool, server.FormatValue(previous)))
	}
}

// request gathers what the policy evaluation of an action needs: the
// actuator's reading, the readings its safety depends on and those of its
// interlocks (through the cache), the caller's role, the actuation
// history, the rules and the time.
func (g *Gateway) request(ctx context.Context, c *capabilities.Capability, value any, hasValue bool, current capabilities.Reading) policy.Request {
	now := g.srv.Clock().Now()
	role := server.CallerFrom(ctx).Role
	if role == "" {
		role = g.opts.DefaultRole
	}
	req := policy.Request{
		Action:      c.Do.Tool,
		Type:        c.Type,
		Value:       value,
		HasValue:    hasValue,
		Constraints: c.Do.Constraints,
		Unit:        c.Unit,
		Compensable: c.Do.Compensable,
		Current:     &policy.Reading{Value: current.Value, Time: current.Time, Quality: current.Quality, TTL: c.TTL(), Reason: current.Reason},
		CurrentRead: c.ReadTool(),
		Role:        role,
		Peers:       1,
		Now:         now,
	}
	if g.opts.Peers != nil {
		req.Peers = g.opts.Peers()
	}
	for _, name := range c.Do.DependsOn {
		if dep, ok := g.set.Get(name); ok {
			r := dep.Read(ctx)
			req.Inputs = append(req.Inputs, policy.Input{Name: dep.ReadTool(),
				Reading: policy.Reading{Value: r.Value, Time: r.Time, Quality: r.Quality, TTL: dep.TTL(), Reason: r.Reason}})
		}
	}
	if pol := g.opts.Policy; pol != nil {
		req.DefaultRoles = pol.DefaultRoles
		req.Rules = pol.Actions[c.Do.Tool]
	}
	req.SafeValue = c.Do.SafeValue
	// The history comes with the reservation's view (policy.View.Apply).
	if r := req.Rules; r != nil {
		for _, il := range r.Interlocks {
			if req.Readings == nil {
				req.Readings = map[string]policy.Reading{}
			}
			if other, ok := g.set.Get(strings.TrimPrefix(il.Read, "read_")); ok {
				rd := other.Read(ctx)
				req.Readings[il.Read] = policy.Reading{Value: rd.Value, Time: rd.Time, Quality: rd.Quality, TTL: other.TTL(), Reason: rd.Reason}
			}
		}
	}
	return req
}

// valueSchema is the JSON Schema of a capability's value; with bounds, the
// action's constraints are included for clients to see.
func valueSchema(c manifests.Capability, bounds bool) map[string]any {
	m := map[string]any{}
	switch c.Type {
	case manifests.TypeNumber:
		m["type"] = "number"
	case manifests.TypeInteger:
		m["type"] = "integer"
	case manifests.TypeBoolean:
		m["type"] = "boolean"
	case manifests.TypeEnum:
		m["type"] = "string"
	}
	if c.Unit != "" {
		m["description"] = "In " + c.Unit + "."
	}
	if bounds && c.Do != nil {
		k := c.Do.Constraints
		if k.Min != nil {
			m["minimum"] = *k.Min
		}
		if k.Max != nil {
			m["maximum"] = *k.Max
		}
		if len(k.Enum) > 0 {
			m["enum"] = k.Enum
		}
	}
	return m
}

func constraintText(c manifests.Capability) string {
	k := c.Do.Constraints
	var parts []string
	unit := ""
	if c.Unit != "" {
		unit = " " + c.Unit
	}
	if k.Min != nil && k.Max != nil {
		parts = append(parts, fmt.Sprintf("%v to %v%s", *k.Min, *k.Max, unit))
	} else if k.Min != nil {
		parts = append(parts, fmt.Sprintf("at least %v%s", *k.Min, unit))
	} else if k.Max != nil {
		parts = append(parts, fmt.Sprintf("at most %v%s", *k.Max, unit))
	}
	if k.Step != nil {
		parts = append(parts, fmt.Sprintf("in steps of %v", *k.Step))
	}
	if len(k.Enum) > 0 {
		parts = append(parts, "one of "+strings.Join(k.Enum, ", "))
	}
	if c.Type == manifests.TypeBoolean {
		parts = append(parts, "true or false")
	}
	return strings.Join(parts, ", ")
}

func title(name string) string {
	words := strings.Split(name, "_")
	for i, w := range words {
		if w != "" {
			words[i] = strings.ToUpper(w[:1]) + w[1:]
		}
	}
	return strings.Join(words, " ")
}

// equalValue is policy.SameValue: one tolerance for "the same value" in
// the policy, the read-back and the dead-man.
func equalValue(a, b any) bool { return policy.SameValue(a, b) }

// approvalVia returns how the policy lets a human approve tool:
// manifests.ViaElicitation only where the policy opts in, out-of-band
// otherwise (also where the policy says nothing, for the approval that a
// doubtful reading asks for).
func approvalVia(pol *manifests.Policy, tool string) string {
	if pol != nil {
		if a := pol.Actions[tool]; a != nil && a.Approval != nil && a.Approval.Via == manifests.ViaElicitation {
			return manifests.ViaElicitation
		}
	}
	return manifests.ViaOutOfBand
}
