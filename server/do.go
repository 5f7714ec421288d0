package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/promcp/promcp-device/approval"
	"github.com/promcp/promcp-device/audit"
	"github.com/promcp/promcp-device/idempotency"
	"github.com/promcp/promcp-device/internal/waitgroup"
	"github.com/promcp/promcp-device/promcp"
)

// Auditor records do_* attempts, results and refusals. Append returns once
// the record is durable; an error means it is not, and the server then does
// not actuate. *audit.Log implements it.
type Auditor interface {
	Append(ctx context.Context, r audit.Record) error
}

// Authorizer says whether c may call a tool of kind k. A refused do_* call
// is answered failed with permission permission_insufficient.
type Authorizer func(c Caller, k promcp.Kind) bool

// Roles the default authorizer knows.
const (
	RoleViewer     = "viewer"
	RoleOperator   = "operator"
	RoleSupervisor = "supervisor"
	RoleAdmin      = "admin"
)

// DefaultAuthorizer lets every caller read and call can_do, and every role
// but viewer call do_*. It is the transport-level gate; the policy then
// checks the roles each action allows (manifest policy roles), which may be
// narrower. A server given WithRoles uses the policy's roles instead.
func DefaultAuthorizer(c Caller, k promcp.Kind) bool {
	return k != promcp.KindDo || c.Role != RoleViewer
}

// Roles are the roles a policy declares and which of them are read-only
// (manifests.Policy Roles and ReadOnly).
type Roles struct {
	Declared, ReadOnly []string
}

// WithRoles makes the server's transport-level gate the policy's roles:
// every caller may read and call can_do; only a declared role that is not
// read-only may call do_* and start_*. A refusal says which it is.
func WithRoles(r Roles) Option {
	return func(s *Server) {
		r := Roles{Declared: slices.Clone(r.Declared), ReadOnly: slices.Clone(r.ReadOnly)}
		s.roles = &r
		s.authorize = func(c Caller, k promcp.Kind) bool { return k != promcp.KindDo || r.why(c.Role) == "" }
	}
}

// why says why role may not act, or "" when it may. A call without a
// caller (role "") comes from inside the process, not over a transport,
// which always names one: the gateway gives it its default role.
func (r *Roles) why(role string) string {
	switch {
	case role == "":
		return ""
	case !slices.Contains(r.Declared, role):
		return fmt.Sprintf("role %q is not declared by the policy, so it may not act (declared: %s); fix the token's or --role's role, or declare it in the policy's roles",
			role, strings.Join(r.Declared, ", "))
	case slices.Contains(r.ReadOnly, role):
		return fmt.Sprintf("role %q is read-only in the policy: it reads and asks can_do but may not call do_* or start_* tools", role)
	}
	return ""
}

// mayNotAct says why c may not call do_* tools.
func (s *Server) mayNotAct(c Caller) string {
	if s.roles != nil {
		if why := s.roles.why(c.Role); why != "" {
			return why
		}
	}
	return fmt.Sprintf("role %q may not call do_* tools (a viewer reads and asks can_do)", c.Role)
}

// actuationTimeout bounds a do_* handler once its attempt has begun; the
// attempt no longer depends on the client's context.
const actuationTimeout = time.Minute

// errNotActuated marks action failures that happened before any actuation,
// so nothing is kept for the key.
var errNotActuated = errors.New("not actuated")

// Shutdown stops taking do_* calls (they are refused with a typed body) and
// waits until the calls in flight have finished and been recorded, or ctx
// ends. Reads and can_do keep working until the transport stops.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	if err := waitgroup.Wait(ctx, &s.inflight); err != nil {
		return fmt.Errorf("waiting for do_* calls in flight: %w", err)
	}
	return nil
}

// enter counts a do_* call in flight, unless the server is shutting down.
func (s *Server) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.inflight.Add(1)
	return true
}

// doCall is one do_* call on its way through the server: what the steps of
// Server.do share.
type doCall struct {
	s      *Server
	t      DoTool
	h      DoHandler
	req    mcp.CallToolRequest
	caller Caller
	start  time.Time
	base   promcp.DoResult

	args      map[string]any
	argsValid bool // schema-invalid arguments are recorded as size and hash only
	key       string
	fp        string
	appr      *audit.Approval  // who approved this call, once known
	grant     *approval.Grant  // the one-time approval token it spends, if any
	evidence  *promcp.Evidence // the handler's, for the envelope (not kept for replay)
	internal  bool             // the gateway's own actuation (Actuate): a failed try is not kept
}

