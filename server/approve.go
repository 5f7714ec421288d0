package server

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/promcp/promcp-device/approval"
	"github.com/promcp/promcp-device/audit"
	"github.com/promcp/promcp-device/promcp"
)

// elicitID names the confirmation this server asks for.
const elicitID = "approve"

// elicitTTL bounds how long a human may take to answer.
const elicitTTL = 5 * time.Minute

var approvalArgSchema = map[string]any{
	"type": "string", "minLength": 1,
	"description": "A human's approval token from `promcp-device approve`, bound to this tool, value and idempotency_key. Needed when the action requires approval (can_do and do_* say requires_human_approval): ask a person who holds the gateway's approval key for one. An emergency override from `promcp-device override` is passed here too.",
}

// approval decides whether this call carries a human's approval, and
// returns who gave it, how and when (for the audit log), or nil: an
// out-of-band approval token (whose one-time use is checked when it is
// about to be spent, so that a retry of the same call replays), or, only
// where the tool's ApprovalVia is elicitation, an answer to the
// elicitation this server asked for (checked against the state it signed).
// An answer through the client for a tool that accepts only out-of-band
// approval is refused: the client may be the agent's own, whatever it
// answers. A decline, a cancel or an invalid token is a refusal that
// touches nothing.
func (s *Server) approval(ctx context.Context, t DoTool, req mcp.CallToolRequest, args map[string]any, key, fp string) (*audit.Approval, *approval.Grant, *promcp.Error) {
	now := s.clock.Now()
	tok, _ := args["approval"].(string)
	ans := mcpserver.ElicitationResponse(req.Params.InputResponses, elicitID)
	if ans != nil && t.ApprovalVia == approval.ViaElicitation {
		if _, err := s.elicit.Verify(req.Params.RequestState, t.Name, fp, key, now); err != nil {
			return nil, nil, &promcp.Error{Code: promcp.CodeRefused, Message: "the approval answer does not belong to this call: " + err.Error()}
		}
		if ans.Action != mcp.ElicitationResponseActionAccept || !confirmed(ans.Content) {
			return nil, nil, &promcp.Error{Code: promcp.CodeRefused,
				Message: fmt.Sprintf("a human did not approve %s (%s); nothing was actuated", t.Name, ans.Action)}
		}
		by := CallerFrom(ctx).Name
		if by == "" {
			by = "(the caller's MCP client)"
		}
		return &audit.Approval{By: by, Method: approval.ViaElicitation, At: now}, nil, nil
	}
	if tok == "" {
		if ans != nil {
			return nil, nil, &promcp.Error{Code: promcp.CodeRefused, Message: fmt.Sprintf(
				"%s accepts only an out-of-band approval: an answer through the MCP client does not approve it. "+
					"A person who holds the gateway's approval key runs `promcp-device approve --tool %s --value V --key %s` and the token is passed as approval",
				t.Name, t.Name, key)}
		}
		return nil, nil, nil
	}
	if s.approvals == nil {
		return nil, nil, &promcp.Error{Code: promcp.CodeInvalidArgument, Field: "approval",
			Message: "this gateway accepts no approval tokens (start it with --approval-key)"}
	}
	if s.approvals.IsOverride(tok) {
		return s.override(ctx, t, tok, now)
	}
	g, err := s.approvals.Verify(tok, t.Name, args["value"], key, now)
	if err != nil {
		return nil, nil, &promcp.Error{Code: promcp.CodeInvalidArgument, Field: "approval", Message: err.Error()}
	}
	by := g.By
	if by == "" {
		by = "(unnamed: the token names no approver)"
	}
	return &audit.Approval{By: by, Method: approval.ViaOutOfBand, At: g.Issued, ID: g.ID}, &g, nil
}

// askApproval returns the elicitation that asks a human to confirm the
// exact action, value and side effects. The client answers and calls again
// with the signed state; nothing actuates before that.
func (s *Server) askApproval(t DoTool, args map[string]any, key, fp, reason string) *mcp.CallToolResult {
	state := s.elicit.Issue(approval.Grant{Tool: t.Name, Value: approval.Canonical(fp), Key: key, Expires: s.clock.Now().Add(elicitTTL)})
	msg := fmt.Sprintf("Approve %s value=%s?", t.Name, FormatValue(args["value"]))
	if reason != "" {
		msg += " " + strings.TrimSuffix(reason, ".") + "."
	}
	if len(t.SideEffects) > 0 {
		msg += " Side effects: " + strings.Join(t.SideEffects, "; ") + "."
	}
	if !t.Compensable {
		msg += " This cannot be reversed."
	}
	return mcpserver.NewInputRequestBuilder(state).Elicit(elicitID, mcp.ElicitationParams{
		Message: msg,
		RequestedSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"approve": map[string]any{"type": "boolean", "title": "Approve", "description": msg},
			},
			"required": []string{"approve"},
		},
	}).ToolResult()
}

// confirmed reports whether accepted content says yes.
func confirmed(content any) bool {
	m, ok := content.(map[string]any)
	if !ok {
		return false
	}
	yes, _ := m["approve"].(bool)
	return yes
}

// clientCanElicit reports whether the caller's client declared elicitation.
func clientCanElicit(ctx context.Context) bool {
	if info := mcpserver.RequestProtocolInfoFromContext(ctx); info != nil && info.Modern {
		return info.ClientCapabilities != nil && info.ClientCapabilities.Elicitation != nil
	}
	if sess, ok := mcpserver.ClientSessionFromContext(ctx).(mcpserver.SessionWithClientInfo); ok {
		return sess.GetClientCapabilities().Elicitation != nil
	}
	return false
}

// FormatValue writes an action's value as a caller types it in an
// argument or a compensation hint: numbers plainly (95, 0.5), strings
// quoted, anything else as fmt prints it.
func FormatValue(v any) string {
	switch x := v.(type) {
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case string:
		return strconv.Quote(x)
	}
	return fmt.Sprint(v)
}

// override checks an emergency override token (PhysMCP §6 emergency): the
// policy allows overrides of t, the caller's role is one that may use
// them, the gateway keeps an audit log (every action under an override is
// audited), and the token is for t, on this gateway, unexpired and no
// longer lived than the policy's ttl. Unlike an approval it is not spent:
// it may be used again until it lapses.
func (s *Server) override(ctx context.Context, t DoTool, tok string, now time.Time) (*audit.Approval, *approval.Grant, *promcp.Error) {
	refuse := func(format string, a ...any) (*audit.Approval, *approval.Grant, *promcp.Error) {
		return nil, nil, &promcp.Error{Code: promcp.CodeInvalidArgument, Field: "approval", Message: fmt.Sprintf(format, a...)}
	}
	if len(t.OverrideRoles) == 0 {
		return refuse("the policy allows no emergency override of %s (it declares no emergency block)", t.Name)
	}
	if role := CallerFrom(ctx).Role; !slices.Contains(t.OverrideRoles, role) {
		return refuse("role %s may not use an emergency override of %s (want %s)", role, t.Name, strings.Join(t.OverrideRoles, " or "))
	}
	if s.auditor == nil {
		return refuse("this gateway keeps no audit log, and every action under an emergency override is audited: start it with --audit")
	}
	g, err := s.approvals.VerifyOverride(tok, t.Name, t.OverrideTTL, now)
	if err != nil {
		return refuse("%v", err)
	}
	by := g.By
	if by == "" {
		by = "(unnamed: the token names no one)"
	}
	return &audit.Approval{By: by, Method: approval.ViaOverride, At: g.Issued, ID: g.ID}, nil, nil
}
