package console

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/promcp/promcp-device/server"
)

// pageData is what the page and its live sections render.
type pageData struct {
	Gateway   string
	Viewer    viewer
	NoUsers   bool
	NoDesk    bool
	NoAudit   bool
	Snap      *snapshot
	Requests  []requestView
	Audit     []auditRow
	Filter    auditFilter
	Tools     []string // for the audit filter
	Flash     string
	FlashBad  bool
	Now       time.Time
	Approvers []string
	Buses     []busHealth
	Devices   []deviceHealth
	Ranges    []chartRange
}

func (c *Console) data(r *http.Request, v viewer) *pageData {
	f := filterOf(r.URL.Query())
	d := &pageData{Gateway: c.cfg.Gateway, Viewer: v, NoUsers: c.cfg.Users == nil, NoDesk: c.cfg.Desk == nil,
		NoAudit: c.cfg.AuditFile == "", Filter: f, Now: c.cfg.Now(), Approvers: c.cfg.Approvers}
	ctx := server.WithCaller(r.Context(), v.Caller)
	d.Snap = c.snapshot(ctx)
	d.Requests = c.requests(ctx, d.Now)
	d.Audit = c.audit(f)
	d.Buses, d.Devices = c.health()
	d.Ranges = chartRanges
	for _, t := range c.cfg.Server.Tools() {
		d.Tools = append(d.Tools, t.MCP.Name)
	}
	return d
}

func (c *Console) page(w http.ResponseWriter, r *http.Request) {
	v, ok := c.who(r)
	if !ok {
		http.Redirect(w, r, "/console/login", http.StatusSeeOther)
		return
	}
	d := c.data(r, v)
	q := r.URL.Query()
	d.Flash, d.FlashBad = q.Get("done"), q.Get("bad") != ""
	c.render(w, "page.html", d)
}

// live answers the page's script with its live sections, rendered.
func (c *Console) live(w http.ResponseWriter, r *http.Request) {
	v, ok := c.who(r)
	if !ok {
		http.Error(w, "log in again", http.StatusUnauthorized)
		return
	}
	d := c.data(r, v)
	out := map[string]string{}
	for _, name := range []string{"values", "actuators", "approvals", "audit", "health"} {
		var b bytes.Buffer
		if err := c.pages.ExecuteTemplate(&b, name, d); err != nil {
			c.cfg.Log.Error("console: rendering", "section", name, "err", err)
			http.Error(w, "rendering failed", http.StatusInternalServerError)
			return
		}
		out[name] = b.String()
	}
	out["clock"] = clock(d.Now)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

func (c *Console) loginForm(w http.ResponseWriter, r *http.Request) {
	if c.cfg.Users == nil {
		http.Redirect(w, r, Path, http.StatusSeeOther)
		return
	}
	c.render(w, "login.html", map[string]any{"Gateway": c.cfg.Gateway, "Bad": r.URL.Query().Get("bad") != ""})
}

// login takes an account's name and password from the form and, when they
// match, opens a session: the browser gets a random id. The address's
// attempts are counted before the password is checked; an unknown name and
// a wrong password take as long and answer the same. An MCP bearer token
// never signs in.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	if c.cfg.Users == nil {
		http.Redirect(w, r, Path, http.StatusSeeOther)
		return
	}
	if !sameOrigin(r) {
		http.Error(w, "a login comes from the console's own page", http.StatusForbidden)
		return
	}
	now := c.cfg.Now()
	ip := remoteIP(r.RemoteAddr)
	if ok, retry, first := c.logins.begin(ip, now); !ok {
		secs := int((retry + time.Second - 1) / time.Second)
		if first {
			c.cfg.Log.Warn("console: login attempts limited", "remote", ip, "failures", loginFailures,
				"window", loginWindow, "retry_after_s", secs)
		}
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		http.Error(w, fmt.Sprintf("too many failed logins from %s: at most %d a minute; try again in %d s", ip, loginFailures, secs),
			http.StatusTooManyRequests)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	name, password := strings.TrimSpace(r.PostFormValue("name")), r.PostFormValue("password")
	caller, pw, ok := server.Caller{}, [sha256.Size]byte{}, false
	if name != "" && password != "" { // a bare token (the old login) has neither
		if caller, pw, ok = c.checkPassword(r, name, password); !ok && r.Context().Err() != nil {
			return // the client went away while waiting for its turn
		}
	}
	if !ok {
		c.cfg.Log.Warn("console: sign-in refused: unknown name or wrong password", "name", name, "remote", r.RemoteAddr)
		http.Redirect(w, r, "/console/login?bad=1", http.StatusSeeOther)
		return
	}
	c.logins.succeeded(ip)
	id, csrf := randomString(), randomString()
	c.mu.Lock()
	if len(c.sessions) >= maxSessions {
		c.dropOldestLocked()
	}
	c.sessions[id] = &session{user: caller.Name, pw: pw, csrf: csrf, expires: now.Add(sessionTTL)}
	c.mu.Unlock()
	http.SetCookie(w, c.cookie(r, id, int(sessionTTL.Seconds())))
	c.cfg.Log.Info("console: logged in", "caller", caller.Name, "role", caller.Role, "remote", r.RemoteAddr)
	http.Redirect(w, r, Path, http.StatusSeeOther)
}

