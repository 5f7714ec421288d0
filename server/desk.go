package server

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/promcp/promcp-device/approval"
	"github.com/promcp/promcp-device/audit"
)

// Desk holds the do_* calls that wait for a human's out-of-band approval,
// for an operator console to show and a person to decide. A call that the
// policy refuses with requires_human_approval, carrying no approval, is
// put on the desk (who asked, the tool, the value, the idempotency key,
// why, the side effects); once a person approves it there, the same call
// again (same caller, tool, arguments and idempotency_key) runs with that
// approval, recorded in the audit log with the approver's name. The grant
// never leaves the process, so the agent's client cannot forge or move it:
// it is bound to the caller who asked, and spent once, like a token from
// `promcp-device approve`.
//
// The desk is in memory: a restart forgets what waits (the agent's next
// call puts it back). It holds at most DeskPerCaller waiting requests of
// one caller and DeskMax in all; a new one pushes out the oldest that
// nobody decided (the caller's own first).
//
// Desk is safe for concurrent use.
type Desk struct {
	now func() time.Time
	ttl time.Duration
	// ttlFor, when set, is the approval TTL the policy sets for a tool
	// (0: the desk's own).
	ttlFor func(tool string) time.Duration
	// onWait, when set, is told of each request the moment it starts to
	// wait, outside the desk's lock; it must not block.
	onWait func(Request)

	mu  sync.Mutex
	all []*Request // oldest first
}

// DeskMax bounds the requests a Desk holds, DeskPerCaller those one
// caller has waiting (beyond it, the caller's oldest waiting request goes).
const (
	DeskMax       = 100
	DeskPerCaller = 20
)

// DeskGrantPrefix begins the id of an approval given on the desk (in the
// operator console), as the audit log records it: "console-" and the
// request's id.
const DeskGrantPrefix = "console-"

// Decisions of a Request.
const (
	Waiting  = "waiting"
	Approved = "approved"
	Denied   = "denied"
	Used     = "used" // approved, and the call ran with it
)

// ErrDecided is returned by Decide for a request that is no longer
// waiting; ErrOwnRequest when the decider asked for it; ErrNoRequest when
// there is no such request.
var (
	ErrDecided    = errors.New("the request was already decided")
	ErrOwnRequest = errors.New("nobody approves their own request")
	ErrNoRequest  = errors.New("no such request (it expired, or the gateway restarted)")
)

// Request is a do_* call waiting for (or given) a human's decision.
type Request struct {
	ID          string
	Tool        string
	Title       string // the tool's title, for people ("" when it has none)
	Value       any
	Key         string // the idempotency key
	Caller      Caller // who asked
	Asked       time.Time
	Reason      string // why the policy asks for approval
	SideEffects []string
	Compensable bool
	State       string // Waiting, Approved, Denied or Used
	// DecidedBy is the person who approved or denied it in the console
	// (a console account), at Decided.
	DecidedBy Caller
	Decided   time.Time
	// UsedBy is the MCP caller whose call ran with the approval (the one
	// who asked: the approval counts for no other), at Used; State Used.
	UsedBy  Caller
	Used    time.Time
	Expires time.Time // a waiting request, and an approval, lapse then

	fp    string
	grant approval.Grant
}

// NewDesk returns an empty desk on the clock now (nil: the clock of the
// server it is given to with WithDesk). A request waits, and an approval
// stays usable, for ttl (0: 10 minutes).
func NewDesk(now func() time.Time, ttl time.Duration) *Desk {
	if ttl <= 0 {
		ttl = 10 * time.Minute
	}
	return &Desk{now: now, ttl: ttl}
}

// SetApprovalTTL has a request for tool wait, and its approval stay
// usable, for ttl(tool) when that is more than 0 (the policy's approval
// ttl), else for the desk's own TTL. Call it before the desk is used.
func (d *Desk) SetApprovalTTL(ttl func(tool string) time.Duration) { d.ttlFor = ttl }

// OnWait has f told of each request the moment it starts to wait (a
// notifier pushes it to people). f is called outside the desk's lock, on
// the do_* call's goroutine: it must not block. Call it before the desk is
// used.
func (d *Desk) OnWait(f func(Request)) { d.onWait = f }

// Request returns the request id as it is now, or false when there is no
// such request (it lapsed, or was pushed out).
func (d *Desk) Request(id string) (Request, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.expireLocked()
	for _, r := range d.all {
		if r.ID == id {
			return *r, true
		}
	}
	return Request{}, false
}

// ttlOf is how long a request for tool waits, and its approval stays
// usable.
func (d *Desk) ttlOf(tool string) time.Duration {
	if d.ttlFor != nil {
		if t := d.ttlFor(tool); t > 0 {
			return t
		}
	}
	return d.ttl
}

// WithDesk puts the do_* calls that wait for out-of-band approval on d.
func WithDesk(d *Desk) Option {
	return func(s *Server) {
		s.desk = d
		if d.now == nil {
			d.now = func() time.Time { return s.clock.Now() }
		}
	}
}

// Requests returns the requests on the desk, newest first, without the
// lapsed ones.
func (d *Desk) Requests() []Request {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.expireLocked()
	out := make([]Request, 0, len(d.all))
	for i := len(d.all) - 1; i >= 0; i-- {
		out = append(out, *d.all[i])
	}
	return out
}

