package shared

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/promcp/promcp-device/internal/positive"
	"github.com/promcp/promcp-device/policy"
	"github.com/promcp/promcp-device/promcp"
)

// Lease record states.
const (
	statePending   = "pending"
	stateCommitted = "committed"
	stateReleased  = "released"
)

// claimant names who wrote a record of fleet_lease or fleet_idem: the
// gateway and its request, so that a write that timed out and was applied
// later is recognised as the claimant's own (docs/fleet.md, "Failure modes designed for").
type claimant struct {
	Gateway string `json:"gw"`
	Request string `json:"req"`
}

// claimant returns a new claimant: this gateway, a fresh request id.
func (s *State) claimant() claimant { return claimant{Gateway: s.cfg.Gateway, Request: newRequestID()} }

// leaseRecord is the value of a key in fleet_lease, naming its claimant.
// Times are the hub's (entries' Created), never a gateway's clock (§5.5).
type leaseRecord struct {
	claimant
	State string `json:"state"`
	// Last is the hub time of the last actuation before this record's
	// own: what remains when a pending reservation is released.
	Last time.Time `json:"last,omitzero"`
	// LastReq is the request whose actuation Last is (its identity: a
	// gateway recognises its own actuations by it, and counts them once).
	LastReq string `json:"last_req,omitempty"`
	// LastLapsed says that Last is a pending reservation taken over once
	// its lease lapsed (never settled), not a committed actuation.
	LastLapsed bool `json:"last_lapsed,omitempty"`
	// LeaseMS is how long the pending record holds the actuator (ms) from
	// its hub write time; 0 is the hubs' default lease.
	LeaseMS int64 `json:"lease_ms,omitempty"`
}

// lease is how long the record, pending, holds its actuator: its own
// lease bounded by max, or def when it names none.
func (r leaseRecord) lease(def, max time.Duration) time.Duration {
	if r.LeaseMS <= 0 {
		return def
	}
	return min(time.Duration(r.LeaseMS)*time.Millisecond, max)
}

// leaseView is a key of fleet_lease as read.
type leaseView struct {
	rev     uint64 // 0: the key does not exist
	rec     leaseRecord
	created time.Time // hub time of the write
}

// actuation is an actuation a lease record counts: its hub time and the
// request (claim id) that made it.
type actuation struct {
	at  time.Time
	req string
}

// actuations returns the actuations the record counts: a pending or
// committed record's own write, and the one before it.
func (v leaseView) actuations() []actuation {
	var as []actuation
	if !v.rec.Last.IsZero() {
		as = append(as, actuation{v.rec.Last, v.rec.LastReq})
	}
	if v.rev != 0 && v.rec.State != stateReleased {
		as = append(as, actuation{v.created, v.rec.Request})
	}
	return as
}

// last is the latest actuation the record counts.
func (v leaseView) last() actuation {
	var l actuation
	for _, a := range v.actuations() {
		if a.at.After(l.at) {
			l = a
		}
	}
	return l
}

// held is a shared reservation's fleet side.
type held struct {
	key     string
	rev     uint64
	rec     leaseRecord
	prev    actuation // Last to restore on release
	rateSeq uint64    // FLEET_RATE slot taken, 0 for none
}

// reserver is the fleet Reserver: shared claims through fleet_lease and
// FLEET_RATE, the others straight to the local reserver.
type reserver struct {
	s     *State
	local policy.Reserver
	rules Rules

	mu   sync.Mutex
	held map[*policy.Reservation]*held
	// mine holds the claim ids of this gateway's recent actuations of
	// shared actuators (in its local history already): fold counts them
	// once. Oldest first, at most mineMax.
	mine []string
}

// mineMax bounds the claim ids a reserver remembers: a lease record
// names at most two actuations, so only the latest few matter.
const mineMax = 256

