package server

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// ServeStdio serves the tools over newline-delimited JSON-RPC on in and
// out until ctx ends or in is closed. Every call is made as caller. Only
// protocol messages are written to out; logs go to the server's logger.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer, caller Caller) error {
	st := mcpserver.NewStdioServer(s.mcp)
	st.SetErrorLogger(log.New(slogWriter{s.log}, "", 0))
	st.SetContextFunc(func(ctx context.Context) context.Context { return WithCaller(ctx, caller) })
	lw := &lineWriter{w: out}
	lines := newGuardLines(in) // 1e309 gets a typed answer: numbers.go
	var answering sync.WaitGroup
	defer answering.Wait()
	lines.intercept = func(msg []byte) bool { // physmcp/* (mesh.go), which mcp-go does not know
		c, ok := parseMeshCall(msg)
		if ok {
			answering.Go(func() { _, _ = lw.Write(append(s.answerMesh(WithCaller(ctx, caller), c), '\n')) })
			return true
		}
		answer, ok := s.stdioList(ctx, msg) // a plain tools/list: its cached page (toolslist.go)
		if ok {
			answering.Go(func() { _, _ = lw.Write(answer) })
		}
		return ok
	}
	return st.Listen(ctx, lines, lw)
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
	// Certs, when set, accept client certificates (the server must serve
	// TLS and request them: see ClientTLS): a request whose certificate
	// one of them verifies is made as its caller. With Tokens too, a
	// request may bring either; the certificate is tried first.
	Certs []*CertVerifier
	// MaxBodyBytes bounds a request body; 0 means DefaultMaxBodyBytes. A
	// larger body gets 413.
	MaxBodyBytes int64
	// MaxBufferedBytes bounds the request bodies held in memory at once,
	// all connections together (each body counts twice: the copy read
	// here and the MCP layer's); 0 means DefaultMaxBufferedBytes. A body
	// that does not fit gets 503 with Retry-After before it is read.
	MaxBufferedBytes int64
	// MaxBufferedBytesPerCaller is the share of MaxBufferedBytes one
	// caller (one token) may hold at once, so that one token cannot take
	// it all; 0 means a quarter of it with Tokens, all of it without
	// (every call is then one caller's). Besides, each caller may always
	// have SmallBodiesPerCaller bodies of at most SmallBodyBytes in flight
	// (a do_* call, a safe stop), whatever other callers hold: a reserve
	// of SmallBodiesPerCaller*2*SmallBodyBytes per token.
	MaxBufferedBytesPerCaller int64
	// Sessions caps the sessions and ends idle ones.
	Sessions SessionLimits
	// WriteTimeout bounds each write of a response, streams included (the
	// deadline moves with every write, so an open stream lives on while a
	// client that stops reading is cut off); 0 means DefaultWriteTimeout.
	WriteTimeout time.Duration
	// ReadTimeout bounds reading a whole request, body included; 0 means
	// DefaultReadTimeout. net/http lifts it once the body is read.
	ReadTimeout time.Duration
	// Now is the clock of session idle expiry; nil means time.Now.
	Now func() time.Time
	// Groups are more endpoints: each Server (made with Surface, so that
	// it shares this one's idempotency store, audit log and approvals) is
	// served at Path + "/" + its name, behind the same Origin check,
	// authentication, body limits and session caps (counted over all
	// endpoints together). A session belongs to the endpoint that opened
	// it: its id is unknown (404) on every other endpoint.
	Groups map[string]*Server
	// GroupFunc, when set, finds the groups that come and go while the
	// handler serves (a fleet endpoint's gateways): a request for
	// Path + "/" + name that is not in Groups is served by GroupFunc(name)
	// (nil: 404), behind the same checks and session caps as the others.
	// A name served by a new Server ends its sessions opened on the old.
	GroupFunc func(name string) *Server
}

