package server

import (
	"context"
	"encoding/json"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	mcpserver "github.com/mark3labs/mcp-go/server"
)

// ServeStdio serves the tools over newline-delimited JSON-RPC on in and
// out until ctx ends or in is closed. Every call is made as caller. Only
// protocol messages are written to out; logs go to the server's logger.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer, caller Caller) error {
	st := mcpserver.NewStdioServer(s.mcp)
	st.SetErrorLogger(log.New(slogWriter{s.log}, "", 0))
	st.SetContextFunc(func(ctx context.Context) context.Context { return WithCaller(ctx, caller) })
	return st.Listen(ctx, in, out)
}

// HTTPConfig configures the streamable HTTP transport.
type HTTPConfig struct {
	// Path is the MCP endpoint; "" means "/mcp".
	Path string
	// AllowedOrigins are the browser origins ("https://agent.example")
	// allowed to call. Requests without an Origin header (non-browser
	// clients) and from loopback origins are always allowed.
	AllowedOrigins []string
	// Caller is who every HTTP call is made as, until tokens bind callers.
	Caller Caller
}

// HTTPHandler returns the streamable HTTP transport (both protocol
// generations mcp-go speaks) behind Origin validation. Sessions are
// tracked, so a session the client deleted answers 404.
func (s *Server) HTTPHandler(cfg HTTPConfig) http.Handler {
	path := cfg.Path
	if path == "" {
		path = "/mcp"
	}
	h := mcpserver.NewStreamableHTTPServer(s.mcp,
		mcpserver.WithEndpointPath(path),
		mcpserver.WithStateful(true),
		mcpserver.WithStreamableHTTPLogger(s.log.With("transport", "http")),
		mcpserver.WithHTTPContextFunc(func(ctx context.Context, _ *http.Request) context.Context {
			return WithCaller(ctx, cfg.Caller)
		}),
	)
	mux := http.NewServeMux()
	mux.Handle(path, h)
	return originCheck(mux, cfg.AllowedOrigins, s.log)
}

// originCheck refuses browser requests from origins not allowed, as the
// streamable HTTP transport requires (DNS rebinding protection).
func originCheck(next http.Handler, allowed []string, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" || originAllowed(origin, allowed) {
			next.ServeHTTP(w, r)
			return
		}
		log.Warn("refused request from a foreign origin", "origin", origin, "remote", r.RemoteAddr)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_ = json.NewEncoder(w).Encode(map[string]any{
			"jsonrpc": "2.0", "id": nil,
			"error": map[string]any{"code": -32600, "message": "origin " + origin + " is not allowed (start the server with --allow-origin to allow it)"},
		})
	})
}

func originAllowed(origin string, allowed []string) bool {
	if slices.Contains(allowed, origin) || slices.Contains(allowed, "*") {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	host := u.Hostname()
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// slogWriter turns mcp-go's log.Logger output into slog records.
type slogWriter struct{ log *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	w.log.Error(strings.TrimSpace(string(p)), "transport", "stdio")
	return len(p), nil
}