// Decide approves or denies the waiting request id as by. Nobody decides
// their own request.
func (d *Desk) Decide(id string, by Caller, approve bool) (Request, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.expireLocked()
	i := slices.IndexFunc(d.all, func(r *Request) bool { return r.ID == id })
	if i < 0 {
		return Request{}, ErrNoRequest
	}
	r := d.all[i]
	if r.State != Waiting {
		return *r, fmt.Errorf("%w: %s by %s", ErrDecided, r.State, r.DecidedBy.Name)
	}
	if by.Name == r.Caller.Name {
		return *r, fmt.Errorf("%w: %s asked for it", ErrOwnRequest, by.Name)
	}
	now := d.clock()
	r.DecidedBy, r.Decided = by, now
	r.State = Denied
	if approve {
		r.State = Approved
		r.Expires = now.Add(d.ttlOf(r.Tool))
		r.grant = approval.Grant{Tool: r.Tool, Value: approval.Canonical(r.Value), Key: r.Key, Expires: r.Expires,
			ID: DeskGrantPrefix + r.ID, By: by.Name, Issued: now.UTC()}
	}
	return *r, nil
}

// expireLocked drops the requests that lapsed (waiting or approved and
// unused past Expires); decided ones are kept until then too, so the
// console shows what happened.
func (d *Desk) expireLocked() {
	now := d.clock()
	d.all = slices.DeleteFunc(d.all, func(r *Request) bool { return now.After(r.Expires) })
}

// ask puts a call refused for want of approval on the desk, unless it is
// there already, and returns what the caller is told.
func (d *Desk) ask(t DoTool, c Caller, value any, key, fp, reason string) string {
	note, r := d.askLocked(t, c, value, key, fp, reason)
	if r != nil && d.onWait != nil {
		d.onWait(*r)
	}
	return note
}

// askLocked puts the request on the desk and returns what the caller is
// told and, when it is new, a copy of the request.
func (d *Desk) askLocked(t DoTool, c Caller, value any, key, fp, reason string) (string, *Request) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.expireLocked()
	if r := d.findLocked(t.Name, c, key, fp); r != nil {
		return r.note(), nil
	}
	mine := 0
	for _, r := range d.all {
		if r.Caller == c && r.State == Waiting {
			mine++
		}
	}
	switch {
	case mine >= DeskPerCaller: // one caller does not push out the others' requests
		i := slices.IndexFunc(d.all, func(r *Request) bool { return r.Caller == c && r.State == Waiting })
		d.all = slices.Delete(d.all, i, i+1)
	case len(d.all) >= DeskMax:
		i := slices.IndexFunc(d.all, func(r *Request) bool { return r.State == Waiting })
		if i < 0 {
			i = 0
		}
		d.all = slices.Delete(d.all, i, i+1)
	}
	now := d.clock()
	r := &Request{ID: newRequestID(), Tool: t.Name, Title: t.Title, Value: value, Key: key, Caller: c, Asked: now, Reason: reason,
		SideEffects: slices.Clone(t.SideEffects), Compensable: t.Compensable, State: Waiting, Expires: now.Add(d.ttlOf(t.Name)), fp: fp}
	d.all = append(d.all, r)
	cp := *r
	cp.SideEffects = slices.Clone(r.SideEffects)
	return r.note(), &cp
}

// granted returns the approval a person gave on the desk to exactly this
// call (same caller, tool, arguments and key), or nil.
func (d *Desk) granted(tool string, c Caller, key, fp string) (*audit.Approval, *approval.Grant) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.expireLocked()
	r := d.findLocked(tool, c, key, fp)
	if r == nil || r.State != Approved {
		return nil, nil
	}
	g := r.grant
	return &audit.Approval{By: r.DecidedBy.Name, Method: approval.ViaOutOfBand, At: r.Decided, ID: g.ID}, &g
}

// spent marks the request whose grant g was spent as used, by the caller
// who asked for it (a grant from the desk counts for that caller only).
func (d *Desk) spent(g approval.Grant) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, r := range d.all {
		if r.State == Approved && r.grant.ID == g.ID {
			r.State, r.UsedBy, r.Used = Used, r.Caller, d.clock()
		}
	}
}

// clock is the desk's time: its clock's, else the server's it was given
// to, else the system's.
func (d *Desk) clock() time.Time {
	if d.now == nil {
		return time.Now()
	}
	return d.now()
}

func (d *Desk) findLocked(tool string, c Caller, key, fp string) *Request {
	for _, r := range d.all {
		if r.Tool == tool && r.Caller == c && r.Key == key && r.fp == fp {
			return r
		}
	}
	return nil
}

// note is what the agent is told about its request.
func (r *Request) note() string {
	switch r.State {
	case Denied:
		return fmt.Sprintf("%s denied this request (%s) in the operator console; do not retry it", r.DecidedBy.Name, r.ID)
	case Approved, Used:
		return fmt.Sprintf("%s approved this request (%s) in the operator console", r.DecidedBy.Name, r.ID)
	}
	return fmt.Sprintf("it waits for a person's approval in the operator console as request %s until %s; "+
		"call again with the same arguments and idempotency_key once approved", r.ID, r.Expires.UTC().Format(time.RFC3339))
}

func newRequestID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return strings.ToUpper(hex.EncodeToString(b[:]))
}
