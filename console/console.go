// Package console is the gateway's operator console: a few server-rendered
// pages, served on the gateway's own HTTP listener under /console, that
// show the capabilities with their live values and quality, the actuators
// with their policy state, the audit log and the do_* calls waiting for a
// person's approval, which a supervisor approves or denies there.
//
// Everything is embedded in the binary (html/template, one small script,
// one style sheet): no build step and no external asset. Values come
// through the gateway's own read_* and can_do tools, as an MCP client gets
// them: a read answers from the capability's cache within its TTL, so the
// console adds no bus transaction beyond one per TTL, however many browsers
// watch.
//
// People sign in with an operator account (Users: a name, a role and a
// bcrypt password hash, in a file of their own), never with an MCP bearer
// token, so that the agent, which holds a token, cannot approve whatever
// its token's role. The console keeps the account server-side behind a
// random session cookie (HttpOnly, SameSite=Strict, Secure over HTTPS or
// with Config.SecureCookie) and looks it up again at every request, so a
// removed account, or a changed password, ends its sessions. A remote
// address gets 5 sign-in attempts a minute without success, then 429,
// before any password is checked. Every POST must come from the console's
// own origin and carry the session's CSRF token. Without accounts, every
// visitor is Config.Caller (on a loopback host only) and nobody can
// approve: the console could not tell a person from the agent.
package console

import (
	"crypto/sha256"
	"embed"
	"errors"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/promcp/promcp-device/capabilities"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/server"
)

//go:embed assets
var assets embed.FS

// DefaultApprovers are the roles that may approve in the console.
var DefaultApprovers = []string{server.RoleSupervisor, server.RoleAdmin}

// Config configures a console.
type Config struct {
	// Server is the gateway's proMCP server: its read_* and can_do tools
	// give the values and the policy state.
	Server *server.Server
	// Users, when set, are the operator accounts people sign in with
	// (LoadUsers); an MCP token never signs in.
	Users *Users
	// Caller is every visitor when Users is nil.
	Caller server.Caller
	// Desk holds the calls that wait for approval; nil shows none.
	Desk *server.Desk
	// AuditFile is the audit log (JSON lines) shown; "" when there is none.
	AuditFile string
	// Approvers are the roles that may approve or deny; nil means
	// DefaultApprovers. Only with Users.
	Approvers []string
	// Policy is the gateway's policy, whose rules (cooldown, rate limit,
	// windows, interlocks, approval) the console states beside each
	// actuator; nil when there is none.
	Policy *manifests.Policy
	// Capabilities are the gateway's capabilities, whose health trackers
	// the health view shows (what /metrics exports); nil shows none.
	Capabilities *capabilities.Set
	// Manifest is the gateway's manifest: the units, types, locations and
	// tool groups of the capabilities; nil shows none of them.
	Manifest *manifests.Manifest
	// Gateway names the gateway in the page title.
	Gateway string
	// SecureCookie marks the session cookie Secure even when the request
	// came over plain HTTP: for a gateway behind a reverse proxy that
	// terminates TLS. Without it the cookie is Secure over HTTPS only;
	// X-Forwarded-Proto is never trusted.
	SecureCookie bool
	// Now is the clock (sessions, "remaining" times, the login limit);
	// nil means time.Now.
	Now func() time.Time
	Log *slog.Logger
}

// Path is where the console is served.
const Path = "/console/"

// sessionCookie names the console's session cookie.
const sessionCookie = "promcp_console"

// sessionTTL bounds a login; maxSessions the logins held at once (the
// oldest is dropped beyond it).
const (
	sessionTTL  = 12 * time.Hour
	maxSessions = 256
)

// passwordChecks bounds the password checks run at once: each is a slow
// hash, so that sign-ins from many addresses take one core, not all.
const passwordChecks = 1

// Console is the console's HTTP handler.
type Console struct {
	cfg   Config
	pages *template.Template
	mux   *http.ServeMux

	mu       sync.Mutex
	sessions map[string]*session

	logins *loginLimiter // failed logins per remote address
	checks chan struct{} // password checks at once (each is a slow hash)

	snap snapshotCache
}

