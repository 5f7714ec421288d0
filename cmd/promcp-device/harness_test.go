package main

// The e2e harness: start the binary, connect an MCP client to it (over
// stdio or streamable HTTP, with a bearer token or none), call a tool and
// decode its structured body.

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/promcp/promcp-device/promcp"
	"github.com/promcp/promcp-device/promcp/promcptest"
	"github.com/promcp/promcp-device/server"
)

// session is a connected client plus the output schemas it was given.
type session struct {
	t       *testing.T
	c       *client.Client
	schemas *promcp.Validator
	tools   []mcp.Tool
}

func connect(t *testing.T, c *client.Client) *session {
	t.Helper()
	ctx := t.Context()
	if err := c.Start(ctx); err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ClientInfo: mcp.Implementation{Name: "promcp-e2e", Version: "1"}}}); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	list, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	v := promcptest.Validator(t)
	for _, tool := range list.Tools {
		if len(tool.RawOutputSchema) == 0 && tool.OutputSchema.Type == "" {
			t.Fatalf("tool %s has no outputSchema", tool.Name)
		}
		schema, _ := json.Marshal(tool.OutputSchema)
		if len(tool.RawOutputSchema) > 0 {
			schema = tool.RawOutputSchema
		}
		if _, err := v.Compile(tool.Name, schema); err != nil {
			t.Fatalf("tool %s outputSchema does not compile: %v", tool.Name, err)
		}
	}
	return &session{t: t, c: c, schemas: v, tools: list.Tools}
}

// call calls a tool and checks the result against the tool's declared
// schema and its kind's base schema; it returns the structured body.
func (s *session) call(name string, args map[string]any) (map[string]any, bool) {
	s.t.Helper()
	res, err := s.c.CallTool(s.t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: args}})
	if err != nil {
		s.t.Fatalf("%s(%v): %v", name, args, err)
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil || res.StructuredContent == nil {
		s.t.Fatalf("%s(%v): no structuredContent (%v)", name, args, err)
	}
	if err := s.schemas.Validate(name, b); err != nil {
		s.t.Fatalf("%s(%v) = %s: breaks its outputSchema: %v", name, args, b, err)
	}
	kind, _ := promcp.KindOf(name)
	if err := s.schemas.Validate(string(kind), b); err != nil {
		s.t.Fatalf("%s(%v) = %s: breaks the proMCP %s schema: %v", name, args, b, kind, err)
	}
	if len(res.Content) == 0 {
		s.t.Fatalf("%s: no text copy of the result for older clients", name)
	}
	// Every result is stamped with where it came from and how it was checked.
	var prov map[string]any
	if res.Meta != nil {
		prov, _ = res.Meta.AdditionalFields[server.ProvenanceKey].(map[string]any)
	}
	if prov["tool"] != name || prov["kind"] != string(kind) || prov["checked"] == nil || prov["contract"] != "proMCP v0.2" {
		s.t.Fatalf("%s: _meta provenance = %v, want the tool, its kind, the contract and how the body was checked", name, prov)
	}
	if kind != promcp.KindCanDo && prov["source"] == nil {
		s.t.Fatalf("%s: _meta provenance = %v, want the source", name, prov)
	}
	// Its references (the warrant, the standing rebuttal) resolve where
	// the client reads the result: on a gateway, and through a fleet.
	if _, err := promcp.ResolveEnvelope(prov, s.readResource(s.t), nil); prov[promcp.EnvelopeToulmin] != nil && err != nil {
		s.t.Fatalf("%s: the envelope's references do not resolve here: %v", name, err)
	}
	var body map[string]any
	if err := json.Unmarshal(b, &body); err != nil {
		s.t.Fatal(err)
	}
	return body, res.IsError
}

// startHTTP starts `serve --http 127.0.0.1:0` and returns the URL it prints.
func startHTTP(t *testing.T, args ...string) string {
	t.Helper()
	return startPrinting(t, `on (http://\S+/mcp)`,
		simServe(append([]string{"--http", "127.0.0.1:0"}, args...)...)...)
}