// do runs a do_* call. It returns the typed result, or, when a human must
// approve and the client can ask one, the elicitation to send instead.
func (s *Server) do(ctx context.Context, t DoTool, h DoHandler, req mcp.CallToolRequest) (promcp.DoResult, *mcp.CallToolResult) {
	c := &doCall{s: s, t: t, h: h, req: req, caller: CallerFrom(ctx), start: time.Now(),
		base: promcp.DoResult{SideEffects: t.SideEffects, Compensable: t.Compensable}}

	// Types are checked here; bounds are the policy's, so that a value out
	// of range is refused with the out_of_range permission.
	args, argErr := s.argumentsFor("type:"+t.Name, req)
	c.args, c.argsValid = args, argErr == nil
	key, _ := args["idempotency_key"].(string)
	if key == "" {
		key = newKey()
	}
	c.key = audit.BoundKey(key) // a valid key as it is; an invalid one never echoed whole
	if !s.enter() {
		return c.refuse(ctx, c.fail(&promcp.Error{Code: promcp.CodeRefused,
			Message: "the server is shutting down; retry with the same idempotency_key once it is back"})), nil
	}
	defer s.inflight.Done()
	if r, refused := c.admit(ctx, argErr); refused {
		return c.refuse(ctx, r), nil
	}
	outcome, replayed, err := s.store.Do(ctx, c.key, c.fp, c.act)
	return c.answer(ctx, outcome, replayed, err)
}

// fail is the failed result of this call with error e: nothing was done,
// so nothing is compensable.
func (c *doCall) fail(e *promcp.Error) promcp.DoResult {
	r := c.base
	r.Status, r.IdempotencyKey, r.Error, r.Reason = promcp.StatusFailed, c.key, e, e.Message
	r.Compensable, r.CompensationHint = false, nil // nothing was done, nothing to reverse
	r.Timestamp = c.s.clock.Now().UTC()
	return r
}

// record appends the audit record of event (with the result r, if any);
// an error means it is not durable, and has been logged.
func (c *doCall) record(ctx context.Context, event string, r *promcp.DoResult) error {
	if c.s.auditor == nil {
		return nil
	}
	err := c.s.auditor.Append(ctx, c.auditRecord(event, r))
	if err != nil {
		c.s.log.Error("audit record not written", "tool", c.t.Name, "key", c.key, "event", event, "err", err)
	}
	return err
}

// recordKept appends the audit record of event like record, but a record
// that cannot be written now is kept and written as soon as the log takes
// an append (backlog): for what has moved, or moves to the safe value.
func (c *doCall) recordKept(ctx context.Context, event string, r *promcp.DoResult) error {
	b, ok := c.s.auditor.(*backlog)
	if !ok {
		return c.record(ctx, event, r)
	}
	err := b.appendOrKeep(ctx, c.auditRecord(event, r))
	if err != nil {
		c.s.log.Error("audit record not written yet: kept, written as soon as the log takes it", "tool", c.t.Name, "key", c.key, "event", event, "err", err)
	}
	return err
}

func (c *doCall) auditRecord(event string, r *promcp.DoResult) audit.Record {
	s := c.s
	rec := audit.Record{Time: s.clock.Now(), Event: event, Caller: c.caller.Name, Role: c.caller.Role, Via: c.caller.Via, Tool: c.t.Name, Key: c.key,
		Arguments: audit.Args(rawArguments(c.req), c.argsValid), DurationMS: float64(time.Since(c.start).Microseconds()) / 1000,
		Approval: c.appr}
	if r != nil {
		rec.Status, rec.Permission, rec.Reason = string(r.Status), string(r.Permission), r.Reason
		if r.Error != nil && rec.Reason == "" {
			rec.Reason = r.Error.Message
		}
		rec.Result, _ = json.Marshal(r)
	}
	return rec
}

// refuse records the refusal r and returns it.
func (c *doCall) refuse(ctx context.Context, r promcp.DoResult) promcp.DoResult {
	_ = c.record(ctx, audit.EventRefused, &r) // nothing moved; the answer stands
	return r
}

// admit runs the checks made before the idempotency store is asked: the
// caller's role, a server that refuses every do_*, the arguments (argErr)
// and the approval the policy may ask for. It returns the refusal, if any.
func (c *doCall) admit(ctx context.Context, argErr *promcp.Error) (promcp.DoResult, bool) {
	s := c.s
	if !s.authorize(c.caller, promcp.KindDo) {
		r := c.fail(&promcp.Error{Code: promcp.CodeRefused, Message: s.mayNotAct(c.caller)})
		r.Permission = promcp.PermissionInsufficient
		return r, true
	}
	if s.refuseDo != "" {
		r := c.fail(&promcp.Error{Code: promcp.CodeRefused, Message: s.refuseDo})
		r.Permission = promcp.PolicyDenied
		return r, true
	}
	if argErr != nil {
		return c.fail(argErr), true
	}
	c.fp = fingerprint(c.t.Name, c.args)
	var refusal *promcp.Error
	c.appr, c.grant, refusal = s.approval(ctx, c.t, c.req, c.args, c.key, c.fp)
	if refusal != nil {
		r := c.fail(refusal)
		r.Permission = promcp.RequiresHumanApproval
		return r, true
	}
	if c.appr == nil && s.desk != nil {
		c.appr, c.grant = s.desk.granted(c.t.Name, c.caller, c.key, c.fp) // approved in the operator console
	}
	return promcp.DoResult{}, false
}