// Reserver returns a policy.Reserver for this gateway: claims that rules
// marks shared are decided on the fleet-wide state as well as the local
// one and reserved by compare-and-set on fleet_lease (exactly one of
// several racing gateways wins; the others decide again on what it wrote,
// typically cooldown_active), their rate limits taken in FLEET_RATE
// (rate_limited when the fleet's window is full); when the write cannot
// commit the Decision is partition_no_quorum and nothing is reserved.
// Every other claim goes to local unchanged, whatever the hub's state.
func (s *State) Reserver(local policy.Reserver, rules Rules) policy.Reserver {
	return &reserver{s: s, local: local, rules: rules, held: map[*policy.Reservation]*held{}}
}

func leaseKey(owner, action string) string { return "cooldown." + owner + "." + action }

// maxBackoff bounds the wait between two tries.
const maxBackoff = 500 * time.Millisecond

// backoff is the wait before try number tries+1, from base.
func backoff(base time.Duration, tries int) time.Duration {
	return min(base<<min(tries, 16), maxBackoff)
}

// Lease bounds: a claim's lease covers its actuation (the time left to
// the call's deadline, and a margin), at least the rule's lease (or
// DefaultLease), at most MaxLease.
const (
	// DefaultLease is the lease of a claim whose rule names none and
	// whose context has no deadline.
	DefaultLease = 30 * time.Second
	// MaxLease bounds any lease: a crashed gateway's pending record
	// holds its actuator at most this long.
	MaxLease   = 10 * time.Minute
	leaseSlack = 5 * time.Second
)

// leaseFor is the lease of a claim made within ctx under rule.
func leaseFor(ctx context.Context, rule Rule, now time.Time) time.Duration {
	l := positive.Or(rule.Lease, DefaultLease)
	if dl, ok := ctx.Deadline(); ok {
		l = max(l, dl.Sub(now)+leaseSlack)
	}
	return min(l, MaxLease)
}

// Reserve implements policy.Reserver.
func (r *reserver) Reserve(ctx context.Context, c policy.Claim, decide func(ctx context.Context, v policy.View) policy.Decision) (*policy.Reservation, policy.Decision, error) {
	rule, shared := r.rule(c)
	if !shared {
		return r.local.Reserve(ctx, c, decide)
	}
	if !idRE.MatchString(rule.Owner) || !idRE.MatchString(c.Action) {
		return nil, policy.Decision{Permission: promcp.PolicyDenied, Value: c.Value, ValidUntil: c.Now.Add(policy.MaxStaticValidity),
			Reason:  fmt.Sprintf("%s cannot be held fleet-wide: owner %q or action is not a name of letters, digits, '-' and '_'", c.Action, rule.Owner),
			Details: "fix the fleet rules' owner"}, nil
	}
	cl := claimState{id: r.s.claimant(), key: leaseKey(rule.Owner, c.Action), lease: leaseFor(ctx, rule, r.s.cfg.Clock.Now()), start: r.s.cfg.Clock.Now()}
	for {
		res, d, err, again := r.reserveOnce(ctx, c, rule, decide, &cl)
		if again {
			continue
		}
		if res != nil && ctx.Err() != nil {
			// Granted as the caller's deadline passed (a last pass
			// through a slow hub): nothing may move after it.
			rctx, cancel := r.s.bound(context.WithoutCancel(ctx)) // one try: a record left pending lapses with its lease
			_ = r.Release(rctx, res)
			cancel()
			return nil, d, fmt.Errorf("fleet: %s reserved after its deadline, released: %w", c.Action, ctx.Err())
		}
		return res, d, err
	}
}

// claimState is one Reserve call's state across its tries: its identity
// (one claim id for every try, so that a write whose reply was lost is
// recognised as its own), its lease, and its retry budget.
type claimState struct {
	id    claimant
	key   string
	lease time.Duration
	start time.Time // when the first hub call failed; zero before
	tries int
	waits int // back-offs over a lapsed record the hub still holds
}

