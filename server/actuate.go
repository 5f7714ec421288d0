package server

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/promcp/promcp-device/audit"
	"github.com/promcp/promcp-device/promcp"
)

// Internal is an actuation the gateway makes on its own, with no MCP call
// behind it: a job step, a job's compensation, a dead-man revert.
type Internal struct {
	// Tool is the do_* tool whose actuator it writes.
	Tool string
	// Key is its idempotency key: stable across retries of the same
	// actuation (a job step retried after its approval), new for a new one.
	Key string
	// Caller is who it acts as (the job's caller, the dead-man).
	Caller Caller
	// Value is the value it writes.
	Value       any
	SideEffects []string
}

// Actuate runs h, an actuation the gateway makes on its own, through the
// same durable steps as a do_* call: the idempotency store runs it at most
// once per key (a replayed key never writes), DoRequest.Begin (or
// BeginSafe) records the key in flight and the audit "attempt" record
// before h writes, and the result is recorded. An approval given on the
// desk for this caller, tool, value and key is presented to h, and a
// result that asks for one puts the request on the desk (as a do_* call
// would). It is the only way, besides a do_* call, that a DoHandler runs.
func (s *Server) Actuate(ctx context.Context, in Internal, h DoHandler) promcp.DoResult {
	args := map[string]any{"value": in.Value, "idempotency_key": in.Key}
	var req mcp.CallToolRequest
	req.Params.Name, req.Params.Arguments = in.Tool, args
	t := DoTool{Name: in.Tool, BeginsItself: true, SideEffects: in.SideEffects}
	c := &doCall{s: s, t: t, h: h, req: req, caller: in.Caller, start: time.Now(),
		base: promcp.DoResult{SideEffects: in.SideEffects}, args: args, argsValid: true, key: audit.BoundKey(in.Key), internal: true}
	c.fp = fingerprint(in.Tool, args)
	if s.desk != nil {
		c.appr, c.grant = s.desk.granted(in.Tool, in.Caller, c.key, c.fp)
	}
	outcome, replayed, err := s.store.Do(ctx, c.key, c.fp, c.act)
	r, _ := c.answer(ctx, outcome, replayed, err)
	if errors.Is(err, errNotActuated) && r.Error != nil {
		r.Error.Code = promcp.CodeRefused // nothing was written: the attempt could not be recorded
	}
	if r.Permission == promcp.RequiresHumanApproval && s.desk != nil {
		for _, q := range s.desk.Requests() {
			if q.Key == c.key && q.Tool == in.Tool && q.State == Denied {
				r.Permission = promcp.PolicyDenied
				r.Reason = fmt.Sprintf("%s denied it in the operator console", q.DecidedBy.Name)
				r.Error = &promcp.Error{Code: promcp.CodeRefused, Message: r.Reason}
			}
		}
	}
	return r
}

// backlog is the Auditor the server appends through: it keeps, in order,
// the records of moves to the safe value that could not be written (a
// full disk) and writes them, first, as soon as an append can be made.
// While records wait, every other append first writes them and fails
// with them: an action that is not a move to the safe value then does not
// actuate (its attempt record is not durable), so nothing unsafe moves
// unrecorded.
type backlog struct {
	next Auditor
	mu   sync.Mutex
	wait []audit.Record
}

// maxBacklog bounds the records kept waiting; beyond it the oldest go (and
// are logged).
const maxBacklog = 1024

// Append implements Auditor: the waiting records first, then r.
func (b *backlog) Append(ctx context.Context, r audit.Record) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.flushLocked(ctx); err != nil {
		return err
	}
	return b.next.Append(ctx, r)
}

// appendOrKeep appends r, or keeps it to be written first by the next
// append that works; it returns the error of this append, if any.
func (b *backlog) appendOrKeep(ctx context.Context, r audit.Record) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	err := b.flushLocked(ctx)
	if err == nil {
		err = b.next.Append(ctx, r)
	}
	if err != nil {
		b.wait = append(b.wait, r)
		if len(b.wait) > maxBacklog {
			b.wait = b.wait[len(b.wait)-maxBacklog:]
		}
	}
	return err
}

// waiting returns how many records wait to be written.
func (b *backlog) waiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.wait)
}

func (b *backlog) flushLocked(ctx context.Context) error {
	for len(b.wait) > 0 {
		if err := b.next.Append(ctx, b.wait[0]); err != nil {
			return err
		}
		b.wait = b.wait[1:]
	}
	return nil
}

// FlushAudit writes the audit records kept while the log could not be
// written (see docs/policy.md, "A full state disk"); it returns how many
// still wait.
func (s *Server) FlushAudit(ctx context.Context) int {
	b, ok := s.auditor.(*backlog)
	if !ok {
		return 0
	}
	b.mu.Lock()
	err := b.flushLocked(ctx)
	b.mu.Unlock()
	if err != nil {
		s.log.Error("audit records of safe moves still not written", "waiting", b.waiting(), "err", err)
	}
	return b.waiting()
}
