package server

import (
	"context"
	"encoding/json"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/promcp/promcp-device/promcp"
)

// Observer is told what the server does, for metrics (package metrics
// implements it for Prometheus). Its methods are called on the serving
// path: they must be quick and safe for concurrent use.
type Observer interface {
	// ToolCalled reports a finished tool call: its tool and kind, how
	// long the call took, and for do_* the result's status and the
	// policy's permission ("" when the result has none; "approval_asked"
	// as the status of a call answered with an approval request).
	ToolCalled(tool string, kind promcp.Kind, d time.Duration, status, permission string)
	// Sessions hands the observer the count of MCP sessions open now,
	// over HTTP (all endpoints together), to read when it wants: called
	// once by HTTPHandler.
	Sessions(open func() int)
}

// WithObserver reports every tool call and session to o. The default
// reports nothing.
func WithObserver(o Observer) Option { return func(s *Server) { s.observer = o } }

// observed wraps h to report its calls to the observer; h as is without one.
func (s *Server) observed(kind promcp.Kind, tool string, h mcpserver.ToolHandlerFunc) mcpserver.ToolHandlerFunc {
	o := s.observer
	if o == nil {
		return h
	}
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		start := time.Now()
		res, err := h(ctx, req)
		var status, permission string
		if kind == promcp.KindDo {
			status, permission = doOutcome(res, err)
		}
		o.ToolCalled(tool, kind, time.Since(start), status, permission)
		return res, err
	}
}

// doOutcome reads the status and permission of a do_* result.
func doOutcome(res *mcp.CallToolResult, err error) (status, permission string) {
	if err != nil || res == nil {
		return "error", ""
	}
	raw, ok := res.StructuredContent.(json.RawMessage)
	if !ok {
		if res.StructuredContent == nil {
			return "approval_asked", string(promcp.RequiresHumanApproval)
		}
		if raw, err = json.Marshal(res.StructuredContent); err != nil {
			return "error", ""
		}
	}
	var body struct {
		Status     string `json:"status"`
		Permission string `json:"permission"`
		envelopePermission
	}
	if json.Unmarshal(raw, &body) != nil || body.Status == "" {
		return "error", ""
	}
	if body.Permission != "" {
		return body.Status, body.Permission
	}
	if p := body.permission(); p != "" { // the envelope placed inline
		return body.Status, p
	}
	return body.Status, metaPermission(res)
}

// envelopePermission decodes the one field of a provenance envelope that
// the observer reports: the decision's permission.
type envelopePermission struct {
	Toulmin struct {
		Grounds struct {
			Decision struct {
				Permission string `json:"permission"`
			} `json:"decision"`
		} `json:"grounds"`
	} `json:"_toulmin"`
}

func (e envelopePermission) permission() string { return e.Toulmin.Grounds.Decision.Permission }

// metaPermission is the decision's permission in the provenance stamp of
// res (the envelope placed in _meta), "" when it has none.
func metaPermission(res *mcp.CallToolResult) string {
	if res.Meta == nil {
		return ""
	}
	if raw, ok := res.Meta.AdditionalFields[ProvenanceKey].(json.RawMessage); ok {
		// The stamp as the server sends it: encoded once (see stamp).
		var env envelopePermission
		if json.Unmarshal(raw, &env) == nil {
			return env.permission()
		}
		return ""
	}
	p, _ := res.Meta.AdditionalFields[ProvenanceKey].(map[string]any)
	if t, _ := p[promcp.EnvelopeToulmin].(*promcp.Toulmin); t != nil {
		if g, ok := t.Grounds.(*promcp.DoGrounds); ok && g != nil {
			return string(g.Decision.Permission)
		}
	}
	return ""
}

// open counts the sessions minted (not pending) and not yet expired.
func (t *sessionTable) open() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	now, n := t.now(), 0
	for _, e := range t.byID {
		if !e.pending && !t.expiredLocked(e, now) {
			n++
		}
	}
	return n
}