// reserveOnce is one pass of Reserve; again says to pass once more.
func (r *reserver) reserveOnce(ctx context.Context, c policy.Claim, rule Rule, decide func(ctx context.Context, v policy.View) policy.Decision, cl *claimState) (*policy.Reservation, policy.Decision, error, bool) {
	var seen leaseView
	var readErr error
	res, d, err := r.local.Reserve(ctx, c, func(ctx context.Context, v policy.View) policy.Decision {
		lv, err := r.s.readLease(ctx, cl.key)
		if err != nil {
			readErr = err
			return policy.Decision{Permission: promcp.PartitionNoQuorum, Reason: "reading the fleet record failed"}
		}
		seen, readErr = lv, nil
		if lv.rec.claimant != cl.id {
			r.fold(&v, c, lv)
		}
		return decide(ctx, v)
	})
	if res != nil && readErr != nil {
		_ = r.local.Release(ctx, res)
		res = nil
	}
	switch {
	case err != nil:
		return res, d, err, false
	case readErr != nil:
		if ctx.Err() != nil {
			return nil, d, ctx.Err(), false
		}
		if reach, again := r.again(ctx, readErr, cl); !again {
			return nil, r.noQuorum(c, rule, reach), nil, false
		}
		return nil, d, nil, true
	case res == nil:
		return nil, d, nil, false
	}
	if seen.rev != 0 && seen.rec.State == statePending && seen.rec.claimant == cl.id {
		// Our own reservation, written although its reply was lost.
		return r.hold(ctx, c, rule, res, d, &held{key: cl.key, rev: seen.rev, rec: seen.rec, prev: actuation{seen.rec.Last, seen.rec.LastReq}}, cl)
	}
	if until, who := r.othersPending(seen); who != "" {
		_ = r.local.Release(ctx, res)
		if err := r.s.waitChange(ctx, cl.key, seen.rev, until); err != nil {
			return nil, d, fmt.Errorf("waiting for the action in progress on %s at gateway %s: %w", c.Action, who, err), false
		}
		return nil, d, nil, true
	}
	h, d2, werr := r.take(ctx, c, rule, seen, cl)
	if h != nil {
		return r.hold(ctx, c, rule, res, d, h, cl)
	}
	_ = r.local.Release(ctx, res)
	switch {
	case werr == nil:
		return nil, d2, nil, false // refused (rate limit, or no quorum for the rate slot)
	case ctx.Err() != nil:
		return nil, d, ctx.Err(), false
	case errors.Is(werr, errRaceLost):
		if seen.rev != 0 && seen.rec.State == statePending {
			// A lapsed record the hub (on its clock) still holds: back
			// off before reading it again, never a hot loop.
			cl.waits++
			if !sleepCtx(ctx, backoff(20*time.Millisecond, cl.waits)) {
				return nil, d, ctx.Err(), false
			}
		}
		return nil, d, nil, true // decide again on the winner's record
	case errors.Is(werr, ErrRefused):
		r.s.cfg.Log.Warn("fleet: the hubs refused a shared claim", "action", c.Action, "owner", rule.Owner, "err", werr)
		return nil, policy.Decision{Permission: promcp.PolicyDenied, Value: c.Value, ValidUntil: c.Now.Add(policy.MaxSensorValidity),
			Reason:  fmt.Sprintf("%s acts on shared equipment (%s), and the fleet hubs refused this gateway's record: %v", c.Action, rule.Owner, werr),
			Details: "the hubs let a gateway write only its own records and those of the equipment its registry entry lists as shared; nothing moved"}, nil, false
	}
	if reach, again := r.again(ctx, werr, cl); !again {
		return nil, r.noQuorum(c, rule, reach), nil, false
	}
	return nil, d, nil, true
}

// hold records h as res's fleet side (taking the rate slot first when
// the rule has a limit and h has none).
func (r *reserver) hold(ctx context.Context, c policy.Claim, rule Rule, res *policy.Reservation, d policy.Decision, h *held, cl *claimState) (*policy.Reservation, policy.Decision, error, bool) {
	if rule.RateLimit != nil && h.rateSeq == 0 {
		seq, d2, err := r.s.takeRate(ctx, c, rule)
		if seq == 0 {
			_ = r.s.putBack(ctx, h)
			_ = r.local.Release(ctx, res)
			if err == nil || ctx.Err() != nil {
				return nil, d2, err, false // refused (rate limit), or the caller gave up
			}
			// The slot's write failed: tried again like the record's.
			if reach, again := r.again(ctx, err, cl); !again {
				return nil, r.noQuorum(c, rule, reach), nil, false
			}
			return nil, d2, nil, true
		}
		h.rateSeq = seq
	}
	r.mu.Lock()
	r.held[res] = h
	r.mu.Unlock()
	return res, d, nil, false
}

