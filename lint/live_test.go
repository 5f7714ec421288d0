package lint_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/promcp/promcp-device/lint"
	"github.com/promcp/promcp-device/promcp"
)

// The test binary doubles as the fixture servers: run with
// PROMCP_LINT_FIXTURE set, it serves that fixture over stdio (the way
// `lint -- CMD` starts a server) instead of running the tests.
func TestMain(m *testing.M) {
	if name := os.Getenv("PROMCP_LINT_FIXTURE"); name != "" {
		fixtures := map[string]func() *mcpserver.MCPServer{"broken": brokenServer, "thirdparty": thirdPartyServer, "annotated": annotatedServer}
		if err := mcpserver.ServeStdio(fixtures[name]()); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func kindSchema(k promcp.Kind) map[string]any {
	m, err := promcp.SchemaMap(k)
	if err != nil {
		panic(err)
	}
	return m
}

// answer is a result with structuredContent, its text copy and, when
// stamped, a complete provenance stamp for tool, whose output schema is
// out.
func answer(tool string, out json.RawMessage, body any, stamped bool) *mcp.CallToolResult {
	b := mustJSON(body)
	res := &mcp.CallToolResult{StructuredContent: body, Content: []mcp.Content{mcp.NewTextContent(string(b))}}
	if stamped {
		kind, _ := promcp.KindOf(tool)
		digest, err := promcp.SchemaDigest(out)
		if err != nil {
			panic(err)
		}
		res.Meta = &mcp.Meta{AdditionalFields: map[string]any{lint.ProvenanceKey: map[string]any{
			"tool": tool, "kind": string(kind), "server": "fixture 1", "contract": "proMCP v0.2", "source": "fixture/tank",
			"checked": "typed", "output_schema": digest, "body": promcp.BodyDigest(b),
			"_tool": tool, "_toulmin": envelopeArgument(), "_tags": map[string]any{"origin": "device", "bucket": "read_only", "freshness": "live", "check": "typed"}}}}
	}
	return res
}

// envelopeArgument is a complete _toulmin: exactly its five keys.
func envelopeArgument() map[string]any {
	return map[string]any{"claim": "tank level 42 %", "grounds": map[string]any{"device": "tank"}, "warrant": map[string]any{},
		"qualifier": map[string]any{"quality": "good"}, "rebuttal": []any{}}
}

// markCalled records a do_* call in the file PROMCP_LINT_FIXTURE_MARK
// names: lint must never call one.
func markCalled(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	os.WriteFile(os.Getenv("PROMCP_LINT_FIXTURE_MARK"), []byte(req.Params.Name), 0o644)
	return mcp.NewToolResultText("actuated"), nil
}

var (
	yes, no = true, false
	readAnn = mcp.ToolAnnotation{ReadOnlyHint: &yes, IdempotentHint: &yes, DestructiveHint: &no}
)

func readBody(value any, quality string) map[string]any {
	return map[string]any{"value": value, "unit": "%", "timestamp": time.Now().UTC().Format(time.RFC3339Nano), "quality": quality}
}

// brokenServer follows proMCP in its tool definitions and breaks each
// rule about answers once.
func brokenServer() *mcpserver.MCPServer {
	s := mcpserver.NewMCPServer("fixture", "1", mcpserver.WithToolCapabilities(false))
	noArgs := mustJSON(map[string]any{"type": "object", "properties": map[string]any{}})
	outs := map[string]json.RawMessage{}
	read := func(name string, out map[string]any, h mcpserver.ToolHandlerFunc) {
		outs[name] = mustJSON(out)
		s.AddTool(mcp.Tool{Name: name, Description: "Tank level in percent, for the lint fixture.", RawInputSchema: noArgs,
			RawOutputSchema: outs[name], Annotations: readAnn}, h)
	}
	reply := func(body any, stamped bool) mcpserver.ToolHandlerFunc {
		return func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return answer(req.Params.Name, outs[req.Params.Name], body, stamped), nil
		}
	}
	read("read_ok", kindSchema(promcp.KindRead), reply(readBody(42.0, "good"), true))
	read("read_text_only", kindSchema(promcp.KindRead), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("42 %"), nil
	})
	read("read_bad_contract", kindSchema(promcp.KindRead), reply(readBody(42.0, "fine"), true))
	numeric := kindSchema(promcp.KindRead)
	numeric["properties"].(map[string]any)["value"] = map[string]any{"type": "number"}
	read("read_bad_own", numeric, reply(readBody("high", "good"), true))
	read("read_unstamped", kindSchema(promcp.KindRead), reply(readBody(42.0, "good"), false))
	read("read_bad_stamp", kindSchema(promcp.KindRead), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		// Stamped with another tool's schema digest, and without "checked".
		res := answer("read_bad_stamp", mustJSON(numeric), readBody(42.0, "good"), true)
		delete(res.Meta.AdditionalFields[lint.ProvenanceKey].(map[string]any), "checked")
		return res, nil
	})
	read("read_no_envelope", kindSchema(promcp.KindRead), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		// A complete stamp of our own, without the seed's envelope.
		res := answer("read_no_envelope", outs["read_no_envelope"], readBody(42.0, "good"), true)
		for _, k := range []string{"_tool", "_toulmin", "_tags"} {
			delete(res.Meta.AdditionalFields[lint.ProvenanceKey].(map[string]any), k)
		}
		return res, nil
	})
	read("read_bad_inline", kindSchema(promcp.KindRead), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		// The envelope inline, the seed's form, with a sixth argument key.
		arg := envelopeArgument()
		arg["backing"] = "datasheet"
		body := readBody(42.0, "good")
		body["_tool"], body["_toulmin"], body["_tags"] = "read_bad_inline", arg, map[string]any{"origin": "device", "bucket": "read_only", "freshness": "live", "check": "typed"}
		return answer("read_bad_inline", outs["read_bad_inline"], body, true), nil
	})
	read("read_bad_ref", kindSchema(promcp.KindRead), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		// The warrant by reference, to a standing part that does not hash
		// to the digest given.
		res := answer("read_bad_ref", outs["read_bad_ref"], readBody(42.0, "good"), true)
		stamp := res.Meta.AdditionalFields[lint.ProvenanceKey].(map[string]any)
		stamp["_toulmin"].(map[string]any)["warrant"] = map[string]any{"ref": promcp.WarrantURI("read_bad_ref"), "digest": promcp.BodyDigest([]byte("{}"))}
		return res, nil
	})
	text, _ := promcp.Standing{Tool: "read_bad_ref"}.Encode()
	s.AddResource(mcp.Resource{URI: promcp.WarrantURI("read_bad_ref"), Name: "warrant"}, func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: promcp.WarrantURI("read_bad_ref"), Text: string(text)}}, nil
	})
	outs["read_needs_arg"] = mustJSON(kindSchema(promcp.KindRead))
	s.AddTool(mcp.Tool{Name: "read_needs_arg", Description: "Tank level of one channel, for the lint fixture.",
		RawInputSchema:  mustJSON(map[string]any{"type": "object", "properties": map[string]any{"channel": map[string]any{"type": "integer"}}, "required": []string{"channel"}}),
		RawOutputSchema: outs["read_needs_arg"], Annotations: readAnn}, reply(readBody(1.0, "good"), true))
	s.AddTool(mcp.Tool{Name: "do_set_pump", Description: "Switch the pump on or off. Compensable: call again with the previous value.",
		RawInputSchema: mustJSON(map[string]any{"type": "object", "properties": map[string]any{
			"value": map[string]any{"type": "boolean"}, "idempotency_key": map[string]any{"type": "string"}}}),
		RawOutputSchema: mustJSON(kindSchema(promcp.KindDo)),
		Annotations:     mcp.ToolAnnotation{ReadOnlyHint: &no, DestructiveHint: &no}}, markCalled)
	report := map[string]any{"query_id": "q1", "feasible": false, "candidates": []any{}, "blocked": []any{},
		"context":  map[string]any{"related_reads": []any{}, "current_observations": map[string]any{}},
		"metadata": map[string]any{"timestamp": time.Now().UTC().Format(time.RFC3339), "total_latency_ms": 0}}
	outs["can_do"] = mustJSON(kindSchema(promcp.KindCanDo))
	s.AddTool(mcp.Tool{Name: "can_do", Description: "Which actions match an intent and whether each may run now.",
		RawInputSchema: mustJSON(map[string]any{"type": "object", "properties": map[string]any{"intent": map[string]any{
			"type": "object", "properties": map[string]any{"semantic_tags": map[string]any{"type": "array"}, "action": map[string]any{"type": "string"}}}}}),
		RawOutputSchema: outs["can_do"], Annotations: readAnn}, reply(report, true))
	return s
}

