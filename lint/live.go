package lint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// Target is a live MCP server: a streamable HTTP URL, or a command that
// serves MCP on its stdin and stdout.
type Target struct {
	URL     string
	Headers map[string]string
	Command string
	Args    []string
	// Env is added to the command's environment.
	Env []string
	// Stderr receives the command's standard error as it is written; nil
	// keeps only its most recent output (the last 64 KiB), which Finish
	// returns. Finish returns it in either case.
	Stderr io.Writer
}

// String names the target in reports.
func (t Target) String() string {
	if t.URL != "" {
		return t.URL
	}
	return strings.Join(append([]string{t.Command}, t.Args...), " ")
}

// Session is a connection to a live server and the tools it lists, as it
// sent them.
type Session struct {
	c       *client.Client
	stdio   *transport.Stdio // nil for a URL
	Tools   []*Tool
	schemas map[string][]byte // output schemas by tool, for CallReads
	// standing are the digests of the tools' standing parts by URI, as
	// tools/list gives them; texts the resources read, by URI (CallReads).
	standing map[string]string
	texts    map[string][]byte
}

// Connect starts a client for t, initializes it and lists the tools (every
// page), keeping each tool's JSON as the server sent it. ctx bounds the
// session's life (a stdio command is stopped when it ends); the handshake
// and the listing must finish within a minute.
func Connect(ctx context.Context, t Target, clientName, clientVersion string) (*Session, error) {
	rec := &recorder{}
	var (
		tr    transport.Interface
		stdio *transport.Stdio
	)
	switch {
	case t.URL != "":
		var opts []transport.StreamableHTTPCOption
		if len(t.Headers) > 0 {
			opts = append(opts, transport.WithHTTPHeaders(t.Headers))
		}
		h, err := transport.NewStreamableHTTP(t.URL, opts...)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", t.URL, err)
		}
		tr = &recordingHTTP{h, rec}
	case t.Command != "":
		var opts []transport.StdioOption
		if t.Stderr != nil {
			opts = append(opts, transport.WithCommandStderrWriter(t.Stderr))
		}
		stdio = transport.NewStdioWithOptions(t.Command, t.Env, t.Args, opts...)
		tr = &recordingStdio{stdio, rec}
	default:
		return nil, errors.New("no server: give a URL or a command")
	}
	c := client.NewClient(tr)
	if err := c.Start(ctx); err != nil {
		return nil, fmt.Errorf("%s: %w", t, err)
	}
	hctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := c.Initialize(hctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ClientInfo: mcp.Implementation{Name: clientName, Version: clientVersion}}}); err != nil {
		return nil, fmt.Errorf("%s: initialize: %w%s", t, err, (&Session{c: c, stdio: stdio}).tail())
	}
	if _, err := c.ListTools(hctx, mcp.ListToolsRequest{}); err != nil {
		return nil, fmt.Errorf("%s: tools/list: %w%s", t, err, (&Session{c: c, stdio: stdio}).tail())
	}
	tools, err := rec.tools()
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("%s: tools/list: %w", t, err)
	}
	return &Session{c: c, stdio: stdio, Tools: tools}, nil
}

// recorder keeps the raw results of tools/list, so that each tool is read
// from the JSON the server sent (the typed client reshapes the schemas it
// does not model). The recording transports embed the real ones, so the
// client sees every capability of the transport.
type recorder struct {
	mu    sync.Mutex
	pages []json.RawMessage
}

func (r *recorder) record(req transport.JSONRPCRequest, resp *transport.JSONRPCResponse, err error) {
	if err == nil && resp != nil && resp.Error == nil && req.Method == string(mcp.MethodToolsList) {
		r.mu.Lock()
		r.pages = append(r.pages, slices.Clone(resp.Result))
		r.mu.Unlock()
	}
}

func (r *recorder) tools() ([]*Tool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var tools []*Tool
	for _, page := range r.pages {
		var res struct {
			Tools []json.RawMessage `json:"tools"`
		}
		if err := json.Unmarshal(page, &res); err != nil {
			return nil, err
		}
		for _, raw := range res.Tools {
			var t Tool
			if err := json.Unmarshal(raw, &t); err != nil {
				return nil, fmt.Errorf("tools[%d]: %w", len(tools), err)
			}
			tools = append(tools, &t)
		}
	}
	return tools, nil
}

// recordingHTTP and recordingStdio record tools/list as it passes. They are
// two types, not one wrapping a transport.Interface, because the client
// finds optional methods (HTTPConnection, BidirectionalInterface) by type
// assertion, which an interface-typed field would hide.
type recordingHTTP struct {
	*transport.StreamableHTTP
	rec *recorder
}

func (t *recordingHTTP) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	resp, err := t.StreamableHTTP.SendRequest(ctx, req)
	t.rec.record(req, resp, err)
	return resp, err
}

type recordingStdio struct {
	*transport.Stdio
	rec *recorder
}

func (t *recordingStdio) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	resp, err := t.Stdio.SendRequest(ctx, req)
	t.rec.record(req, resp, err)
	return resp, err
}

// Close ends the session (and the command, for stdio).
func (s *Session) Close() error { return s.c.Close() }

// stderr is the stdio server's standard error (nil for a URL, or a
// command that never started).
func (s *Session) stderr() io.Reader {
	if s.stdio == nil {
		return nil
	}
	return s.stdio.Stderr()
}

// tail ends a session that failed and returns the last lines its server
// wrote on stderr, to say why ("" when it wrote none).
func (s *Session) tail() string {
	var out string
	if r := s.stderr(); r != nil {
		// A server that failed has usually exited: its stderr ends by
		// itself. One still running is stopped after a grace period.
		done := make(chan string, 1)
		go func() { b, _ := io.ReadAll(r); done <- string(b) }()
		select {
		case out = <-done:
		case <-time.After(2 * time.Second):
			s.Close()
			out = <-done
		}
	}
	s.Close()
	lines := stderrLines(out)
	if len(lines) == 0 {
		return ""
	}
	return "; the server's stderr ends:\n  | " + strings.Join(lines[max(0, len(lines)-5):], "\n  | ")
}

// Finish ends the session and returns what a stdio server wrote on its
// standard error while it ran (its last 64 KiB; "" for a URL). Closing first makes the text complete: it is
// read to the end of the stream, not up to whatever had arrived.
func (s *Session) Finish() (string, error) {
	err := s.Close()
	r := s.stderr()
	if r == nil {
		return "", err
	}
	b, rerr := io.ReadAll(r)
	if err == nil && rerr != nil {
		err = fmt.Errorf("server stderr: %w", rerr)
	}
	return string(b), err
}
