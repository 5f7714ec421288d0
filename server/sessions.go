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
	// FirstIdleTTL ends sooner a session that made no request after its
	// initialize (a client that connected and went away); 0 means
	// DefaultSessionFirstIdleTTL, and it is never longer than IdleTTL.
	FirstIdleTTL time.Duration
}

// Session defaults, sized for a Raspberry Pi: a session is a few hundred
// bytes here and in mcp-go, so the caps bound bookkeeping, not memory.
// At a cap a new session takes the place of the least recently used idle
// one (see sessionTable.reserve), so clients that never send DELETE do not
// run out of sessions.
const (
	DefaultMaxSessions          = 256
	DefaultMaxSessionsPerCaller = 32
	DefaultSessionIdleTTL       = 30 * time.Minute
	DefaultSessionFirstIdleTTL  = 2 * time.Minute
)

func (l SessionLimits) withDefaults() SessionLimits {
	l.Total = positive.Or(l.Total, DefaultMaxSessions)
	l.PerCaller = positive.Or(l.PerCaller, DefaultMaxSessionsPerCaller)
	l.IdleTTL = positive.Or(l.IdleTTL, DefaultSessionIdleTTL)
	l.FirstIdleTTL = min(positive.Or(l.FirstIdleTTL, DefaultSessionFirstIdleTTL), l.IdleTTL)
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
	expire func(id, endpoint, why string)

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
	requests int // requests made on it after its initialize
	inflight int // requests on it not yet answered
}

// busy says the session is in use now: being opened, a request on it not
// answered, or a GET stream open. A busy session is never evicted or
// expired.
func (e *sessionEntry) busy() bool { return e.pending || e.inflight > 0 || len(e.streams) > 0 }

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

// reserve takes a slot for a new session of caller at endpoint. At a cap
// it first ends the least recently used idle session (of caller at the
// per-caller cap; at the total cap, of the caller holding the most
// sessions, so that one caller's flood ends its own sessions first); it
// says which cap is reached only when every session there is busy. The
// caps count every endpoint's sessions. Ended sessions are deleted in
// mcp-go through expire, after the table's lock is let go.
func (t *sessionTable) reserve(caller, endpoint string) (*reservation, error) {
	t.sweep()
	t.mu.Lock()
	var evicted []evictedSession
	defer func() {
		t.mu.Unlock()
		t.expireAll(evicted, "evicted: a new session needed its slot")
	}()
	if t.perCaller[caller] >= t.limits.PerCaller {
		id, e := t.lruIdleLocked(caller)
		if e == nil {
			return nil, fmt.Errorf("%w (%d, --max-sessions-per-token, all in use)", errTooManyCallerSessions, t.limits.PerCaller)
		}
		t.removeLocked(id, e)
		evicted = append(evicted, evictedSession{id, e.endpoint})
	}
	if len(t.byID) >= t.limits.Total {
		id, e := t.lruIdleLocked(t.largestCallerLocked())
		if e == nil {
			id, e = t.lruIdleLocked("")
		}
		if e == nil {
			return nil, fmt.Errorf("%w (%d, --max-sessions, all in use)", errTooManySessions, t.limits.Total)
		}
		t.removeLocked(id, e)
		evicted = append(evicted, evictedSession{id, e.endpoint})
	}
	id := newSessionID()
	t.byID[id] = &sessionEntry{caller: caller, endpoint: endpoint, pending: true, last: t.now()}
	t.perCaller[caller]++
	return &reservation{id: id}, nil
}

type evictedSession struct{ id, endpoint string }

// lruIdleLocked is the least recently used session that is not busy, of
// caller ("" for anyone's); nil when there is none.
func (t *sessionTable) lruIdleLocked(caller string) (string, *sessionEntry) {
	var id string
	var lru *sessionEntry
	for k, e := range t.byID {
		if e.busy() || (caller != "" && e.caller != caller) {
			continue
		}
		if lru == nil || e.last.Before(lru.last) {
			id, lru = k, e
		}
	}
	return id, lru
}

// largestCallerLocked is the caller holding the most sessions.
func (t *sessionTable) largestCallerLocked() string {
	var name string
	most := 0
	for c, n := range t.perCaller {
		if n > most || (n == most && c < name) {
			name, most = c, n
		}
	}
	return name
}

// expireAll deletes ended sessions in mcp-go (called without mu).
func (t *sessionTable) expireAll(gone []evictedSession, why string) {
	for _, g := range gone {
		if t.expire != nil {
			t.expire(g.id, g.endpoint, why)
		}
	}
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
	return t.liveLocked(id, caller, endpoint) != nil
}

// liveLocked is the live session id of caller at endpoint, marked used;
// nil when there is none.
func (t *sessionTable) liveLocked(id, caller, endpoint string) *sessionEntry {
	e, ok := t.byID[id]
	if !ok || e.pending || e.caller != caller || e.endpoint != endpoint || t.expiredLocked(e, t.now()) {
		return nil
	}
	e.last = t.now()
	return e
}

// begin marks a request on session id of caller at endpoint as in flight,
// so that the session is neither evicted nor expired while it runs; end
// must be called when it is answered. A request that counts (anything but
// the initialized notification) proves the session in use: it then idles
// for IdleTTL, not FirstIdleTTL. It does nothing for a session that is not
// live (mcp-go then answers 404).
func (t *sessionTable) begin(id, caller, endpoint string, counts bool) (end func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.liveLocked(id, caller, endpoint)
	if e == nil {
		return func() {}
	}
	e.inflight++
	if counts {
		e.requests++
	}
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		e.inflight--
		e.last = t.now()
	}
}

func (t *sessionTable) expiredLocked(e *sessionEntry, now time.Time) bool {
	ttl := t.limits.IdleTTL
	if e.requests == 0 {
		ttl = t.limits.FirstIdleTTL
	}
	return !e.busy() && now.Sub(e.last) >= ttl
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
	every := min(max(t.limits.FirstIdleTTL/8, time.Second), time.Minute)
	if now.Sub(t.lastSweep) < every {
		t.mu.Unlock()
		return
	}
	t.lastSweep = now
	var gone []evictedSession
	for id, e := range t.byID {
		if t.expiredLocked(e, now) {
			t.removeLocked(id, e)
			gone = append(gone, evictedSession{id, e.endpoint})
		}
	}
	t.mu.Unlock()
	t.expireAll(gone, "idle")
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

// endAt ends every session opened at endpoint, busy or not (the Server
// that served it is gone); not one being opened now (pending), which the
// new Server mints.
func (t *sessionTable) endAt(endpoint, why string) {
	t.mu.Lock()
	var gone []evictedSession
	for id, e := range t.byID {
		if e.endpoint == endpoint && !e.pending {
			t.removeLocked(id, e)
			gone = append(gone, evictedSession{id, endpoint})
		}
	}
	t.mu.Unlock()
	t.expireAll(gone, why)
}