// thirdPartyServer is plain MCP, as a user might write it with mcp-go's
// defaults: no idempotency key, no output schemas, no can_do, no hints.
func thirdPartyServer() *mcpserver.MCPServer {
	s := mcpserver.NewMCPServer("rockets", "1", mcpserver.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("do_launch", mcp.WithDescription("Launch the rocket standing on the given pad."),
		mcp.WithString("pad", mcp.Required())), markCalled)
	s.AddTool(mcp.NewTool("read_secret", mcp.WithDescription("Returns the API secret. Use rotate_secret to create a new one.")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("s3cr3t"), nil
		})
	s.AddTool(mcp.NewTool("get_status", mcp.WithDescription("Status of every rocket on every pad.")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("ok"), nil
		})
	s.AddTool(mcp.NewTool("list_rockets", mcp.WithDescription("Names of the rockets in the hangar.")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("r1"), nil
		})
	return s
}

// lintFixture lints a fixture server started as `lint -- CMD` would, and
// fails the test if anything called a do_* tool.
func lintFixture(t *testing.T, name string, callReads bool) []string {
	t.Helper()
	mark := filepath.Join(t.TempDir(), "called")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s, err := lint.Connect(t.Context(), lint.Target{Command: exe, Env: []string{"PROMCP_LINT_FIXTURE=" + name, "PROMCP_LINT_FIXTURE_MARK=" + mark},
		Stderr: os.Stderr}, "lint-test", "1")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := lint.Check(name, s.Tools)
	if callReads {
		if err := s.CallReads(t.Context(), r); err != nil {
			t.Fatal(err)
		}
	}
	if b, err := os.ReadFile(mark); err == nil {
		t.Errorf("lint called %s, a do_* tool", b)
	}
	return codes(r)
}