// act is the action the idempotency store runs at most once per key: it
// begins the attempt, runs the handler and records the result.
func (c *doCall) act(ctx context.Context, at idempotency.Attempt) ([]byte, bool, error) {
	// The attempt has begun: finish it even if the client goes away.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), actuationTimeout)
	defer cancel()
	begin, beginSafe, beginErr := c.beginner(at)
	var handlerBegin, handlerBeginSafe func(context.Context) error
	switch {
	case at.Recovering:
	case c.t.BeginsItself:
		handlerBegin, handlerBeginSafe = begin, beginSafe
	default:
		if err := begin(ctx); err != nil {
			return nil, false, err
		}
	}
	r := c.run(ctx, at, handlerBegin, handlerBeginSafe)
	c.evidence = r.Evidence
	if err := beginErr(); err != nil {
		return nil, false, err // nothing was actuated
	}
	keep := keepOutcome(r)
	c.spend(keep)
	event := audit.EventResult
	switch {
	case at.Recovering:
		event = audit.EventRecovered
	case !keep:
		event = audit.EventRefused
	}
	if c.internal && r.Status == promcp.StatusFailed {
		// The gateway's own actuation (a job step, a compensation, a
		// revert) retries with the same key: a failed try is not kept, or
		// the retry (a compensation at restart) would be answered from it
		// and never write.
		keep = false
	}
	_ = c.recordKept(ctx, event, &r) // the device has been touched: answer whatever the log says, record it when it can
	b, merr := json.Marshal(r)
	if merr != nil {
		return nil, false, fmt.Errorf("encoding result: %w", merr)
	}
	return b, keep, nil
}

// beginner returns how the attempt begins, once: beginning makes it
// durable, the key in flight, then the audit "attempt" record. A handler
// that decides first (BeginsItself) begins only once its policy allowed
// the action, so a refusal writes neither; otherwise the attempt begins
// before the handler runs. failed reports the beginning's error, if it
// began and failed.
//
// beginSafe begins a move to the declared safe value (policy.TowardSafe):
// it never refuses. What it cannot record now (a full state disk) is
// logged, and its audit record is kept and written first as soon as the
// log takes an append; until then every other action is refused (its own
// attempt record cannot be written ahead of the kept one). See docs/policy.md,
// "A full state disk".
func (c *doCall) beginner(at idempotency.Attempt) (begin, beginSafe func(context.Context) error, failed func() error) {
	var began bool
	var beginErr error
	begin = func(ctx context.Context) error {
		if began {
			return beginErr
		}
		began = true
		if err := at.Begin(ctx); err != nil {
			beginErr = fmt.Errorf("%w: idempotency store unavailable, refusing to actuate: %w", errNotActuated, err)
		} else if err := c.record(ctx, audit.EventAttempt, nil); err != nil {
			beginErr = fmt.Errorf("%w: audit log unavailable, refusing to actuate: %w", errNotActuated, err)
		}
		return beginErr
	}
	beginSafe = func(ctx context.Context) error {
		if began {
			return beginErr
		}
		began = true
		if err := at.Begin(ctx); err != nil {
			c.s.log.Error("idempotency store unavailable: moving to the safe value anyway", "tool", c.t.Name, "key", c.key, "err", err)
		}
		_ = c.recordKept(ctx, audit.EventAttempt, nil)
		return nil
	}
	return begin, beginSafe, func() error { return beginErr }
}

// run calls the handler (unless the approval it carries is already spent)
// and completes its result: key, recovery, side effects, time.
func (c *doCall) run(ctx context.Context, at idempotency.Attempt, begin, beginSafe func(context.Context) error) promcp.DoResult {
	s := c.s
	var r promcp.DoResult
	var err error
	if c.grant != nil && !at.Recovering && s.ledger.Used(*c.grant, s.clock.Now()) {
		r = c.fail(&promcp.Error{Code: promcp.CodeInvalidArgument, Field: "approval", Message: approval.ErrUsed.Error()})
		r.Permission = promcp.RequiresHumanApproval
	} else {
		r, err = c.h(ctx, DoRequest{Tool: c.t.Name, Value: c.args["value"], IdempotencyKey: c.key, Args: c.args, Caller: c.caller,
			Approved: c.appr != nil, Override: c.appr != nil && c.appr.Method == approval.ViaOverride, Recovering: at.Recovering, Begin: begin, BeginSafe: beginSafe})
	}
	if err != nil {
		s.log.Error("do handler failed", "tool", c.t.Name, "key", c.key, "err", err)
		r = c.fail(&promcp.Error{Code: promcp.CodeInternal, Message: err.Error()})
	}
	r.IdempotencyKey = c.key
	r.Recovered = at.Recovering
	if r.SideEffects == nil {
		r.SideEffects = c.t.SideEffects
	}
	if r.Timestamp.IsZero() {
		r.Timestamp = s.clock.Now()
	}
	r.Timestamp = r.Timestamp.UTC()
	return r
}