type session struct {
	user    string            // the account's name
	pw      [sha256.Size]byte // a fingerprint of its password hash at sign-in
	csrf    string
	expires time.Time
}

// New returns the console for cfg.
func New(cfg Config) (*Console, error) {
	if cfg.Server == nil {
		return nil, errors.New("console: no server")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Approvers == nil {
		cfg.Approvers = DefaultApprovers
	}
	t, err := template.New("").Funcs(funcs).ParseFS(assets, "assets/*.html")
	if err != nil {
		return nil, err
	}
	c := &Console{cfg: cfg, pages: t, sessions: map[string]*session{},
		logins: newLoginLimiter(loginFailures, loginWindow, loginAddrs), checks: make(chan struct{}, passwordChecks)}
	if cfg.Users != nil {
		cfg.Users.find("") // make the unknown-name hash now, not at the first sign-in
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /console/{$}", c.page)
	mux.HandleFunc("GET /console/live", c.live)
	mux.HandleFunc("GET /console/login", c.loginForm)
	mux.HandleFunc("POST /console/login", c.login)
	mux.HandleFunc("POST /console/logout", c.logout)
	mux.HandleFunc("POST /console/decide", c.decide)
	mux.HandleFunc("POST /console/set", c.set)
	mux.HandleFunc("GET /console/history", c.history)
	mux.HandleFunc("GET /console/history.csv", c.history)
	mux.HandleFunc("GET /console/static/console.js", static("console.js", "text/javascript; charset=utf-8"))
	mux.HandleFunc("GET /console/static/console.css", static("console.css", "text/css; charset=utf-8"))
	mux.HandleFunc("/console", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, Path, http.StatusSeeOther) })
	c.mux = mux
	return c, nil
}

// ServeHTTP serves the console with headers that keep it to its own
// origin: no framing, no foreign script, no caching.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	if c.cfg.Users == nil && !loopbackHost(r.Host) {
		// Without accounts nobody signs in; the gateway listens on
		// loopback only, and a page under another host name that resolves
		// there (DNS rebinding) reads nothing.
		http.Error(w, "without --console-users the console answers on a loopback address only (127.0.0.1, ::1, localhost)", http.StatusForbidden)
		return
	}
	c.mux.ServeHTTP(w, r)
}

// loopbackHost reports whether a Host header names a loopback address.
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// viewer is who looks at the console in this request.
type viewer struct {
	server.Caller
	CSRF       string
	CanApprove bool
	LoggedIn   bool // signed in to an account; false without accounts (no logout)
}

// who returns the request's viewer, or false when it must log in.
func (c *Console) who(r *http.Request) (viewer, bool) {
	if c.cfg.Users == nil {
		return viewer{Caller: c.cfg.Caller}, true
	}
	ck, err := r.Cookie(sessionCookie)
	if err != nil {
		return viewer{}, false
	}
	c.mu.Lock()
	s, ok := c.sessions[ck.Value]
	if ok && c.cfg.Now().After(s.expires) {
		delete(c.sessions, ck.Value)
		ok = false
	}
	c.mu.Unlock()
	if !ok {
		return viewer{}, false
	}
	// A removed account, or a changed password, ends the session.
	caller, pw, ok := c.cfg.Users.account(s.user)
	if !ok || pw != s.pw {
		c.mu.Lock()
		delete(c.sessions, ck.Value)
		c.mu.Unlock()
		return viewer{}, false
	}
	return viewer{Caller: caller, CSRF: s.csrf, CanApprove: slices.Contains(c.cfg.Approvers, caller.Role), LoggedIn: true}, true
}

// sameOrigin reports whether a POST comes from a page of this host: its
// Origin (or, lacking one, its Referer) names the request's own host.
// A browser always sends one of them on a form POST or fetch.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "null" {
		return false // an opaque origin (a sandboxed frame, a file)
	}
	if o == "" {
		o = r.Header.Get("Referer")
	}
	if o == "" {
		return false
	}
	rest, ok := strings.CutPrefix(o, "https://")
	if !ok {
		if rest, ok = strings.CutPrefix(o, "http://"); !ok {
			return false
		}
	}
	host, _, _ := strings.Cut(rest, "/")
	return host == r.Host
}
