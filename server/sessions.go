package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/promcp/promcp-device/internal/positive"
)

// SessionLimits bound the MCP sessions an HTTP server keeps. A session
// costs a little memory until it is deleted; a client that opens sessions
// and never deletes them would otherwise grow the server without end.
type SessionLimits struct {
	// Total is the most sessions open at once, all callers together; 0
	// means DefaultMaxSessions.
	Total int
	// PerCaller is the most sessions one caller (one token) holds at once;
	// 0 means DefaultMaxSessionsPerCaller.
	PerCaller int
	// IdleTTL ends a session nobody used for that long (a request on it,
	// or a GET stream open on it, is use); 0 means DefaultSessionIdleTTL.
	IdleTTL time.Duration
}

// Session defaults, sized for a Raspberry Pi: a session is a few hundred
// bytes here and in mcp-go, so the caps bound bookkeeping, not memory.
const (
	DefaultMaxSessions          = 256
	DefaultMaxSessionsPerCaller = 32
	DefaultSessionIdleTTL       = 30 * time.Minute
)

func (l SessionLimits) withDefaults() SessionLimits {
	l.Total = positive.Or(l.Total, DefaultMaxSessions)
	l.PerCaller = positive.Or(l.PerCaller, DefaultMaxSessionsPerCaller)
	l.IdleTTL = positive.Or(l.IdleTTL, DefaultSessionIdleTTL)
	return l
}

var (
	errTooManySessions       = errors.New("too many sessions open on this server")
	errTooManyCallerSessions = errors.New("too many sessions open with this token")
	errUnknownSession        = errors.New("unknown session")
)

// sessionTable tracks the sessions of the streamable HTTP transport: who
// opened each, when it was last used, and the GET streams open on it. It
// is mcp-go's session id manager, so a session it does not know is one
// mcp-go answers 404 for.
type sessionTable struct {
	limits SessionLimits
	now    func() time.Time
	// expire deletes an expired session in mcp-go, at the endpoint that
	// opened it (called without mu).
	expire func(id, endpoint string)

	mu        sync.Mutex
	byID      map[string]*sessionEntry
	perCaller map[string]int
	lastSweep time.Time
}

type sessionEntry struct {
	caller   string
	endpoint string // the URL path of the endpoint that opened it
	pending  bool   // reserved by an initialize request that has not minted it yet
	last     time.Time
	streams  map[*streamHandle]struct{}
}

// streamHandle is one open GET stream; cancel ends it.
type streamHandle struct{ cancel context.CancelFunc }

func newSessionTable(limits SessionLimits, now func() time.Time) *sessionTable {
	if now == nil {
		now = time.Now
	}
	return &sessionTable{limits: limits.withDefaults(), now: now,
		byID: map[string]*sessionEntry{}, perCaller: map[string]int{}}
}

// reservation is a session slot taken by an initialize request before
// mcp-go asks for an id; an unused one is given back when the request ends.
type reservation struct{ id string }

type reservationKey struct{}

// reserve takes a slot for a new session of caller at endpoint, or says
// which cap is reached. The caps count every endpoint's sessions.
func (t *sessionTable) reserve(caller, endpoint string) (*reservation, error) {
	t.sweep()
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.byID) >= t.limits.Total {
		return nil, fmt.Errorf("%w (%d, --max-sessions)", errTooManySessions, t.limits.Total)
	}
	if t.perCaller[caller] >= t.limits.PerCaller {
		return nil, fmt.Errorf("%w (%d, --max-sessions-per-token)", errTooManyCallerSessions, t.limits.PerCaller)
	}
	id := newSessionID()
	t.byID[id] = &sessionEntry{caller: caller, endpoint: endpoint, pending: true, last: t.now()}
	t.perCaller[caller]++
	return &reservation{id: id}, nil
}

// release gives back a reservation mcp-go did not turn into a session.
func (t *sessionTable) release(r *reservation) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e, ok := t.byID[r.id]; ok && e.pending {
		t.removeLocked(r.id, e)
	}
}

func (t *sessionTable) removeLocked(id string, e *sessionEntry) {
	delete(t.byID, id)
	if t.perCaller[e.caller]--; t.perCaller[e.caller] <= 0 {
		delete(t.perCaller, e.caller)
	}
	for s := range e.streams {
		s.cancel()
	}
}

