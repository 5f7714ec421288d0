package server

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/promcp/promcp-device/promcp"
)

// TestDoOutcome: the status and permission the observer gets for each way
// a do_* result carries them: in the body (a refusal), in the inline
// envelope, in the _meta stamp, none (an approval asked), a failed call.
func TestDoOutcome(t *testing.T) {
	meta := func(p promcp.Permission) *mcp.Meta {
		return &mcp.Meta{AdditionalFields: map[string]any{ProvenanceKey: map[string]any{
			promcp.EnvelopeToulmin: &promcp.Toulmin{Grounds: &promcp.DoGrounds{Decision: promcp.Decision{Permission: p}}}}}}
	}
	cases := []struct {
		name               string
		res                *mcp.CallToolResult
		err                error
		status, permission string
	}{
		{"refused: in the body", &mcp.CallToolResult{StructuredContent: json.RawMessage(`{"status":"failed","permission":"cooldown_active"}`)}, nil, "failed", "cooldown_active"},
		{"inline envelope", &mcp.CallToolResult{StructuredContent: json.RawMessage(`{"status":"success","_toulmin":{"grounds":{"decision":{"permission":"allowed"}}}}`)}, nil, "success", "allowed"},
		{"_meta stamp", &mcp.CallToolResult{StructuredContent: json.RawMessage(`{"status":"success"}`), Result: mcp.Result{Meta: meta(promcp.Allowed)}}, nil, "success", "allowed"},
		{"no policy asked", &mcp.CallToolResult{StructuredContent: json.RawMessage(`{"status":"failed"}`)}, nil, "failed", ""},
		{"approval asked", &mcp.CallToolResult{}, nil, "approval_asked", "requires_human_approval"},
		{"handler error", nil, errors.New("boom"), "error", ""},
		{"not a result", &mcp.CallToolResult{StructuredContent: json.RawMessage(`[]`)}, nil, "error", ""},
	}
	for _, c := range cases {
		status, permission := doOutcome(c.res, c.err)
		if status != c.status || permission != c.permission {
			t.Errorf("%s: doOutcome = %q, %q; want %q, %q", c.name, status, permission, c.status, c.permission)
		}
	}
}