// HTTP defaults, sized for a Raspberry Pi with 64 MB to spare: at most
// DefaultMaxConns connections (each at most DefaultMaxHeaderBytes of
// headers), DefaultMaxBufferedBytes of bodies.
const (
	DefaultMaxBodyBytes      = 1 << 20
	DefaultMaxBufferedBytes  = 16 << 20
	DefaultMaxConns          = 128
	DefaultMaxHeaderBytes    = 64 << 10
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultWriteTimeout      = 30 * time.Second
	DefaultIdleTimeout       = 90 * time.Second

	// SmallBodyBytes is the largest body (by its Content-Length) that the
	// per-caller reserve admits; a tool call is a few hundred bytes.
	SmallBodyBytes = 64 << 10
	// SmallBodiesPerCaller is how many small bodies each caller may have
	// in flight beyond its share of the shared budget.
	SmallBodiesPerCaller = 4
)

// HTTPServer returns an http.Server for HTTPHandler(cfg) with every
// timeout set: headers within DefaultReadHeaderTimeout, a whole request
// (body included) within cfg.ReadTimeout, each response write within
// cfg.WriteTimeout, an idle keep-alive connection closed after
// DefaultIdleTimeout; headers at most DefaultMaxHeaderBytes; over HTTP/2
// at most 16 requests and 64 KiB of unread bodies per connection. A
// request that streams (a GET stream, a tool call answered over SSE) has
// its read deadline lifted once its body is read (net/http does so), and
// its write deadline moved forward with every write. Serve it on a
// LimitListener.
func (s *Server) HTTPServer(cfg HTTPConfig) *http.Server {
	return &http.Server{
		Handler:           s.HTTPHandler(cfg),
		ReadHeaderTimeout: DefaultReadHeaderTimeout,
		ReadTimeout:       cmp.Or(cfg.ReadTimeout, DefaultReadTimeout),
		WriteTimeout:      cmp.Or(cfg.WriteTimeout, DefaultWriteTimeout),
		IdleTimeout:       DefaultIdleTimeout,
		MaxHeaderBytes:    DefaultMaxHeaderBytes,
		// Over HTTPS (HTTP/2), a connection may buffer 64 KiB of bodies
		// not yet read (not 1 MiB) and carry 16 requests at once.
		HTTP2: &http.HTTP2Config{MaxConcurrentStreams: 16,
			MaxReceiveBufferPerConnection: 64 << 10, MaxReceiveBufferPerStream: 64 << 10},
		ErrorLog: slog.NewLogLogger(s.log.With("transport", "http").Handler(), slog.LevelWarn),
	}
}

// HTTPHandler returns the streamable HTTP transport (both protocol
// generations mcp-go speaks) behind, in order: Origin validation (403)
// and, with tokens, bearer authentication (401), both decided on the
// headers before a byte of the body is read; then, for GET and DELETE, the
// session (404 unless it is a live session of the same caller, opened at
// the same endpoint); then, for
// POST, the body: over the size limit 413, over the caller's part of the
// buffered-bytes budget 503, an idempotency_key far over its maxLength an
// invalid-params error, and an initialize at a session cap where every
// session is in use 429 (otherwise the least recently used idle one is
// ended to make room). Sessions idle for longer than cfg.Sessions.IdleTTL
// (FirstIdleTTL for one never used after its initialize) are deleted here
// and in mcp-go.
func (s *Server) HTTPHandler(cfg HTTPConfig) http.Handler {
	path := cfg.Path
	if path == "" {
		path = "/mcp"
	}
	sessions := newSessionTable(cfg.Sessions, cfg.Now)
	if s.observer != nil {
		s.observer.Sessions(sessions.open)
	}
	endpoints := map[string]http.Handler{path: s.streamable(cfg, path, sessions)}
	for name, g := range cfg.Groups {
		if !groupPath().MatchString(name) || g == nil {
			s.log.Error("not serving a group: its name is not a URL path segment", "group", name)
			continue
		}
		endpoints[path+"/"+name] = g.streamable(cfg, path+"/"+name, sessions)
	}
	dyn := &dynamicGroups{root: s, cfg: cfg, prefix: path + "/", sessions: sessions, byPath: map[string]dynamicGroup{}}
	sessions.expire = func(id, endpoint, why string) {
		h, ok := endpoints[endpoint]
		if !ok {
			if h, ok = dyn.handler(endpoint); !ok {
				return
			}
		}
		// A DELETE through mcp-go's own handler drops everything it keeps
		// for the session.
		r, err := http.NewRequestWithContext(context.Background(), http.MethodDelete, "http://localhost"+endpoint, nil)
		if err != nil {
			return
		}
		r.Header.Set(mcpserver.HeaderKeySessionID, id)
		h.ServeHTTP(discardResponse{}, r)
		s.log.Info("ended a session", "session", id, "endpoint", endpoint, "why", why)
	}
	mux := http.NewServeMux()
	for p, h := range endpoints {
		mux.Handle(p, s.meshFront(guardBodies(h))) // physmcp/*: mesh.go; 1e309 gets a typed answer: numbers.go
	}
	if cfg.GroupFunc != nil {
		mux.Handle(path+"/", dyn) // the exact paths above come first
	}
	g := &httpGate{
		next:     mux,
		log:      s.log,
		sessions: sessions,
		maxBody:  cmp.Or(cfg.MaxBodyBytes, DefaultMaxBodyBytes),
		budget:   newByteBudget(cfg),
		write:    cmp.Or(cfg.WriteTimeout, DefaultWriteTimeout),
	}
	var next http.Handler = g
	if cfg.authRequired() {
		next = authenticate(next, cfg, s.log)
	} else {
		caller := cfg.Caller
		inner := next
		next = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			inner.ServeHTTP(w, r.WithContext(WithCaller(r.Context(), caller)))
		})
	}
	return originCheck(next, cfg.AllowedOrigins, s.log)
}

