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
// later is recognised as the claimant's own (FLEET.md §6).
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
}

// leaseView is a key of fleet_lease as read.
type leaseView struct {
	rev     uint64 // 0: the key does not exist
	rec     leaseRecord
	created time.Time // hub time of the write
}

// actuations returns the hub times the record counts as actuations: a
// pending or committed record's own write, and the one before it.
func (v leaseView) actuations() []time.Time {
	var ts []time.Time
	if !v.rec.Last.IsZero() {
		ts = append(ts, v.rec.Last)
	}
	if v.rev != 0 && v.rec.State != stateReleased {
		ts = append(ts, v.created)
	}
	return ts
}

// last is the latest actuation the record counts.
func (v leaseView) last() time.Time {
	var t time.Time
	for _, a := range v.actuations() {
		if a.After(t) {
			t = a
		}
	}
	return t
}

// held is a shared reservation's fleet side.
type held struct {
	key     string
	rev     uint64
	rec     leaseRecord
	prev    time.Time // Last to restore on release
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
}

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

// maxRetries bounds how often a shared claim is tried again after a
// write that lost without the key changing (a lame-duck leader, FLEET.md
// §5.14) or that failed while the hub's quorum still answers (a hub node
// lost mid-write, §6), before it is refused partition_no_quorum. With
// the back-off (doubling from a few milliseconds, at most maxBackoff) the
// retries span about two seconds: a new stream leader is elected in
// 40-120 ms on an idle machine and in over a second on a loaded one, and
// losing one hub node must fail no action.
const maxRetries = 12

// maxBackoff bounds the wait between two tries.
const maxBackoff = 250 * time.Millisecond

// backoff is the wait before try number tries+1, from base.
func backoff(base time.Duration, tries int) time.Duration {
	return min(base<<min(tries, 16), maxBackoff)
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
	key := leaseKey(rule.Owner, c.Action)
	for tries := 0; ; {
		var seen leaseView
		var readErr error
		res, d, err := r.local.Reserve(ctx, c, func(ctx context.Context, v policy.View) policy.Decision {
			lv, err := r.s.readLease(ctx, key)
			if err != nil {
				readErr = err
				return policy.Decision{Permission: promcp.PartitionNoQuorum, Reason: "reading the fleet record failed"}
			}
			seen, readErr = lv, nil
			r.fold(&v, c, lv)
			return decide(ctx, v)
		})
		if res != nil && readErr != nil {
			_ = r.local.Release(ctx, res)
			res = nil
		}
		switch {
		case err != nil:
			return res, d, err
		case readErr != nil:
			if ctx.Err() != nil {
				return nil, d, ctx.Err()
			}
			if reach, again := r.again(ctx, readErr, tries); !again {
				return nil, r.noQuorum(c, rule, reach), nil
			}
			tries++
			continue
		case res == nil:
			return nil, d, nil
		}
		if until, who := r.othersPending(c, rule, seen); who != "" {
			_ = r.local.Release(ctx, res)
			if err := r.s.waitChange(ctx, key, seen.rev, until); err != nil {
				return nil, d, fmt.Errorf("waiting for the action in progress on %s at gateway %s: %w", c.Action, who, err)
			}
			continue
		}
		h, d2, werr := r.take(ctx, c, rule, key, seen)
		if h != nil {
			r.mu.Lock()
			r.held[res] = h
			r.mu.Unlock()
			return res, d, nil
		}
		_ = r.local.Release(ctx, res)
		switch {
		case werr == nil:
			return nil, d2, nil // refused (rate limit, or no quorum for the rate slot)
		case ctx.Err() != nil:
			return nil, d, ctx.Err()
		case errors.Is(werr, errRaceLost):
			continue // decide again on the winner's record
		case errors.Is(werr, ErrRefused):
			r.s.cfg.Log.Warn("fleet: the hubs refused a shared claim", "action", c.Action, "owner", rule.Owner, "err", werr)
			return nil, policy.Decision{Permission: promcp.PolicyDenied, Value: c.Value, ValidUntil: c.Now.Add(policy.MaxSensorValidity),
				Reason:  fmt.Sprintf("%s acts on shared equipment (%s), and the fleet hubs refused this gateway's record: %v", c.Action, rule.Owner, werr),
				Details: "the hubs let a gateway write only its own records and those of the equipment its registry entry lists as shared; nothing moved"}, nil
		}
		if reach, again := r.again(ctx, werr, tries); !again {
			return nil, r.noQuorum(c, rule, reach), nil
		}
		tries++
	}
}

// errRaceLost is a compare-and-set lost to another claimant's write.
var errRaceLost = errors.New("another claimant wrote first")

// again decides whether a claim whose hub call failed with err is tried
// once more: when the hub's quorum still answers (a node lost mid-write,
// or a stale conflict), or the leaf link comes back within the grace, and
// the retries are not spent. Otherwise it returns what is reachable.
func (r *reserver) again(ctx context.Context, err error, tries int) (Reach, bool) {
	reach := r.s.probe(ctx, err)
	if tries >= maxRetries {
		return reach, false
	}
	if reach.Cut && r.s.waitLinked(ctx) {
		return reach, true
	}
	if reach.Reachable >= reach.Required || Classify(err) == ClassConflict || (reach.Reachable < 0 && tries == 0) {
		return reach, sleepCtx(ctx, backoff(5*time.Millisecond, tries))
	}
	return reach, false
}

