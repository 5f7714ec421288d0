package lint_test

import (
	"bytes"
	"testing"

	"github.com/promcp/promcp-device/lint"
)

// FuzzCheck: no tool list, however malformed, makes the linter panic, and
// every finding names a known rule.
func FuzzCheck(f *testing.F) {
	for _, seed := range []string{
		`[{"name": "can_do", "inputSchema": {"type": "object", "properties": {"intent": 5}}}]`,
		`{"tools": [{"name": "read_x", "outputSchema": {"properties": {"quality": {"enum": 3}}}}]}`,
		`[{"name": "do_x", "inputSchema": {"properties": {"idempotency_key": []}}, "outputSchema": {"properties": {"compensable": {"enum": [{}]}}}, "annotations": {"destructiveHint": false}}]`,
		`[{"name": "can_do", "outputSchema": {"properties": {"candidates": {"items": 1}, "blocked": {"items": {"properties": 2}}}}}]`,
		`[{"name": "read_\u001b[31m", "description": "was set set", "outputSchema": true, "inputSchema": {"$ref": "#/nope"}}]`,
	} {
		f.Add([]byte(seed))
	}
	codes := map[string]bool{}
	for _, r := range lint.Rules() {
		codes[r.Code] = true
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tools, err := lint.ParseTools(data)
		if err != nil {
			return
		}
		r := lint.Check("fuzz", tools)
		for _, f := range r.All() {
			if !codes[f.Code] {
				t.Fatalf("finding under unknown code %s", f.Code)
			}
		}
		var out bytes.Buffer
		lint.WriteText(&out, r, true)
		if bytes.ContainsRune(out.Bytes(), 0x1b) {
			t.Fatalf("an escape character reached the text output")
		}
	})
}