// groupPath is a group name that is one plain URL path segment (no
// slash, no escape, no ServeMux wildcard).
var groupPath = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.~-]*$`) })

// streamable is mcp-go's streamable HTTP server for s at path, its
// sessions kept in sessions.
func (s *Server) streamable(cfg HTTPConfig, path string, sessions *sessionTable) http.Handler {
	opts := []mcpserver.StreamableHTTPOption{
		mcpserver.WithEndpointPath(path),
		mcpserver.WithSessionIdManagerResolver(sessions),
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
	return s.listFront(sessions, s.readFrontHandler(sessions, mcpserver.NewStreamableHTTPServer(s.mcp, opts...)))
}

// dynamicGroups serves the groups HTTPConfig.GroupFunc finds, each
// through one streamable handler for as long as the same Server serves
// its name.
type dynamicGroups struct {
	root     *Server // answers the mesh methods
	cfg      HTTPConfig
	prefix   string // Path + "/"
	sessions *sessionTable

	mu     sync.Mutex
	byPath map[string]dynamicGroup
}

type dynamicGroup struct {
	srv *Server
	h   http.Handler
}

func (d *dynamicGroups) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name, ok := strings.CutPrefix(r.URL.Path, d.prefix)
	var g *Server
	if ok && groupPath().MatchString(name) {
		g = d.cfg.GroupFunc(name)
	}
	if g == nil {
		d.mu.Lock()
		was, had := d.byPath[r.URL.Path]
		d.mu.Unlock()
		if had { // its sessions go with it, in mcp-go too
			d.sessions.endAt(r.URL.Path, "the group is no longer served")
			d.mu.Lock()
			if d.byPath[r.URL.Path].srv == was.srv { // not served anew meanwhile
				delete(d.byPath, r.URL.Path)
			}
			d.mu.Unlock()
		}
		jsonRPCError(w, http.StatusNotFound, "no endpoint "+r.URL.Path+" (a group that left, or never was)")
		return
	}
	d.mu.Lock()
	cur, ok := d.byPath[r.URL.Path]
	stale := ok && cur.srv != g
	if !ok || stale {
		cur = dynamicGroup{srv: g, h: d.root.meshFront(guardBodies(g.streamable(d.cfg, r.URL.Path, d.sessions)))}
		d.byPath[r.URL.Path] = cur
	}
	d.mu.Unlock()
	if stale {
		// The sessions opened on the Server that served this name before
		// are unknown to the new one: they end, and their clients start again.
		d.sessions.endAt(r.URL.Path, "the group is served anew")
	}
	cur.h.ServeHTTP(w, r)
}

// handler is the handler that serves endpoint, if one does.
func (d *dynamicGroups) handler(endpoint string) (http.Handler, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	g, ok := d.byPath[endpoint]
	return g.h, ok
}

// Authenticated puts h behind the authentication of cfg (its tokens and
// client certificates), as HTTPHandler's endpoints are: for handlers
// served beside them on the same listener.
func (s *Server) Authenticated(h http.Handler, cfg HTTPConfig) http.Handler {
	if !cfg.authRequired() {
		return h
	}
	return authenticate(h, cfg, s.log)
}

// authRequired tells whether callers must prove who they are.
func (cfg HTTPConfig) authRequired() bool { return cfg.Tokens != nil || len(cfg.Certs) > 0 }

// authenticate makes every request prove a credential and carries its
// caller: the first that is accepted of a client certificate (cfg.Certs)
// and a bearer token (cfg.Tokens: opaque, or a JWT). A request with none,
// or with none accepted, gets 401 with a WWW-Authenticate that says why;
// the log says more. It reads headers only: a request refused here never
// has its body read.
func authenticate(next http.Handler, cfg HTTPConfig, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			// A CORS preflight carries no credentials by design; it runs
			// nothing, and the request it announces must bring a token.
			next.ServeHTTP(w, r)
			return
		}
		c, err := Authenticate(r, cfg.Tokens, cfg.Certs)
		if err != nil {
			if _, bearer, _ := strings.Cut(r.Header.Get("Authorization"), " "); bearer != "" && cfg.Tokens != nil {
				if u, undeclared := cfg.Tokens.Undeclared(strings.TrimSpace(bearer)); undeclared {
					log.Warn("refused a token whose role the policy does not declare", "name", u.Name, "role", u.Role, "remote", r.RemoteAddr)
					refuse(w, http.StatusForbidden, fmt.Sprintf("the token of %s has role %q, which the policy does not declare: it may not act or read until its role is fixed (promcp-device token add) or declared in the policy's roles", u.Name, u.Role))
					return
				}
			}
			ae, _ := errors.AsType[*AuthError](err)
			if ae == nil {
				ae = &AuthError{Reason: "the credential is not valid", Detail: err.Error()}
			}
			log.Warn("refused a request: "+ae.Reason, "remote", r.RemoteAddr, "path", r.URL.Path, "why", ae.Error())
			code := "invalid_token"
			if errors.Is(err, errNoCredential) {
				code = "invalid_request"
			}
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm="promcp-device", error=%q, error_description=%q`, code, ae.Reason))
			msg := ae.Reason
			if errors.Is(err, errNoCredential) {
				msg = credentialWanted(cfg)
			}
			refuse(w, http.StatusUnauthorized, msg)
			return
		}
		next.ServeHTTP(w, r.WithContext(WithCaller(r.Context(), c)))
	})
}