// errRaceLost is a compare-and-set lost to another claimant's write.
var errRaceLost = errors.New("another claimant wrote first")

// again decides whether a claim whose hub call failed with err is tried
// once more: within its context (retryLeft), for up to twice the
// election wait from its first failure (a stalled leader is replaced by
// an election that takes seconds, more under load), or one election
// wait once the hub has reported its quorum lost; refused at once when
// that report has lasted an election wait (lostFor, counted across
// claims), or when the leaf link has stayed down past the link grace
// (time for the leaf to try every hub member).
func (r *reserver) again(ctx context.Context, err error, cl *claimState) (Reach, bool) {
	now := time.Now() // real time: the election waited for runs on it
	if cl.tries == 0 {
		cl.start = now
	}
	tries := cl.tries
	cl.tries++
	reach := r.s.probe(ctx, err)
	if reach.Cut && r.s.cfg.Linked != nil && !r.s.waitLinked(ctx) {
		return reach, false // the leaf link stayed down past the grace
	}
	// A link back within the grace is tried again after a pause (a new
	// link carries no interest at first), as long as the hub is not
	// seen without quorum for too long.
	now = time.Now()
	lost, refuse := r.s.lostFor(reach, now)
	waited := now.Sub(cl.start)
	if refuse || lost > 0 && waited >= r.s.cfg.ElectionWait || waited >= 2*r.s.cfg.ElectionWait || !r.s.retryLeft(ctx, cl.start) {
		return reach, false
	}
	return reach, sleepCtx(ctx, backoff(5*time.Millisecond, tries))
}

// noDeadlineRetry bounds the retries of a claim whose context has no
// deadline (a do_* call has one: a minute).
const noDeadlineRetry = time.Minute

// retryLeft reports whether a claim (or settle) that started retrying at
// start may try again: until its context's deadline less four write
// timeouts (a pass reads, writes, reads back and probes, each bounded by
// the write timeout; its refusal, or its actuation, must still fit), or
// for noDeadlineRetry without a deadline.
func (s *State) retryLeft(ctx context.Context, start time.Time) bool {
	if ctx.Err() != nil {
		return false
	}
	now := time.Now() // real time, as the elections
	if dl, ok := ctx.Deadline(); ok {
		return now.Before(dl.Add(-4 * s.cfg.Timeout))
	}
	return now.Sub(start) < noDeadlineRetry
}

// lostFor records what the probe of a failed hub call found, and
// returns how long (0: not reported; at least 1 ns once reported), and
// whether, the hub has reported its quorum lost (fewer current
// replicas than a quorum, or no hub at all) for the election wait, with
// no write committed (quorumSeen) since the first such report: counted
// across claims, so that once it has, claims are refused at once. A
// probe that times out or still counts a quorum (a leader that lost its
// followers counts them current for seconds) neither starts nor ends
// it; a report not repeated for an election wait is forgotten (the next
// one starts its own wait).
func (s *State) lostFor(reach Reach, now time.Time) (time.Duration, bool) {
	s.lostMu.Lock()
	defer s.lostMu.Unlock()
	if !s.lostSince.IsZero() && (now.Sub(s.lostLast) > s.cfg.ElectionWait || now.Before(s.lostSince)) {
		s.lostSince = time.Time{}
	}
	if reach.Reachable >= 0 && reach.Reachable < reach.Required {
		if s.lostSince.IsZero() {
			s.lostSince = now
		}
		s.lostLast = now
	}
	if s.lostSince.IsZero() {
		return 0, false
	}
	// Reported: lost for at least a moment (a claim that has itself
	// failed for an election wait is refused on it).
	d := max(now.Sub(s.lostSince), time.Nanosecond)
	return d, d >= s.cfg.ElectionWait
}