// TestFixtureServer: each rule about answers fires on the one tool that
// breaks it, over a real stdio MCP connection; the tool definitions follow
// proMCP, so the only static finding is S004 (12 tools).
func TestFixtureServer(t *testing.T) {
	got := lintFixture(t, "broken", false)
	if !slices.Equal(got, []string{"server:S004"}) {
		t.Errorf("static findings %v, want S004 only", got)
	}
	got = lintFixture(t, "broken", true)
	want := []string{"read_bad_contract:C002", "read_bad_contract:C003", "read_bad_inline:C006", "read_bad_own:C003", "read_bad_ref:C007", "read_bad_stamp:C004",
		"read_bad_stamp:C005", "read_needs_arg:C000", "read_no_envelope:C006", "read_text_only:C001", "read_unstamped:C004", "server:S004"}
	if !slices.Equal(got, want) {
		t.Errorf("findings %v,\nwant %v", got, want)
	}
}

// TestThirdPartyServer: plain MCP tools get what the reference linter
// reports on them (S001, N003 x2, I003, D003, R000 x4) and what our MCP
// rules add (no outputSchema on the triad's tools, read_secret not
// annotated read-only or idempotent); --call-reads calls read_secret,
// which answers with text only, and never do_launch.
func TestThirdPartyServer(t *testing.T) {
	reference := []string{"do_launch:I003", "do_launch:R000", "get_status:N003", "get_status:R000", "list_rockets:N003",
		"list_rockets:R000", "read_secret:D003", "read_secret:R000", "server:S001"}
	ours := []string{"do_launch:M002", "read_secret:M002", "read_secret:M005", "read_secret:M006"}
	want := append(slices.Clone(reference), ours...)
	slices.Sort(want)
	if got := lintFixture(t, "thirdparty", false); !slices.Equal(got, want) {
		t.Errorf("findings %v,\nwant %v", got, want)
	}
	want = append(want, "read_secret:C001")
	slices.Sort(want)
	if got := lintFixture(t, "thirdparty", true); !slices.Equal(got, want) {
		t.Errorf("with --call-reads: findings %v,\nwant %v", got, want)
	}
}

// TestConnectFails: a server that cannot be reached is an error, not an
// empty surface.
func TestConnectFails(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, err := lint.Connect(ctx, lint.Target{URL: "http://127.0.0.1:1/mcp"}, "lint-test", "1"); err == nil {
		t.Error("Connect to a closed port: no error")
	}
	if _, err := lint.Connect(ctx, lint.Target{Command: filepath.Join(t.TempDir(), "no-such-server")}, "lint-test", "1"); err == nil {
		t.Error("Connect to a missing command: no error")
	}
}