// errNoCredential is a request that brings no credential at all.
var errNoCredential = &AuthError{Reason: "a credential is required"}

func credentialWanted(cfg HTTPConfig) string {
	switch {
	case cfg.Tokens == nil:
		return "a client certificate is required (TLS client authentication)"
	case len(cfg.Certs) == 0:
		return "a bearer token is required (Authorization: Bearer TOKEN)"
	}
	return "a credential is required: a bearer token (Authorization: Bearer TOKEN) or a client certificate"
}

// Authenticate returns the caller of a request: the first accepted of its
// client certificate (by one of certs) and its bearer token (by tokens).
// The error is an *AuthError saying why none was accepted.
func Authenticate(r *http.Request, tokens *Tokens, certs []*CertVerifier) (Caller, error) {
	var first error
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 && len(certs) > 0 {
		for _, v := range certs {
			c, err := v.Verify(r.TLS.PeerCertificates)
			if err == nil {
				return c, nil
			}
			first = cmp.Or(first, err)
		}
	}
	auth := r.Header.Get("Authorization")
	if scheme, token, _ := strings.Cut(auth, " "); auth != "" && tokens != nil {
		if !strings.EqualFold(scheme, "Bearer") {
			return Caller{}, cmp.Or(first, error(&AuthError{Reason: "the Authorization scheme is not Bearer"}))
		}
		token = strings.TrimSpace(token)
		c, err := tokens.Check(r.Context(), token)
		if err == nil {
			if tokens.hasJWT() && looksLikeJWT(token) {
				c.Credential = token
			}
			return c, nil
		}
		first = cmp.Or(first, err)
	}
	return Caller{}, cmp.Or(first, error(errNoCredential))
}