// take writes the reservation into fleet_lease (compare-and-set against
// the revision decided on) and takes its rate slot. It returns the held
// state; or a refusing Decision (rate limit); or the write's error
// (errRaceLost when another claimant wrote first).
func (r *reserver) take(ctx context.Context, c policy.Claim, rule Rule, key string, seen leaseView) (*held, policy.Decision, error) {
	rec := leaseRecord{claimant: r.s.claimant(), State: statePending, Last: seen.last()}
	rev, werr := r.s.writeLease(ctx, opReserve, key, rec, seen.rev)
	if werr != nil {
		now, rerr := r.s.readLease(ctx, key)
		switch {
		case rerr == nil && now.rev != 0 && now.rec.claimant == rec.claimant:
			rev = now.rev // our own write, applied after all (§6)
		case Classify(werr) == ClassConflict && rerr == nil && now.rev != seen.rev:
			return nil, policy.Decision{}, errRaceLost
		default:
			return nil, policy.Decision{}, werr
		}
	}
	h := &held{key: key, rev: rev, rec: rec, prev: rec.Last}
	if rule.RateLimit != nil {
		seq, d, err := r.s.takeRate(ctx, c, rule)
		if seq == 0 {
			_ = r.s.putBack(ctx, h)
			return nil, d, err
		}
		h.rateSeq = seq
	}
	return h, policy.Decision{}, nil
}

// othersPending returns the gateway holding a pending reservation on the
// shared actuator, and until when (on this gateway's clock) it holds: the
// action waits for it to end. It returns "" when there is none, or when
// it is older than the lease (its holder is taken as gone, and the
// reservation as an actuation at its start).
func (r *reserver) othersPending(c policy.Claim, rule Rule, v leaseView) (time.Time, string) {
	if v.rev == 0 || v.rec.State != statePending || v.rec.Gateway == r.s.cfg.Gateway {
		return time.Time{}, ""
	}
	lease := rule.Lease
	if lease <= 0 {
		lease = 30 * time.Second
	}
	until := r.s.hubTime(v.created).Add(lease)
	if !c.Now.Before(until) {
		return time.Time{}, ""
	}
	return until, v.rec.Gateway
}

// fold adds the fleet's actuations of the shared actuator to the view,
// mapped onto the gateway's clock.
func (r *reserver) fold(v *policy.View, c policy.Claim, lv leaseView) {
	for _, t := range lv.actuations() {
		lt := r.s.hubTime(t)
		if lt.After(c.Now.Add(maxAhead)) {
			// The hubs take every time from their clock: a time ahead
			// of it was not written by them, and is not believed.
			r.s.cfg.Log.Warn("fleet: ignoring a shared record's actuation time in the future", "action", c.Action, "at", t, "writer", lv.rec.Gateway)
			continue
		}
		if c.Window > 0 && lt.After(c.Now.Add(-c.Window)) && !slices.ContainsFunc(v.History, lt.Equal) {
			v.History = append(v.History, lt)
		}
	}
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
	rec := h.rec
	rec.State = stateCommitted
	if err := r.s.settle(ctx, h, rec); err != nil {
		return fmt.Errorf("fleet: recording the actuation of %s: %w", res.Action, err)
	}
	return nil
}

// settle writes rec over the held pending record. A write that fails is
// not taken as lost (FLEET.md §6: it may be applied later, and a hub node
// lost mid-write is retried): the key is read back, and the write tried
// again while it still holds this claimant's pending record.
func (s *State) settle(ctx context.Context, h *held, rec leaseRecord) error {
	rev := h.rev
	for try := 0; ; try++ {
		_, err := s.writeLease(ctx, opSettle, h.key, rec, rev)
		if err == nil {
			return nil
		}
		now, rerr := s.readLease(ctx, h.key)
		switch {
		case rerr == nil && now.rec.Request == rec.Request && now.rec.State == rec.State:
			return nil // applied after all
		case rerr == nil && now.rec.Request != rec.Request:
			return fmt.Errorf("%w (the record now belongs to gateway %s)", err, now.rec.Gateway)
		case rerr == nil:
			rev = now.rev
		}
		if errors.Is(err, ErrRefused) || try >= maxRetries || !sleepCtx(ctx, backoff(10*time.Millisecond, try)) {
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
func (s *State) writeLease(ctx context.Context, op, key string, rec leaseRecord, rev uint64) (uint64, error) {
	if err := s.bind(ctx, true); err != nil {
		return 0, err
	}
	rep, err := s.call(ctx, op, svcRequest{Key: key, Rev: rev, Req: rec.Request, State: rec.State})
	return rep.Rev, err
}

// get reads key of kv, bounded like every hub call; nil (and no error)
// when the key does not exist.
func (s *State) get(ctx context.Context, kv jetstream.KeyValue, key string) (jetstream.KeyValueEntry, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	e, err := kv.Get(ctx, key)
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
	before := s.cfg.Now()
	var nrev uint64
	if rev == 0 {
		nrev, err = kv.Create(ctx, key, b)
	} else {
		nrev, err = kv.Update(ctx, key, b, rev)
	}
	if err != nil {
		return 0, err
	}
	if after := s.cfg.Now(); s.skewStale(after) {
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
	rec.State, rec.Last = stateReleased, h.prev
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
		if !s.cfg.Now().Before(until) {
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
		now := s.cfg.Now()
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
// calls, not a wait for a condition).
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
