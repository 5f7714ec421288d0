package main

import (
	"encoding/json"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestOverflowingNumberGetsTheTypedBody: a value of 1e309 (or -1e309) is
// valid JSON but overflows a float64. Over stdio and HTTP, with a real
// client, it is answered with the do_* typed body (failed,
// invalid_argument, field value), not a bare JSON-RPC error, and the
// session goes on.
func TestOverflowingNumberGetsTheTypedBody(t *testing.T) {
	sessions := map[string]func() *session{
		"stdio": func() *session { return stdioSession(t, protocols[0], "--manifest", greenhouse) },
		"http":  func() *session { return httpSession(t, startHTTP(t, "--manifest", greenhouse), protocols[0]) },
	}
	for name, open := range sessions {
		t.Run(name, func(t *testing.T) {
			s := open()
			for _, raw := range []string{`{"value": 1e309, "idempotency_key": "k-big"}`, `{"idempotency_key": "k-small", "value": -1E+400}`} {
				res, err := s.c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{
					Name: "do_set_fan_speed", Arguments: json.RawMessage(raw)}})
				if err != nil {
					t.Fatalf("do_set_fan_speed(%s): %v; want the typed body", raw, err)
				}
				b, _ := json.Marshal(res.StructuredContent)
				if err := s.schemas.Validate("do_set_fan_speed", b); err != nil {
					t.Fatalf("do_set_fan_speed(%s) = %s: breaks its outputSchema: %v", raw, b, err)
				}
				var body struct {
					Status string `json:"status"`
					Key    string `json:"idempotency_key"`
					Error  struct{ Code, Field, Message string }
				}
				if err := json.Unmarshal(b, &body); err != nil {
					t.Fatal(err)
				}
				if body.Status != "failed" || body.Error.Code != "invalid_argument" || body.Error.Field != "value" || !res.IsError {
					t.Fatalf("do_set_fan_speed(%s) = %s; want failed, invalid_argument, field value", raw, b)
				}
			}
			if r, _ := s.call("read_fan_speed", map[string]any{}); r["quality"] == nil {
				t.Fatalf("read after the overflow: %v", r)
			}
		})
	}
}