// ClientTLS is the TLS configuration of a listener whose callers may
// prove themselves with client certificates: each is requested (the
// certs' CAs announced) and verified by Authenticate, so that a missing,
// expired or untrusted certificate is refused with a 401 that says why
// rather than a failed handshake.
func ClientTLS(base *tls.Config, certs []*CertVerifier) *tls.Config {
	c := base.Clone()
	if len(certs) == 0 {
		return c
	}
	c.ClientAuth = tls.RequestClientCert
	c.ClientCAs = x509.NewCertPool()
	for _, v := range certs {
		for _, ca := range v.cas {
			c.ClientCAs.AddCert(ca)
		}
	}
	return c
}

// refuse answers a request whose body is not read, and closes the
// connection at once: the rest of the body is neither read nor waited for
// (over HTTP/2, the connection is shut down once its other streams end).
func refuse(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Connection", "close")
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
	jsonRPCError(w, status, msg)
}

// httpGate is what an authenticated request passes before mcp-go: the
// session checks, the body limits and the deadlines of streams.
type httpGate struct {
	next     http.Handler
	log      *slog.Logger
	sessions *sessionTable
	maxBody  int64
	budget   *byteBudget
	write    time.Duration
}

func (g *httpGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.sessions.sweep()
	caller := CallerFrom(r.Context()).Name
	rc := http.NewResponseController(w)
	switch r.Method {
	case http.MethodGet, http.MethodDelete:
		// Like a POST: a session this server does not know (never opened,
		// deleted, expired, or another token's) is 404.
		id := r.Header.Get(mcpserver.HeaderKeySessionID)
		known := false
		if r.Method == http.MethodGet {
			// The stream ends when its session is deleted or expires.
			var ctx context.Context
			var done func()
			if ctx, done, known = g.sessions.openStream(r.Context(), id, caller, r.URL.Path); known {
				defer done()
				r = r.WithContext(ctx)
			}
		} else {
			known = g.sessions.lookup(id, caller, r.URL.Path)
		}
		if !known {
			jsonRPCError(w, http.StatusNotFound, "unknown session: initialize a new one")
			return
		}
	case http.MethodPost:
		h, ok := g.readBody(w, r, caller)
		if !ok {
			return
		}
		defer h.release()
		if id := r.Header.Get(mcpserver.HeaderKeySessionID); id != "" {
			defer g.sessions.begin(id, caller, r.URL.Path, !bytes.Contains(h.body, []byte(mcp.MethodNotificationInitialized)))()
		}
		if refuseLongKey(w, h.body) {
			return
		}
		if isInitialize(r, h.body) {
			res, err := g.sessions.reserve(caller, r.URL.Path)
			if err != nil {
				g.log.Warn("refused a new session", "caller", caller, "remote", r.RemoteAddr, "err", err)
				w.Header().Set("Retry-After", "60")
				jsonRPCError(w, http.StatusTooManyRequests, err.Error()+": delete sessions you no longer use (HTTP DELETE), or wait for calls to end")
				return
			}
			defer g.sessions.release(res)
			r = r.WithContext(context.WithValue(r.Context(), reservationKey{}, res))
		}
	}
	// The body is read (or there is none): net/http lifts the read
	// deadline itself and only watches for the client going away.
	g.next.ServeHTTP(&deadlineWriter{ResponseWriter: w, rc: rc, d: g.write}, r)
}