// quorumSeen forgets a loss of quorum: a replicated write committed.
func (s *State) quorumSeen() {
	s.lostMu.Lock()
	s.lostSince = time.Time{}
	s.lostMu.Unlock()
}

// take writes the reservation into fleet_lease (compare-and-set against
// the revision decided on) under the claim's own id and lease. It returns
// the held state (its rate slot is taken by hold); or the write's error
// (errRaceLost when another claimant wrote first). A write whose reply
// was lost is recognised by the claim id on the record read back.
func (r *reserver) take(ctx context.Context, c policy.Claim, rule Rule, seen leaseView, cl *claimState) (*held, policy.Decision, error) {
	rec := leaseRecord{claimant: cl.id, State: statePending, LeaseMS: cl.lease.Milliseconds()}
	if l := seen.last(); !l.at.IsZero() {
		rec.Last, rec.LastReq = l.at, l.req
	}
	rev, werr := r.s.writeLease(ctx, opReserve, cl.key, rec, seen.rev, cl.lease)
	if werr != nil {
		now, rerr := r.s.readLease(ctx, cl.key)
		switch {
		case rerr == nil && now.rev != 0 && now.rec.claimant == rec.claimant && now.rec.State == statePending:
			rev, rec = now.rev, now.rec // our own write, applied after all (§6)
		case Classify(werr) == ClassConflict && rerr == nil:
			return nil, policy.Decision{}, errRaceLost
		default:
			return nil, policy.Decision{}, werr
		}
	}
	return &held{key: cl.key, rev: rev, rec: rec, prev: actuation{rec.Last, rec.LastReq}}, policy.Decision{}, nil
}

// othersPending returns the claimant holding a pending reservation on
// the shared actuator (another gateway, or another claim of this one),
// and until when (on this gateway's clock, read now: a wait that outlasts
// the lease ends it) it holds: the action waits for it to end. It returns
// "" when there is none, or when it is older than its lease (its holder
// is taken as gone, and the reservation as an actuation at its start).
func (r *reserver) othersPending(v leaseView) (time.Time, string) {
	if v.rev == 0 || v.rec.State != statePending {
		return time.Time{}, ""
	}
	until := r.s.hubTime(v.created).Add(v.rec.lease(DefaultLease, MaxLease))
	if !r.s.cfg.Clock.Now().Before(until) {
		return time.Time{}, ""
	}
	who := v.rec.Gateway
	if who == r.s.cfg.Gateway {
		who += " (another call of this gateway)"
	}
	return until, who
}

// fold adds the fleet's actuations of the shared actuator to the view,
// mapped onto the gateway's clock. This gateway's own actuations, known
// by their claim ids, are in the local history already: they are
// counted once (the hub's write time never equals the gateway's commit
// time, so times cannot tell them apart).
func (r *reserver) fold(v *policy.View, c policy.Claim, lv leaseView) {
	for _, a := range lv.actuations() {
		if r.isMine(a.req) {
			continue
		}
		lt := r.s.hubTime(a.at)
		if lt.After(c.Now.Add(maxAhead)) {
			// The hubs take every time from their clock: a time ahead
			// of it was not written by them, and is not believed.
			r.s.cfg.Log.Warn("fleet: ignoring a shared record's actuation time in the future", "action", c.Action, "at", a.at, "writer", lv.rec.Gateway)
			continue
		}
		if c.Window > 0 && lt.After(c.Now.Add(-c.Window)) && !slices.ContainsFunc(v.History, lt.Equal) {
			v.History = append(v.History, lt)
		}
	}
}

// isMine reports whether req is the claim id of one of this gateway's
// recent actuations.
func (r *reserver) isMine(req string) bool {
	if req == "" {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Contains(r.mine, req)
}

// remember notes req as this gateway's actuation (in its local history).
func (r *reserver) remember(req string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.mine) >= mineMax {
		r.mine = slices.Delete(r.mine, 0, len(r.mine)-mineMax+1)
	}
	r.mine = append(r.mine, req)
}