// spend marks the one-time approval used when the action it approved was
// kept (it ran).
func (c *doCall) spend(kept bool) {
	if !kept || c.grant == nil {
		return
	}
	if err := c.s.ledger.Use(*c.grant, c.s.clock.Now()); err != nil {
		// The action is done and its result kept under this key;
		// only a retry after the key expires could reuse the token.
		c.s.log.Error("approval not recorded as spent", "tool", c.t.Name, "key", c.key, "approval", c.grant.ID, "err", err)
	}
	if c.s.desk != nil {
		c.s.desk.spent(*c.grant)
	}
}

// answer turns what the store returned into the call's result: a conflict
// or store failure as failed, an unrecorded outcome as partial, a replay
// recorded, and an approval to elicit where the client can answer one.
func (c *doCall) answer(ctx context.Context, outcome []byte, replayed bool, err error) (promcp.DoResult, *mcp.CallToolResult) {
	unrecorded := errors.Is(err, idempotency.ErrNotRecorded) && outcome != nil
	if unrecorded {
		err = nil // the device was touched: answer, as partial (markUnrecorded)
	}
	switch {
	case errors.Is(err, idempotency.ErrConflict):
		return c.refuse(ctx, c.fail(&promcp.Error{Code: promcp.CodeIdempotencyConflict, Field: "idempotency_key",
			Message: fmt.Sprintf("idempotency_key %q was used with different arguments; use a new key for a new action", c.key)})), nil
	case err != nil:
		return c.fail(&promcp.Error{Code: promcp.CodeInternal, Message: err.Error()}), nil
	}
	var out promcp.DoResult
	if err := json.Unmarshal(outcome, &out); err != nil {
		return c.fail(&promcp.Error{Code: promcp.CodeInternal, Message: "stored result is unreadable: " + err.Error()}), nil
	}
	if unrecorded {
		markUnrecorded(&out)
	}
	out.Replayed = replayed
	if !replayed {
		out.Evidence = c.evidence
	}
	if replayed {
		_ = c.record(ctx, audit.EventReplayed, &out)
	}
	if out.Permission == promcp.RequiresHumanApproval && c.appr == nil && c.t.ApprovalVia == approval.ViaElicitation && clientCanElicit(ctx) {
		return out, c.s.askApproval(c.t, c.args, c.key, c.fp, out.Reason)
	}
	if out.Permission == promcp.RequiresHumanApproval && c.appr == nil && c.s.desk != nil {
		out.Reason += "; " + c.s.desk.ask(c.t, c.caller, c.args["value"], c.key, c.fp, out.Reason)
	}
	return out, nil
}

// keepOutcome says whether a do result is kept for replay: refusals and bad
// arguments touched nothing, so a retry is evaluated afresh.
func keepOutcome(r promcp.DoResult) bool {
	if r.Status != promcp.StatusFailed {
		return true
	}
	if r.Permission != "" && r.Permission != promcp.Allowed {
		return false
	}
	return r.Error == nil || r.Error.Code != promcp.CodeInvalidArgument
}

// restrictCandidates moves the can_do candidates this caller could not
// run to blocked, with the permission do_* would answer: on a read-only
// server (which serves no do_*) every action is policy_denied, one the caller's
// role may not run is permission_insufficient. So can_do and do_* agree.
func (s *Server) restrictCandidates(c Caller, rep *promcp.CapabilityReport) {
	mayDo := s.authorize(c, promcp.KindDo)
	kept := rep.Candidates[:0]
	for _, cand := range rep.Candidates {
		var b *promcp.Blocked
		switch {
		case s.readOnly:
			b = &promcp.Blocked{Permission: promcp.PolicyDenied, Reason: "this gateway serves read-only: " + cand.Capability + " is not available"}
		case s.refuseDo != "":
			b = &promcp.Blocked{Permission: promcp.PolicyDenied, Reason: s.refuseDo}
		case !mayDo:
			b = &promcp.Blocked{Permission: promcp.PermissionInsufficient, Reason: s.mayNotAct(c)}
		}
		if b == nil {
			kept = append(kept, cand)
			continue
		}
		b.Capability, b.Source = cand.Capability, cand.Source
		rep.Blocked = append(rep.Blocked, *b)
	}
	rep.Candidates = kept
}