// checkPassword checks an account's password, one check at a time (each
// is a slow hash), waiting its turn while the client waits.
func (c *Console) checkPassword(r *http.Request, name, password string) (server.Caller, [sha256.Size]byte, bool) {
	select {
	case c.checks <- struct{}{}:
	case <-r.Context().Done():
		return server.Caller{}, [sha256.Size]byte{}, false
	}
	defer func() { <-c.checks }()
	return c.cfg.Users.check(name, password)
}

// cookie is the session cookie holding id for maxAge seconds (-1 deletes
// it): HttpOnly, SameSite=Strict, and Secure over HTTPS or, with
// Config.SecureCookie, always (behind a proxy that terminates TLS).
func (c *Console) cookie(r *http.Request, id string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: sessionCookie, Value: id, Path: "/console", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: c.cfg.SecureCookie || r.TLS != nil, MaxAge: maxAge}
}

func (c *Console) dropOldestLocked() {
	var oldest string
	var at time.Time
	for id, s := range c.sessions {
		if oldest == "" || s.expires.Before(at) {
			oldest, at = id, s.expires
		}
	}
	delete(c.sessions, oldest)
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	if v, ok := c.who(r); ok {
		if !c.checkPost(w, r, v) {
			return
		}
		if ck, err := r.Cookie(sessionCookie); err == nil {
			c.mu.Lock()
			delete(c.sessions, ck.Value)
			c.mu.Unlock()
		}
	}
	http.SetCookie(w, c.cookie(r, "", -1))
	http.Redirect(w, r, "/console/login", http.StatusSeeOther)
}

// checkPost refuses (403) a POST from another origin or without the
// session's CSRF token.
func (c *Console) checkPost(w http.ResponseWriter, r *http.Request, v viewer) bool {
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	if !sameOrigin(r) {
		http.Error(w, "refused: the request does not come from the console's own page", http.StatusForbidden)
		return false
	}
	got := r.PostFormValue("csrf")
	if v.CSRF == "" || subtle.ConstantTimeCompare([]byte(got), []byte(v.CSRF)) != 1 {
		http.Error(w, "refused: the form is stale or forged (reload the console)", http.StatusForbidden)
		return false
	}
	return true
}

// decide approves or denies a waiting request: a POST of the console's own
// page by a logged-in person whose role approves, never the asker.
func (c *Console) decide(w http.ResponseWriter, r *http.Request) {
	v, ok := c.who(r)
	if !ok {
		http.Error(w, "log in first", http.StatusUnauthorized)
		return
	}
	if !c.checkPost(w, r, v) {
		return
	}
	if c.cfg.Desk == nil || !v.CanApprove {
		c.cfg.Log.Warn("console: decision refused: role may not approve", "caller", v.Name, "role", v.Role)
		http.Error(w, "refused: role "+v.Role+" may not approve or deny", http.StatusForbidden)
		return
	}
	id, verdict := r.PostFormValue("id"), r.PostFormValue("decision")
	if verdict != "approve" && verdict != "deny" {
		http.Error(w, "decision must be approve or deny", http.StatusBadRequest)
		return
	}
	req, err := c.cfg.Desk.Decide(id, v.Caller, verdict == "approve")
	q := url.Values{}
	if err != nil {
		q.Set("bad", "1")
		q.Set("done", "request "+id+": "+err.Error())
		status := http.StatusConflict
		if errors.Is(err, server.ErrOwnRequest) {
			status = http.StatusForbidden
		}
		c.cfg.Log.Warn("console: decision refused", "request", id, "caller", v.Name, "err", err)
		if r.Header.Get("Accept") == "application/json" {
			http.Error(w, err.Error(), status)
			return
		}
	} else {
		q.Set("done", "request "+id+" ("+req.Tool+" by "+req.Caller.Name+"): "+req.State+" by "+v.Name)
		c.cfg.Log.Info("console: request decided", "request", id, "tool", req.Tool, "asked_by", req.Caller.Name, "decision", req.State, "by", v.Name)
	}
	http.Redirect(w, r, Path+"?"+q.Encode(), http.StatusSeeOther)
}

func (c *Console) render(w http.ResponseWriter, name string, data any) {
	var b bytes.Buffer
	if err := c.pages.ExecuteTemplate(&b, name, data); err != nil {
		c.cfg.Log.Error("console: rendering", "page", name, "err", err)
		http.Error(w, "rendering failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(b.Bytes())
}

func randomString() string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// static serves one embedded file.
func static(name, contentType string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		b, err := fs.ReadFile(assets, "assets/"+name)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", contentType)
		_, _ = w.Write(b)
	}
}
