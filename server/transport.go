package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	return st.Listen(ctx, newGuardLines(in), out) // 1e309 gets a typed answer: numbers.go
}

// HTTPConfig configures the streamable HTTP transport.
type HTTPConfig struct {
	// Path is the MCP endpoint; "" means "/mcp".
	Path string
	// AllowedOrigins are the browser origins ("https://agent.example")
	// allowed to call. Requests without an Origin header (non-browser
	// clients) and from loopback origins are always allowed.
	AllowedOrigins []string
	// Caller is who every HTTP call is made as when Tokens is nil.
	Caller Caller
	// Tokens, when set, are required: a request without a valid
	// "Authorization: Bearer TOKEN" header gets 401, and a valid one makes
	// the call as the token's caller.
	Tokens *Tokens
	// MaxBodyBytes bounds a request body; 0 means DefaultMaxBodyBytes. A
	// larger body gets 413.
	MaxBodyBytes int64
}

// DefaultMaxBodyBytes bounds an HTTP request body unless configured.
const DefaultMaxBodyBytes = 1 << 20

// HTTPHandler returns the streamable HTTP transport (both protocol
// generations mcp-go speaks) behind, in order: a body size limit (413),
// Origin validation (403) and, with tokens, bearer authentication (401).
// Sessions are tracked, so a session the client deleted answers 404.
func (s *Server) HTTPHandler(cfg HTTPConfig) http.Handler {
	path := cfg.Path
	if path == "" {
		path = "/mcp"
	}
	opts := []mcpserver.StreamableHTTPOption{
		mcpserver.WithEndpointPath(path),
		mcpserver.WithStateful(true),
		mcpserver.WithStreamableHTTPLogger(s.log.With("transport", "http")),
		mcpserver.WithHTTPContextFunc(func(ctx context.Context, r *http.Request) context.Context {
			if c, ok := r.Context().Value(callerKey{}).(Caller); ok {
				return WithCaller(ctx, c)
			}
			return WithCaller(ctx, cfg.Caller)
		}),
	}
	if len(cfg.AllowedOrigins) > 0 {
		// Browser clients on an allowed origin get CORS answers, preflight
		// included; the session id is exposed so they can keep a session.
		opts = append(opts, mcpserver.WithStreamableHTTPCORS(
			mcpserver.WithCORSAllowedOrigins(cfg.AllowedOrigins...),
			mcpserver.WithCORSAllowedHeaders("Content-Type", "Accept", "Authorization",
				"Mcp-Session-Id", "Mcp-Protocol-Version", "Last-Event-ID"),
			mcpserver.WithCORSExposedHeaders("Mcp-Session-Id"),
		))
	}
	h := mcpserver.NewStreamableHTTPServer(s.mcp, opts...)
	mux := http.NewServeMux()
	mux.Handle(path, guardBodies(h)) // 1e309 gets a typed answer: numbers.go
	var next http.Handler = mux
	if cfg.Tokens != nil {
		next = bearerAuth(next, cfg.Tokens, s.log)
	}
	limit := cfg.MaxBodyBytes
	if limit <= 0 {
		limit = DefaultMaxBodyBytes
	}
	return bodyLimit(originCheck(next, cfg.AllowedOrigins, s.log), limit)
}

// bearerAuth makes every request prove a token and carries its caller.
func bearerAuth(next http.Handler, tokens *Tokens, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			// A CORS preflight carries no credentials by design; it runs
			// nothing, and the request it announces must bring a token.
			next.ServeHTTP(w, r)
			return
		}
		auth := r.Header.Get("Authorization")
		scheme, token, _ := strings.Cut(auth, " ")
		if auth == "" || !strings.EqualFold(scheme, "Bearer") {
			w.Header().Set("WWW-Authenticate", `Bearer realm="promcp-device"`)
			jsonRPCError(w, http.StatusUnauthorized, "a bearer token is required (Authorization: Bearer TOKEN)")
			return
		}
		c, ok := tokens.Lookup(strings.TrimSpace(token))
		if !ok {
			log.Warn("refused a request with an unknown bearer token", "remote", r.RemoteAddr)
			w.Header().Set("WWW-Authenticate", `Bearer realm="promcp-device", error="invalid_token"`)
			jsonRPCError(w, http.StatusUnauthorized, "the bearer token is not valid")
			return
		}
		next.ServeHTTP(w, r.WithContext(WithCaller(r.Context(), c)))
	})
}

// bodyLimit answers 413 to a request body larger than limit. The body is
// read here, so the transport never sees a truncated message.
func bodyLimit(next http.Handler, limit int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > limit {
			jsonRPCError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body of %d bytes is over the limit of %d", r.ContentLength, limit))
			return
		}
		if r.Body != nil && r.Body != http.NoBody {
			body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
			if err != nil {
				if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
					jsonRPCError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body is over the limit of %d bytes", limit))
					return
				}
				jsonRPCError(w, http.StatusBadRequest, "reading the request body: "+err.Error())
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		next.ServeHTTP(w, r)
	})
}

func jsonRPCError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": -32600, "message": msg},
	})
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
		jsonRPCError(w, http.StatusForbidden, "origin "+origin+" is not allowed (start the server with --allow-origin to allow it)")
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