// startPrinting runs the binary with args until the test ends (then
// interrupts it) and returns the first submatch of pattern in what it
// prints: the address it chose.
func startPrinting(t *testing.T, pattern string, args ...string) string {
	t.Helper()
	_, url := launch(t, os.Interrupt, nil, binary, pattern, args...)
	if url == "" {
		t.Fatalf("%s printed nothing matching %s", strings.Join(args, " "), pattern)
	}
	return url
}

// readFile returns the content of the file at path; an error fails t.
func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// logFile is a file for a child's stderr (its log), closed when the test
// ends, and a function that reads what the file holds so far.
func logFile(t *testing.T) (*os.File, func() string) {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "stderr-*.log")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, func() string {
		return string(readFile(t, f.Name()))
	}
}

// simServe is `serve --sim --log-level warn` with args.
func simServe(args ...string) []string {
	return append([]string{"serve", "--sim", "--log-level", "warn"}, args...)
}

// stdioSession serves args (after `serve --sim --log-level warn`) over
// stdio and connects a client speaking protocol.
func stdioSession(t *testing.T, protocol string, args ...string) *session {
	t.Helper()
	return commandSession(t, protocol, binary, simServe(args...))
}

// commandSession runs command with args, an MCP server over stdio, and
// connects a client speaking protocol (the client's choice when ""), with
// opts (an elicitation handler).
func commandSession(t *testing.T, protocol, command string, args []string, opts ...client.ClientOption) *session {
	t.Helper()
	if protocol != "" {
		opts = append(opts, client.WithProtocolVersion(protocol))
	}
	return connect(t, client.NewClient(transport.NewStdio(command, nil, args...), opts...))
}

// httpSession connects a client speaking protocol to the server at url.
func httpSession(t *testing.T, url, protocol string) *session {
	t.Helper()
	c, err := client.NewStreamableHttpClient(url)
	if err != nil {
		t.Fatal(err)
	}
	// NewStreamableHttpClient takes transport options only; pin the
	// protocol on a client over the same transport.
	return connect(t, client.NewClient(c.GetTransport(), client.WithProtocolVersion(protocol)))
}

// serveProc is a running `serve --http` process.
type serveProc struct {
	cmd *exec.Cmd
	url string
}

// startServe starts the binary with `serve --sim --http 127.0.0.1:0` and
// the given arguments and waits for the URL it prints.
func startServe(t *testing.T, args ...string) *serveProc {
	t.Helper()
	cmd, url := launch(t, os.Kill, nil, binary, `on (https?://\S+/mcp)`, simServe(append([]string{"--http", "127.0.0.1:0"}, args...)...)...)
	if url == "" {
		t.Fatalf("serve %v printed no URL", args)
	}
	return &serveProc{cmd: cmd, url: url}
}

// mcpClient is an initialized client over HTTP at url, sending the bearer
// token (none when ""); it is closed when the test ends.
func mcpClient(t *testing.T, url, token string) *client.Client {
	t.Helper()
	c, err := dialHTTP(url, "", token)
	if err != nil {
		t.Fatalf("%s: %v", url, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// dialHTTP is an initialized client over HTTP at url speaking protocol
// (the newest when ""), sending the bearer token (none when ""). It does
// not fail the test: a hostile test expects some dials to be refused.
func dialHTTP(url, protocol, token string) (*client.Client, error) {
	var opts []transport.StreamableHTTPCOption
	if token != "" {
		opts = append(opts, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	}
	c, err := client.NewStreamableHttpClient(url, opts...)
	if err != nil {
		return nil, err
	}
	if protocol != "" {
		c = client.NewClient(c.GetTransport(), client.WithProtocolVersion(protocol))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Start(context.Background()); err != nil {
		return nil, err
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ClientInfo: mcp.Implementation{Name: "promcp-e2e", Version: "1"}}}); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// callTool calls a tool and decodes its structured body, without the
// schema checks of session.call (for calls made from many goroutines).
func callTool(t *testing.T, c *client.Client, name string, args map[string]any) (map[string]any, error) {
	res, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: args}})
	if err != nil {
		return nil, err
	}
	var body map[string]any
	b, _ := json.Marshal(res.StructuredContent)
	return body, json.Unmarshal(b, &body)
}
