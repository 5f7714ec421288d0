package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/promcp/promcp-device/approval"
	"github.com/promcp/promcp-device/audit"
	"github.com/promcp/promcp-device/idempotency"
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
// narrower.
func DefaultAuthorizer(c Caller, k promcp.Kind) bool {
	return k != promcp.KindDo || c.Role != RoleViewer
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
	done := make(chan struct{})
	go func() { s.inflight.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for do_* calls in flight: %w", ctx.Err())
	}
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

// do runs a do_* call. It returns the typed result, or, when a human must
// approve and the client can ask one, the elicitation to send instead.
func (s *Server) do(ctx context.Context, t DoTool, h DoHandler, req mcp.CallToolRequest) (promcp.DoResult, *mcp.CallToolResult) {
	start := time.Now()
	caller := CallerFrom(ctx)
	base := promcp.DoResult{SideEffects: t.SideEffects, Compensable: t.Compensable}
	fail := func(key string, e *promcp.Error) promcp.DoResult {
		r := base
		r.Status, r.IdempotencyKey, r.Error, r.Reason = promcp.StatusFailed, key, e, e.Message
		r.Compensable, r.CompensationHint = false, nil // nothing was done, nothing to reverse
		r.Timestamp = s.clock.Now().UTC()
		return r
	}
	var appr *audit.Approval // who approved this call, once known
	argsValid := false       // schema-invalid arguments are recorded as size and hash only
	record := func(ctx context.Context, event, key string, r *promcp.DoResult) error {
		if s.auditor == nil {
			return nil
		}
		rec := audit.Record{Time: s.clock.Now(), Event: event, Caller: caller.Name, Role: caller.Role, Tool: t.Name, Key: key,
			Arguments: audit.Args(rawArguments(req), argsValid), DurationMS: float64(time.Since(start).Microseconds()) / 1000,
			Approval: appr}
		if r != nil {
			rec.Status, rec.Permission, rec.Reason = string(r.Status), string(r.Permission), r.Reason
			if r.Error != nil && rec.Reason == "" {
				rec.Reason = r.Error.Message
			}
			rec.Result, _ = json.Marshal(r)
		}
		err := s.auditor.Append(ctx, rec)
		if err != nil {
			s.log.Error("audit record not written", "tool", t.Name, "key", key, "event", event, "err", err)
		}
		return err
	}
	refuse := func(key string, r promcp.DoResult) promcp.DoResult {
		_ = record(ctx, audit.EventRefused, key, &r) // nothing moved; the answer stands
		return r
	}

	// Types are checked here; bounds are the policy's, so that a value out
	// of range is refused with the out_of_range permission.
	args, argErr := s.argumentsFor("type:"+t.Name, req)
	argsValid = argErr == nil
	key, _ := args["idempotency_key"].(string)
	if key == "" {
		key = newKey()
	}
	key = audit.BoundKey(key) // a valid key as it is; an invalid one never echoed whole
	if !s.enter() {
		return refuse(key, fail(key, &promcp.Error{Code: promcp.CodeRefused,
			Message: "the server is shutting down; retry with the same idempotency_key once it is back"})), nil
	}
	defer s.inflight.Done()
	if !s.authorize(caller, promcp.KindDo) {
		r := fail(key, &promcp.Error{Code: promcp.CodeRefused,
			Message: fmt.Sprintf("role %q may not call do_* tools (a viewer reads and asks can_do)", caller.Role)})
		r.Permission = promcp.PermissionInsufficient
		return refuse(key, r), nil
	}
	if s.refuseDo != "" {
		r := fail(key, &promcp.Error{Code: promcp.CodeRefused, Message: s.refuseDo})
		r.Permission = promcp.PolicyDenied
		return refuse(key, r), nil
	}
	if argErr != nil {
		return refuse(key, fail(key, argErr)), nil
	}

	fp := fingerprint(t.Name, args)
	var grant *approval.Grant
	var refusal *promcp.Error
	appr, grant, refusal = s.approval(ctx, t, req, args, key, fp)
	approved := appr != nil
	if refusal != nil {
		r := fail(key, refusal)
		r.Permission = promcp.RequiresHumanApproval
		return refuse(key, r), nil
	}
	outcome, replayed, err := s.store.Do(ctx, key, fp, func(ctx context.Context, at idempotency.Attempt) ([]byte, bool, error) {
		// The attempt has begun: finish it even if the client goes away.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), actuationTimeout)
		defer cancel()
		// Beginning makes the attempt durable: the key in flight, then the
		// audit "attempt" record. A handler that decides first (BeginsItself)
		// begins only once its policy allowed the action, so a refusal writes
		// neither; otherwise the attempt begins before the handler runs.
		var began bool
		var beginErr error
		begin := func(ctx context.Context) error {
			if began {
				return beginErr
			}
			began = true
			if err := at.Begin(ctx); err != nil {
				beginErr = fmt.Errorf("%w: idempotency store unavailable, refusing to actuate: %w", errNotActuated, err)
			} else if err := record(ctx, audit.EventAttempt, key, nil); err != nil {
				beginErr = fmt.Errorf("%w: audit log unavailable, refusing to actuate: %w", errNotActuated, err)
			}
			return beginErr
		}
		var handlerBegin func(context.Context) error
		switch {
		case at.Recovering:
		case t.BeginsItself:
			handlerBegin = begin
		default:
			if err := begin(ctx); err != nil {
				return nil, false, err
			}
		}
		var r promcp.DoResult
		var err error
		if grant != nil && !at.Recovering && s.ledger.Used(*grant, s.clock.Now()) {
			r = fail(key, &promcp.Error{Code: promcp.CodeInvalidArgument, Field: "approval", Message: approval.ErrUsed.Error()})
			r.Permission = promcp.RequiresHumanApproval
		} else {
			r, err = h(ctx, DoRequest{Tool: t.Name, Value: args["value"], IdempotencyKey: key, Args: args, Caller: caller,
				Approved: approved, Recovering: at.Recovering, Begin: handlerBegin})
		}
		if beginErr != nil {
			return nil, false, beginErr // nothing was actuated
		}
		if err != nil {
			s.log.Error("do handler failed", "tool", t.Name, "key", key, "err", err)
			r = fail(key, &promcp.Error{Code: promcp.CodeInternal, Message: err.Error()})
		}
		r.IdempotencyKey = key
		r.Recovered = at.Recovering
		if r.SideEffects == nil {
			r.SideEffects = t.SideEffects
		}
		if r.Timestamp.IsZero() {
			r.Timestamp = s.clock.Now()
		}
		r.Timestamp = r.Timestamp.UTC()
		keep := keepOutcome(r)
		if keep && grant != nil {
			// One-time: the approval is spent by the action it approved.
			if err := s.ledger.Use(*grant, s.clock.Now()); err != nil {
				// The action is done and its result kept under this key;
				// only a retry after the key expires could reuse the token.
				s.log.Error("approval not recorded as spent", "tool", t.Name, "key", key, "approval", grant.ID, "err", err)
			}
		}
		event := audit.EventResult
		switch {
		case at.Recovering:
			event = audit.EventRecovered
		case !keep:
			event = audit.EventRefused
		}
		_ = record(ctx, event, key, &r) // the device has been touched: answer whatever the log says
		b, merr := json.Marshal(r)
		if merr != nil {
			return nil, false, fmt.Errorf("encoding result: %w", merr)
		}
		return b, keep, nil
	})
	unrecorded := errors.Is(err, idempotency.ErrNotRecorded) && outcome != nil
	if unrecorded {
		err = nil // the device was touched: answer, as partial (markUnrecorded)
	}
	switch {
	case errors.Is(err, idempotency.ErrConflict):
		return refuse(key, fail(key, &promcp.Error{Code: promcp.CodeIdempotencyConflict, Field: "idempotency_key",
			Message: fmt.Sprintf("idempotency_key %q was used with different arguments; use a new key for a new action", key)})), nil
	case err != nil:
		return fail(key, &promcp.Error{Code: promcp.CodeInternal, Message: err.Error()}), nil
	}
	var out promcp.DoResult
	if err := json.Unmarshal(outcome, &out); err != nil {
		return fail(key, &promcp.Error{Code: promcp.CodeInternal, Message: "stored result is unreadable: " + err.Error()}), nil
	}
	if unrecorded {
		markUnrecorded(&out)
	}
	out.Replayed = replayed
	if replayed {
		_ = record(ctx, audit.EventReplayed, key, &out)
	}
	if out.Permission == promcp.RequiresHumanApproval && !approved && t.ApprovalVia == approval.ViaElicitation && clientCanElicit(ctx) {
		return out, s.askApproval(t, args, key, fp, out.Reason)
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
			b = &promcp.Blocked{Permission: promcp.PermissionInsufficient,
				Reason: fmt.Sprintf("role %q may not call do_* tools (a viewer reads and asks can_do)", c.Role)}
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