// refuseLongKey answers a body whose idempotency_key is certainly longer
// than MaxKeyLength characters with an invalid-params error naming the
// argument, before the body is decoded (a long key would be copied by
// every decoding of it). It scans the raw bytes without allocating; a key
// spelt with escapes in its name is left to the input schema.
func refuseLongKey(w http.ResponseWriter, body []byte) bool {
	n, long := longString(body, "idempotency_key", maxRawKeyBytes)
	if !long {
		return false
	}
	var msg struct {
		ID json.RawMessage `json:"id"` // decoded alone: the rest is skipped, not copied
	}
	_ = json.Unmarshal(body, &msg)
	id := json.RawMessage("null")
	if len(msg.ID) > 0 && len(msg.ID) <= 256 {
		id = msg.ID
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{
		"code":    mcp.INVALID_PARAMS,
		"message": fmt.Sprintf("argument idempotency_key is %d bytes long; it may be at most %d characters (the input schema's maxLength)", n, MaxKeyLength),
		"data":    map[string]any{"field": "idempotency_key", "max_length": MaxKeyLength},
	}})
	return true
}

// maxRawKeyBytes is the JSON text of the longest valid key: a character
// is at most 12 bytes of JSON (a surrogate pair of \u escapes).
const maxRawKeyBytes = 12 * MaxKeyLength