// noQuorum is the refusal of a shared claim whose replicated write (or
// read) could not be done.
func (r *reserver) noQuorum(c policy.Claim, rule Rule, reach Reach) policy.Decision {
	what := c.Action + " acts on shared equipment (" + rule.Owner + ") and"
	if rule.Quorum {
		what = c.Action + " requires quorum: it"
	}
	r.s.cfg.Log.Warn("fleet: shared claim refused, no quorum", "action", c.Action, "reachable", reach.Reachable,
		"required", reach.Required, "cut", reach.Cut, "err", reach.Err)
	return policy.Decision{Permission: promcp.PartitionNoQuorum, Reason: reach.Reason(what),
		Details:    "nothing was written and nothing moves; the action is allowed again once the fleet hub's replicas can commit (actions that need no quorum keep running on this gateway)",
		ValidUntil: c.Now.Add(policy.MaxSensorValidity), Value: c.Value}
}

// Commit implements policy.Reserver: the local commit first (this
// gateway's history), then the fleet record. A failed fleet write leaves
// the pending record, which every gateway counts as an actuation anyway.
func (r *reserver) Commit(ctx context.Context, res *policy.Reservation, at time.Time, applied any) error {
	if err := r.local.Commit(ctx, res, at, applied); err != nil {
		return err
	}
	h := r.take1(res)
	if h == nil {
		return nil
	}
	r.remember(h.rec.Request) // in the local history now: counted once
	rec := h.rec
	rec.State = stateCommitted
	if err := r.s.settle(ctx, h, rec); err != nil {
		return fmt.Errorf("fleet: recording the actuation of %s: %w", res.Action, err)
	}
	return nil
}

// settle writes rec over the held pending record. A write that fails is
// not taken as lost (docs/fleet.md, "Failure modes designed for": it may be applied later, and a hub node
// lost mid-write is retried): the key is read back, and the write tried
// again while it still holds this claimant's pending record.
func (s *State) settle(ctx context.Context, h *held, rec leaseRecord) error {
	// Real time: the hubs elect on it.
	rev, start := h.rev, time.Now()
	for try := 0; ; try++ {
		_, err := s.writeLease(ctx, opSettle, h.key, rec, rev, 0)
		if err == nil {
			return nil
		}
		now, rerr := s.readLease(ctx, h.key)
		switch {
		case rerr == nil && now.rec.claimant == rec.claimant && now.rec.State == rec.State:
			return nil // applied after all: its reply was lost
		case rerr == nil && rec.State == stateCommitted && now.rec.LastReq == rec.Request && !now.rec.LastLapsed:
			return nil // applied, its reply lost, and another claim came after it
		case rerr == nil && now.rec.claimant != rec.claimant:
			return fmt.Errorf("%w (the record now belongs to gateway %s)", err, now.rec.Gateway)
		case rerr == nil:
			rev = now.rev
		}
		// Within the caller's context, to its end (nothing moves after
		// a settle): a minute at most without a deadline.
		_, hasDeadline := ctx.Deadline()
		if errors.Is(err, ErrRefused) || !hasDeadline && time.Since(start) >= noDeadlineRetry || !sleepCtx(ctx, backoff(10*time.Millisecond, try)) {
			return err
		}
	}
}

// Release implements policy.Reserver: nothing moved, so the fleet record
// goes back to the actuation before it and the rate slot is freed.
func (r *reserver) Release(ctx context.Context, res *policy.Reservation) error {
	if err := r.local.Release(ctx, res); err != nil {
		return err
	}
	if h := r.take1(res); h != nil {
		return r.s.putBack(ctx, h)
	}
	return nil
}

