package server

import (
	"context"
	"maps"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/promcp/promcp-device/audit"
	"github.com/promcp/promcp-device/promcp"
)

// WithTasks lets tools with an Await (start_*) run as MCP tasks (protocol
// 2025-11-25): the server declares the tasks capability (tasks/list,
// tasks/cancel, task-augmented tools/call), and mcp-go serves tasks/get,
// tasks/result and tasks/cancel.
func WithTasks() Option {
	return func(s *Server) {
		s.tasks = newTaskIndex()
		s.extraMCP = append(s.extraMCP, mcpserver.WithTaskCapabilities(true, true, true))
	}
}

// Audit appends r to the audit log (a job's step, a dead-man revert: what
// the gateway does on its own); nil when the server has no log.
func (s *Server) Audit(ctx context.Context, r audit.Record) error {
	if s.auditor == nil {
		return nil
	}
	if r.Time.IsZero() {
		r.Time = s.clock.Now()
	}
	err := s.auditor.Append(ctx, r)
	if err != nil {
		s.log.Error("audit record not written", "tool", r.Tool, "event", r.Event, "err", err)
	}
	return err
}

// readInputSchemaWith is the read_* input schema with more optional
// arguments.
func readInputSchemaWith(extra map[string]any) map[string]any {
	in := readInputSchema()
	if len(extra) > 0 {
		props := maps.Clone(in["properties"].(map[string]any))
		maps.Copy(props, extra)
		in["properties"] = props
	}
	return in
}

// await runs t's Await for a call made as a task, sending its progress as
// notifications/progress when the client gave a progress token.
func (s *Server) await(ctx context.Context, t DoTool, req mcp.CallToolRequest, first promcp.DoResult) promcp.DoResult {
	var token mcp.ProgressToken
	if req.Params.Meta != nil {
		token = req.Params.Meta.ProgressToken
	}
	progress := func(done, total float64, message string) {
		if token == nil {
			return
		}
		n := mcp.NewProgressNotification(token, done, &total, &message)
		if err := s.mcp.SendNotificationToClient(ctx, string(n.Method), map[string]any{
			"progressToken": token, "progress": done, "total": total, "message": message,
		}); err != nil {
			s.log.Debug("progress not sent", "tool", t.Name, "err", err)
		}
	}
	tctx, cancel := s.tasks.taskContext(ctx, &req)
	defer cancel()
	r := t.Await(tctx, first, progress)
	if r.Timestamp.IsZero() {
		r.Timestamp = s.clock.Now()
	}
	r.Timestamp = r.Timestamp.UTC()
	if r.SideEffects == nil {
		r.SideEffects = first.SideEffects
	}
	if r.IdempotencyKey == "" {
		r.IdempotencyKey = first.IdempotencyKey
	}
	return r
}