// lookup reports whether id is a live session of caller opened at
// endpoint, and marks it used.
func (t *sessionTable) lookup(id, caller, endpoint string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.byID[id]
	if !ok || e.pending || e.caller != caller || e.endpoint != endpoint || t.expiredLocked(e, t.now()) {
		return false
	}
	e.last = t.now()
	return true
}

func (t *sessionTable) expiredLocked(e *sessionEntry, now time.Time) bool {
	return !e.pending && len(e.streams) == 0 && now.Sub(e.last) >= t.limits.IdleTTL
}

// openStream registers a GET stream on a live session of caller at
// endpoint; the
// returned context ends when the session is deleted or expires, and done
// must be called when the stream ends.
func (t *sessionTable) openStream(ctx context.Context, id, caller, endpoint string) (context.Context, func(), bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.byID[id]
	if !ok || e.pending || e.caller != caller || e.endpoint != endpoint || t.expiredLocked(e, t.now()) {
		return nil, nil, false
	}
	ctx, cancel := context.WithCancel(ctx)
	h := &streamHandle{cancel: cancel}
	if e.streams == nil {
		e.streams = map[*streamHandle]struct{}{}
	}
	e.streams[h] = struct{}{}
	e.last = t.now()
	return ctx, func() {
		cancel()
		t.mu.Lock()
		defer t.mu.Unlock()
		if cur, ok := t.byID[id]; ok && cur == e {
			delete(e.streams, h)
			e.last = t.now()
		}
	}, true
}

// terminate deletes a session of caller at endpoint (of anyone anywhere
// with anyCaller); it reports false when caller may not (the session is
// another caller's, or another endpoint's).
func (t *sessionTable) terminate(id, caller, endpoint string, anyCaller bool) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.byID[id]
	if !ok {
		return true
	}
	if !anyCaller && (e.caller != caller || e.endpoint != endpoint) {
		return false
	}
	t.removeLocked(id, e)
	return true
}

// sweep ends the sessions idle for longer than the TTL, at most once per
// sweepEvery: here, and in mcp-go through expire.
func (t *sessionTable) sweep() {
	now := t.now()
	t.mu.Lock()
	every := min(max(t.limits.IdleTTL/8, time.Second), time.Minute)
	if now.Sub(t.lastSweep) < every {
		t.mu.Unlock()
		return
	}
	t.lastSweep = now
	var gone []*sessionEntry
	var ids []string
	for id, e := range t.byID {
		if t.expiredLocked(e, now) {
			t.removeLocked(id, e)
			gone, ids = append(gone, e), append(ids, id)
		}
	}
	t.mu.Unlock()
	for i, e := range gone {
		if t.expire != nil {
			t.expire(ids[i], e.endpoint)
		}
	}
}

func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "mcp-session-" + hex.EncodeToString(b[:])
}

// ResolveSessionIdManager makes the table mcp-go's session id manager,
// bound to the request's caller (r is nil outside a request).
func (t *sessionTable) ResolveSessionIdManager(r *http.Request) mcpserver.SessionIdManager {
	m := boundSessions{t: t}
	if r != nil {
		m.endpoint = r.URL.Path
		m.caller, m.bound = r.Context().Value(callerKey{}).(Caller)
		m.res, _ = r.Context().Value(reservationKey{}).(*reservation)
	}
	return m
}

// boundSessions is the session id manager for one request.
type boundSessions struct {
	t        *sessionTable
	endpoint string // the request's URL path
	caller   Caller
	bound    bool
	res      *reservation
}

// Generate turns the request's reservation into a session. Without one
// (a path the middleware does not let through) the id is never valid.
func (m boundSessions) Generate() string {
	if m.res == nil {
		return newSessionID()
	}
	m.t.mu.Lock()
	defer m.t.mu.Unlock()
	if e, ok := m.t.byID[m.res.id]; ok && e.pending {
		e.pending = false
		e.last = m.t.now()
	}
	return m.res.id
}

func (m boundSessions) Validate(id string) (bool, error) {
	if !m.t.lookup(id, m.caller.Name, m.endpoint) {
		return false, errUnknownSession
	}
	return false, nil
}

func (m boundSessions) Terminate(id string) (bool, error) {
	return !m.t.terminate(id, m.caller.Name, m.endpoint, !m.bound), nil
}