// longString finds a member name (spelt without escapes) whose value is
// a string of more than limit bytes of JSON text, and says how long it is.
func longString(body []byte, name string, limit int) (int, bool) {
	needle := []byte(`"` + name + `"`)
	for i := 0; ; {
		j := bytes.Index(body[i:], needle)
		if j < 0 {
			return 0, false
		}
		k := skipSpace(body, i+j+len(needle))
		i += j + len(needle)
		if k >= len(body) || body[k] != ':' {
			continue
		}
		k = skipSpace(body, k+1)
		if k >= len(body) || body[k] != '"' {
			continue
		}
		start := k + 1
		for k = start; k < len(body) && body[k] != '"'; k++ {
			if body[k] == '\\' {
				k++
			}
		}
		if n := k - start; n > limit {
			return n, true
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// isInitialize tells an initialize request of the session-based protocol
// generations (the one that opens a session).
func isInitialize(r *http.Request, body []byte) bool {
	if mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) {
		return false
	}
	// Most requests neither name the method nor escape a character (which
	// could spell it): they are not decoded here.
	if !bytes.Contains(body, []byte(mcp.MethodInitialize)) && bytes.IndexByte(body, '\\') < 0 {
		return false
	}
	var msg struct {
		Method string `json:"method"`
	}
	return json.Unmarshal(body, &msg) == nil && msg.Method == string(mcp.MethodInitialize)
}

// readBody reads the body of a POST within the limits: over the size
// limit 413, over caller's part of the budget 503 (both before a byte is
// read). The body is then r.Body, held until the hold is released.
func (g *httpGate) readBody(w http.ResponseWriter, r *http.Request, caller string) (*bodyHold, bool) {
	if r.ContentLength > g.maxBody {
		refuse(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body of %d bytes is over the limit of %d", r.ContentLength, g.maxBody))
		return nil, false
	}
	want := g.maxBody
	if r.ContentLength >= 0 {
		want = r.ContentLength
	}
	h := g.budget.acquire(caller, 2*want, r.ContentLength >= 0 && r.ContentLength <= SmallBodyBytes)
	if h == nil {
		w.Header().Set("Retry-After", "1")
		refuse(w, http.StatusServiceUnavailable, "the server holds as many request bodies as it may (of this token, or in all); retry shortly")
		return nil, false
	}
	var buf bytes.Buffer
	if r.ContentLength >= 0 {
		buf.Grow(int(r.ContentLength) + bytes.MinRead) // read in place, never regrown
	}
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, g.maxBody))
	if err != nil {
		h.release()
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			refuse(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body is over the limit of %d bytes", g.maxBody))
			return nil, false
		}
		refuse(w, http.StatusBadRequest, "reading the request body: "+err.Error())
		return nil, false
	}
	h.body = buf.Bytes()
	h.shrink(2 * int64(len(h.body)))
	r.Body = &heldBody{Reader: bytes.NewReader(h.body), b: h.body}
	return h, true
}

// heldBody is a request body read by the gate: guardBodies takes its
// bytes as they are rather than copying them.
type heldBody struct {
	*bytes.Reader
	b []byte
}

func (*heldBody) Close() error { return nil }

// byteBudget is a count of the request bytes held, up to max in all and
// perCaller for one caller; beyond them, each caller may hold
// SmallBodiesPerCaller small bodies (see HTTPConfig).
type byteBudget struct {
	max, perCaller int64

	mu       sync.Mutex
	used     int64
	byCaller map[string]int64
	small    map[string]int
}

func newByteBudget(cfg HTTPConfig) *byteBudget {
	b := &byteBudget{max: cmp.Or(cfg.MaxBufferedBytes, DefaultMaxBufferedBytes),
		byCaller: map[string]int64{}, small: map[string]int{}}
	b.perCaller = cfg.MaxBufferedBytesPerCaller
	if b.perCaller <= 0 {
		b.perCaller = b.max
		if cfg.authRequired() {
			b.perCaller = b.max / 4
		}
	}
	return b
}

// bodyHold is a part of the budget held by one request.
type bodyHold struct {
	b      *byteBudget
	caller string
	n      int64
	small  bool // held in the caller's reserve of small bodies
	body   []byte
	once   sync.Once
}

// acquire holds n bytes for caller, from the shared budget within the
// caller's share, or else (for a small body) from the caller's reserve;
// nil when neither has room.
func (b *byteBudget) acquire(caller string, n int64, small bool) *bodyHold {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n <= b.max && b.byCaller[caller]+n <= b.perCaller {
		b.used += n
		b.byCaller[caller] += n
		return &bodyHold{b: b, caller: caller, n: n}
	}
	if small && b.small[caller] < SmallBodiesPerCaller {
		b.small[caller]++
		return &bodyHold{b: b, caller: caller, n: n, small: true}
	}
	return nil
}

// shrink gives back what the hold has over n (the body read was smaller
// than announced).
func (h *bodyHold) shrink(n int64) {
	if h.small || n >= h.n {
		return
	}
	h.b.mu.Lock()
	defer h.b.mu.Unlock()
	h.b.used -= h.n - n
	h.b.byCaller[h.caller] -= h.n - n
	h.n = n
}

// release gives the hold back; it may be called more than once.
func (h *bodyHold) release() {
	h.once.Do(func() {
		b := h.b
		b.mu.Lock()
		defer b.mu.Unlock()
		if h.small {
			if b.small[h.caller]--; b.small[h.caller] <= 0 {
				delete(b.small, h.caller)
			}
			return
		}
		b.used -= h.n
		if b.byCaller[h.caller] -= h.n; b.byCaller[h.caller] <= 0 {
			delete(b.byCaller, h.caller)
		}
	})
}

// deadlineWriter moves the connection's write deadline d ahead of every
// write and flush: a stream stays open as long as it is read, and a write
// to a client that stopped reading fails after d.
type deadlineWriter struct {
	http.ResponseWriter
	rc *http.ResponseController
	d  time.Duration
}

func (w *deadlineWriter) Write(p []byte) (int, error) {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.d))
	return w.ResponseWriter.Write(p)
}

func (w *deadlineWriter) Flush() {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.d))
	_ = w.rc.Flush()
}

func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// discardResponse is the response of a request made inside the server.
type discardResponse struct{}

func (discardResponse) Header() http.Header         { return http.Header{} }
func (discardResponse) Write(p []byte) (int, error) { return len(p), nil }
func (discardResponse) WriteHeader(int)             {}

// LimitListener accepts at most n connections at once; more wait in the
// kernel's backlog until one closes. n <= 0 means DefaultMaxConns.
func LimitListener(ln net.Listener, n int) net.Listener {
	if n <= 0 {
		n = DefaultMaxConns
	}
	return &limitListener{Listener: ln, slots: make(chan struct{}, n), done: make(chan struct{})}
}

type limitListener struct {
	net.Listener
	slots     chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitConn{Conn: c, free: func() { <-l.slots }}, nil
}

func (l *limitListener) Close() error {
	err := l.Listener.Close()
	l.closeOnce.Do(func() { close(l.done) })
	return err
}

type limitConn struct {
	net.Conn
	once sync.Once
	free func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.free)
	return err
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
		refuse(w, http.StatusForbidden, "origin "+origin+" is not allowed (start the server with --allow-origin to allow it)")
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