// Snapshot implements policy.Reserver: the local view with the fleet's
// actuations folded in when the hub answers within a short bound.
func (r *reserver) Snapshot(c policy.Claim) policy.View {
	v := r.local.Snapshot(c)
	rule, shared := r.rule(c)
	if !shared {
		return v
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.s.cfg.Timeout/4)
	defer cancel()
	if lv, err := r.s.readLease(ctx, leaseKey(rule.Owner, c.Action)); err == nil {
		r.fold(&v, c, lv)
	}
	return v
}

// Checker is implemented by the fleet Reserver: what can_do adds to a
// Snapshot, which cannot refuse.
type Checker interface {
	// Check reports whether a shared claim could reach the fleet record
	// now: for a claim that is not shared, or whose record the hub
	// serves, ok is true; otherwise d is the partition_no_quorum answer
	// do_* would give.
	Check(ctx context.Context, c policy.Claim) (d policy.Decision, ok bool)
}

// Check implements Checker. It reads the fleet record once, without
// waiting for a leaf link to come back.
func (r *reserver) Check(ctx context.Context, c policy.Claim) (policy.Decision, bool) {
	rule, shared := r.rule(c)
	if !shared {
		return policy.Decision{}, true
	}
	// Each step within checkBudget: can_do answers within its own budget,
	// and a record the hub cannot serve that fast is one do_* could not
	// commit either.
	rctx, cancel := context.WithTimeout(ctx, checkBudget)
	_, err := r.s.readLease(rctx, leaseKey(rule.Owner, c.Action))
	cancel()
	ctx, cancel = context.WithTimeout(ctx, checkBudget)
	defer cancel()
	if err == nil {
		// A stream leader that lost its followers still serves reads
		// until it steps down, while no write commits: ask it how many
		// of its replicas are current, as do_* does when a write fails.
		reach := r.s.probe(ctx, nil)
		if reach.Reachable < 0 || reach.Reachable >= reach.Required {
			return policy.Decision{}, true
		}
		return r.noQuorum(c, rule, reach), false
	}
	return r.noQuorum(c, rule, r.s.probe(ctx, err)), false
}

// checkBudget bounds each network step of Check.
const checkBudget = 500 * time.Millisecond

func (r *reserver) rule(c policy.Claim) (Rule, bool) {
	if r.rules == nil {
		return Rule{}, false
	}
	rule, ok := r.rules(c)
	if ok && rule.Owner == "" {
		rule.Owner = r.s.cfg.Gateway
	}
	return rule, ok
}

func (r *reserver) take1(res *policy.Reservation) *held {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.held[res]
	delete(r.held, res)
	return h
}

// readLease reads a key of fleet_lease from the stream leader.
func (s *State) readLease(ctx context.Context, key string) (leaseView, error) {
	if s.fault != nil {
		if err := s.fault("read"); err != nil {
			return leaseView{}, fmt.Errorf("reading %s: %w", key, err)
		}
	}
	lease, _, _, err := s.handles(ctx)
	if err != nil {
		return leaseView{}, err
	}
	e, err := s.get(ctx, lease, key)
	if err != nil {
		return leaseView{}, fmt.Errorf("reading %s: %w", key, err)
	}
	if e == nil {
		return leaseView{}, nil
	}
	v := leaseView{rev: e.Revision(), created: e.Created()}
	if err := json.Unmarshal(e.Value(), &v.rec); err != nil {
		return leaseView{}, fmt.Errorf("reading %s: %w", key, err)
	}
	return v, nil
}

// writeLease asks the hubs to write key of fleet_lease if its revision
// is still rev (0: the key must not exist): op reserve makes it a pending
// record of this gateway's request rec.Request, op settle moves this
// gateway's pending record to rec.State. The hubs take the record's
// times from their own clock and its gateway from the subject.
func (s *State) writeLease(ctx context.Context, op, key string, rec leaseRecord, rev uint64, lease time.Duration) (uint64, error) {
	if err := s.bind(ctx, true); err != nil {
		return 0, err
	}
	rep, err := s.call(ctx, op, svcRequest{Key: key, Rev: rev, Req: rec.Request, State: rec.State, TTL: lease.Milliseconds()})
	if err == nil {
		s.quorumSeen()
	}
	return rep.Rev, err
}

// get reads key of kv, bounded like every hub call; nil (and no error)
// when the key does not exist.
func (s *State) get(ctx context.Context, kv jetstream.KeyValue, key string) (jetstream.KeyValueEntry, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	e, err := kv.Get(ctx, key)
	s.kicker.observe(err, time.Now()) // real time: the leaf relinks on it
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	}
	return e, err
}

// cas writes rec, as JSON, to key of kv if its revision is still rev (0:
// the key must not exist), bounded like every hub call. It measures the
// hub's clock against the gateway's now and then, when the last
// measurement is stale.
func (s *State) cas(ctx context.Context, kv jetstream.KeyValue, key string, rec any, rev uint64) (uint64, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	b, err := json.Marshal(rec)
	if err != nil {
		return 0, err
	}
	before := s.cfg.Clock.Now()
	var nrev uint64
	if rev == 0 {
		nrev, err = kv.Create(ctx, key, b)
	} else {
		nrev, err = kv.Update(ctx, key, b, rev)
	}
	s.kicker.observe(err, time.Now())
	if err != nil {
		return 0, err
	}
	if after := s.cfg.Clock.Now(); s.skewStale(after) {
		if e, gerr := kv.GetRevision(ctx, key, nrev); gerr == nil {
			s.measureSkew(e.Created(), before, after)
		}
	}
	return nrev, nil
}

// skewStale reports whether the hub's clock was last measured long ago.
func (s *State) skewStale(now time.Time) bool {
	s.skewMu.Lock()
	defer s.skewMu.Unlock()
	return !s.skewSeen || now.Sub(s.skewAt) > time.Minute || now.Before(s.skewAt)
}

// putBack ends a held reservation that did not actuate: the record goes
// back to the actuation before it, and the rate slot is freed.
func (s *State) putBack(ctx context.Context, h *held) error {
	rec := h.rec
	rec.State, rec.Last, rec.LastReq = stateReleased, h.prev.at, h.prev.req
	var errs []error
	if err := s.settle(ctx, h, rec); err != nil {
		errs = append(errs, fmt.Errorf("fleet: releasing %s: %w", h.key, err))
	}
	if h.rateSeq != 0 {
		if err := s.freeRate(ctx, h.rateSeq); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// waitChange waits until key's revision is no longer rev, or until
// passes on the gateway's clock, or ctx ends.
func (s *State) waitChange(ctx context.Context, key string, rev uint64, until time.Time) error {
	for pause := 5 * time.Millisecond; ; pause = min(2*pause, 200*time.Millisecond) {
		if !sleepCtx(ctx, pause) {
			return ctx.Err()
		}
		if !s.cfg.Clock.Now().Before(until) {
			return nil
		}
		v, err := s.readLease(ctx, key)
		if err != nil && ctx.Err() != nil {
			return ctx.Err()
		}
		if err == nil && v.rev != rev {
			return nil
		}
	}
}

// waitLinked waits for the leaf link to be up again (a leaf homed on a
// lost hub node fails over in a second or two), up to the link grace
// counted from when a claim first found it down: during a lasting
// partition later claims are refused at once. False without a Linked hook.
func (s *State) waitLinked(ctx context.Context) bool {
	if s.cfg.Linked == nil {
		return false
	}
	for {
		now := time.Now() // real time: the leaf's reconnects run on it
		s.mu.Lock()
		if s.cfg.Linked() {
			s.unlinkedSince = time.Time{}
			s.mu.Unlock()
			return true
		}
		if s.unlinkedSince.IsZero() || now.Before(s.unlinkedSince) {
			s.unlinkedSince = now
		}
		over := !now.Before(s.unlinkedSince.Add(s.cfg.LinkGrace))
		s.mu.Unlock()
		if over || !sleepCtx(ctx, 20*time.Millisecond) {
			return false
		}
	}
}

// sleepCtx pauses for d unless ctx ends first (a back-off between hub
// calls, not a wait for a condition). Real time: it paces requests to
// NATS, whose elections and timeouts run on real time.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func newRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
