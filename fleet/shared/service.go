package shared

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/internal/positive"
)

// The shared-state service: gateways never write fleet_lease, fleet_idem
// or FLEET_RATE themselves (NATS refuses it, FLEET-TRUST.md); they ask the
// hubs on promcp.shared.<gw>.<op>, a subject only gateway <gw> may publish
// on, and a hub (queue group "hub") checks that <gw> may touch the record,
// takes every time from its own clock and does the compare-and-set. A
// writer names no time and no claimant: "last" comes from the record the
// hub reads, the claimant's gateway from the subject.

// ServiceSubject is the subject of operation op asked by gateway gw.
func ServiceSubject(gw, op string) string { return "promcp.shared." + gw + "." + op }

// ServiceQueue is the queue group of the hubs' service.
const ServiceQueue = "hub"

// Operations of the service.
const (
	opClock       = "clock"        // the hub's time
	opReserve     = "reserve"      // a pending lease record at rev
	opSettle      = "settle"       // the caller's pending record → committed or released
	opIdemClaim   = "idem_claim"   // a running idempotency claim at rev
	opIdemDone    = "idem_done"    // the caller's claim → done with its outcome
	opIdemDrop    = "idem_drop"    // the caller's claim given up
	opRateTake    = "rate_take"    // a slot of a fleet-wide rate limit
	opRateFree    = "rate_free"    // the caller's slot given back
	opAuditSource = "audit_source" // FLEET_AUDIT sources AUDIT_<gw>
)

// svcRequest is an operation's arguments; which are used depends on the
// operation.
type svcRequest struct {
	Key         string `json:"key,omitempty"`
	Rev         uint64 `json:"rev,omitempty"`
	Req         string `json:"req,omitempty"`
	State       string `json:"state,omitempty"`
	Fingerprint string `json:"fp,omitempty"`
	Outcome     []byte `json:"outcome,omitempty"`
	TTL         int64  `json:"ttl_ms,omitempty"`
	Owner       string `json:"owner,omitempty"`
	Action      string `json:"action,omitempty"`
	Max         int    `json:"max,omitempty"`
	Per         int64  `json:"per_ms,omitempty"`
	Seq         uint64 `json:"seq,omitempty"`
	// Timeout is how long the caller waits (ms): the hub gives up its
	// write sooner, so that its answer arrives.
	Timeout int64 `json:"timeout_ms,omitempty"`
}

// svcReply is the hub's answer: the new revision or sequence, the hub's
// time, or the error with its JetStream code and class.
type svcReply struct {
	Rev   uint64    `json:"rev,omitempty"`
	Seq   uint64    `json:"seq,omitempty"`
	Now   time.Time `json:"now"`
	Err   string    `json:"err,omitempty"`
	Code  int       `json:"code,omitempty"`
	Class Class     `json:"class,omitempty"`
	// Refused marks a request the hub's checks refused (not the hub's
	// to do): never retried.
	Refused bool `json:"refused,omitempty"`
}

// ErrRefused is returned, wrapped, when the hubs refused an operation by
// their checks: the record is not this gateway's to touch, or the request
// is malformed.
var ErrRefused = errors.New("refused by the fleet hub")

// ServiceConfig configures the hubs' shared-state service.
type ServiceConfig struct {
	// Node is the hub member's name (for the logs and its State).
	Node string
	// Shares reports whether gateway gw registered owner (equipment-NAME)
	// as shared equipment it drives: only then, or when owner is gw
	// itself, may it write owner's records. Nil allows own records only.
	Shares func(gw, owner string) bool
	// Replicas, HubDomain, IdemTTL and RateMaxAge are as in Config.
	Replicas   int
	HubDomain  string
	IdemTTL    time.Duration
	RateMaxAge time.Duration
	// MinIdemTTL is the least age at which another gateway's
	// idempotency claim may be replaced; 0 is 1 h.
	MinIdemTTL time.Duration
	// MaxLease bounds how long a pending reservation holds its actuator:
	// each record holds for the lease its claimant asked (at least 1 s,
	// at most MaxLease), a record that names none for MaxLease; no
	// reservation, the claimant's own included, is written over a pending
	// one within its lease. 0 is shared.MaxLease (10 min).
	MaxLease time.Duration
	Log      *slog.Logger
	// Clock is the hub's clock (nil: clock.System).
	Clock clock.Clock
}

// Service is a hub member's shared-state service.
type Service struct {
	cfg ServiceConfig
	s   *State
	sub *nats.Subscription
}

// Serve binds (creating when absent) the shared buckets and streams and
// answers promcp.shared.*.* in queue group "hub" until Close. When the
// hub's JetStream is not up yet it returns the Service and the error
// (wrapped ErrUnreachable): operations bind on first use.
func Serve(ctx context.Context, nc *nats.Conn, cfg ServiceConfig) (*Service, error) {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	cfg.Clock = clock.Or(cfg.Clock)
	if cfg.Node == "" {
		cfg.Node = "hub"
	}
	cfg.MinIdemTTL = positive.Or(cfg.MinIdemTTL, time.Hour)
	cfg.MaxLease = positive.Or(cfg.MaxLease, MaxLease)
	st, err := Open(ctx, nc, Config{Gateway: cfg.Node, HubDomain: cfg.HubDomain, Replicas: cfg.Replicas, IdemTTL: cfg.IdemTTL,
		RateMaxAge: cfg.RateMaxAge, Log: cfg.Log, Clock: cfg.Clock})
	if st == nil {
		return nil, err
	}
	svc := &Service{cfg: cfg, s: st}
	sub, serr := nc.QueueSubscribe(ServiceSubject("*", "*"), ServiceQueue, svc.handle)
	if serr != nil {
		return nil, fmt.Errorf("fleet shared service: subscribe: %w", serr)
	}
	svc.sub = sub
	return svc, err
}

// Close stops answering.
func (v *Service) Close() error { return v.sub.Unsubscribe() }

// handle answers one operation on its own goroutine.
func (v *Service) handle(m *nats.Msg) {
	go func() {
		rep := v.answer(m)
		rep.Now = v.cfg.Clock.Now().UTC()
		b, _ := json.Marshal(rep)
		_ = m.Respond(b)
	}()
}

func (v *Service) answer(m *nats.Msg) svcReply {
	parts := strings.Split(m.Subject, ".")
	if len(parts) != 4 || !idRE.MatchString(parts[2]) {
		return refuse("bad subject %q", m.Subject)
	}
	gw, op := parts[2], parts[3]
	var q svcRequest
	if op != opClock && json.Unmarshal(m.Data, &q) != nil {
		return refuse("%s: unreadable request", op)
	}
	timeout := 2 * time.Second // a request that says nothing: the gateways' default
	if q.Timeout > 0 {
		timeout = min(max(time.Duration(q.Timeout)*time.Millisecond*3/4, 100*time.Millisecond), 10*time.Second)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var rep svcReply
	switch op {
	case opClock:
		return rep
	case opReserve, opSettle:
		rep = v.lease(ctx, gw, op, q)
	case opIdemClaim, opIdemDone, opIdemDrop:
		rep = v.idemOp(ctx, gw, op, q)
	case opRateTake:
		rep = v.rateTake(ctx, gw, q)
	case opRateFree:
		rep = v.rateFree(ctx, gw, q)
	case opAuditSource:
		if err := v.s.sourceAudit(ctx, gw); err != nil {
			rep = failure(err)
		}
	default:
		rep = refuse("unknown operation %q", op)
	}
	if rep.Refused {
		v.cfg.Log.Warn("fleet shared service: refused", "gateway", gw, "op", op, "key", q.Key, "owner", q.Owner, "reason", rep.Err)
	}
	return rep
}

func refuse(format string, args ...any) svcReply {
	return svcReply{Err: fmt.Sprintf(format, args...), Refused: true}
}

// failure is the answer of a hub call that failed with err. A hub whose
// own JetStream does not answer is, to the gateway that reached it, a hub
// that cannot commit (no quorum), not one it is cut off from.
func failure(err error) svcReply {
	r := svcReply{Err: err.Error(), Class: Classify(err)}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		r.Code = int(apiErr.ErrorCode)
	}
	if r.Class == ClassUnreachable {
		r.Class, r.Code = ClassNoQuorum, 0
	}
	return r
}

// may reports whether gateway gw may write records of owner.
func (v *Service) may(gw, owner string) bool {
	return owner == gw || (v.cfg.Shares != nil && v.cfg.Shares(gw, owner))
}

// lease reserves (a pending record of gw at rev, its last actuation taken
// from the record the hub reads) or settles (gw's own pending record,
// committed or released) a key of fleet_lease.
func (v *Service) lease(ctx context.Context, gw, op string, q svcRequest) svcReply {
	owner, _, ok := strings.Cut(strings.TrimPrefix(q.Key, "cooldown."), ".")
	if !strings.HasPrefix(q.Key, "cooldown.") || !ok || !idRE.MatchString(owner) || q.Req == "" {
		return refuse("%s: bad lease key %q", op, q.Key)
	}
	if !v.may(gw, owner) {
		return refuse("%s: gateway %s does not share %s (its registry entry does not list it)", op, gw, owner)
	}
	cur, err := v.s.readLease(ctx, q.Key)
	if err != nil {
		return failure(err)
	}
	if cur.rev != q.Rev {
		return conflict(q.Key, q.Rev, cur.rev)
	}
	cur = v.sane(q.Key, cur)
	rec := leaseRecord{claimant: claimant{Gateway: gw, Request: q.Req}, State: statePending}
	switch op {
	case opReserve:
		if cur.rev != 0 && cur.rec.State == statePending {
			if until := cur.created.Add(cur.rec.lease(min(DefaultLease, v.cfg.MaxLease), v.cfg.MaxLease)); v.cfg.Clock.Now().Before(until) {
				// A pending reservation within its lease (another
				// gateway's, or another claim of this one) is its
				// claimant's to settle: no one erases it. Answered as a
				// lost race, so that the claimant reads the record again
				// and waits; once the lease lapses it is taken over.
				v.cfg.Log.Warn("fleet shared service: refused a reservation over a pending one", "gateway", gw,
					"key", q.Key, "holder", cur.rec.Gateway, "holder_req", cur.rec.Request)
				return svcReply{Err: fmt.Sprintf("reserve: %s holds gateway %s's pending reservation %s until %s", q.Key, cur.rec.Gateway,
					cur.rec.Request, until.UTC().Format(time.RFC3339Nano)), Class: ClassConflict, Code: int(jetstream.JSErrCodeStreamWrongLastSequence)}
			}
		}
		l := cur.last()
		rec.Last, rec.LastReq = l.at, l.req
		rec.LastLapsed = cur.rev != 0 && cur.rec.State == statePending && l.req == cur.rec.Request
		if q.TTL > 0 {
			rec.LeaseMS = min(max(q.TTL, time.Second.Milliseconds()), v.cfg.MaxLease.Milliseconds())
		}
	default:
		if cur.rev == 0 || cur.rec.State != statePending || cur.rec.claimant != rec.claimant {
			return refuse("settle: %s is not a pending reservation of gateway %s request %s", q.Key, gw, q.Req)
		}
		if q.State != stateCommitted && q.State != stateReleased {
			return refuse("settle: state %q (want committed or released)", q.State)
		}
		rec.State, rec.Last, rec.LastReq, rec.LastLapsed, rec.LeaseMS = q.State, cur.rec.Last, cur.rec.LastReq, cur.rec.LastLapsed, cur.rec.LeaseMS
	}
	lease, _, _, err := v.s.handles(ctx)
	if err != nil {
		return failure(err)
	}
	rev, err := v.s.cas(ctx, lease, q.Key, rec, q.Rev)
	if err != nil {
		return failure(err)
	}
	return svcReply{Rev: rev}
}

// conflict is the answer of a compare-and-set decided on a stale
// revision.
func conflict(key string, want, now uint64) svcReply {
	return svcReply{Err: fmt.Sprintf("%s is at revision %d, not %d", key, now, want), Class: ClassConflict,
		Code: int(jetstream.JSErrCodeStreamWrongLastSequence)}
}

// sane drops a record's last actuation when it lies ahead of the hub's
// clock: no writer sets a time (the hubs take them from their clock), so
// such a record was written past the service, and is not believed.
func (v *Service) sane(key string, lv leaseView) leaseView {
	if lv.rec.Last.After(v.cfg.Clock.Now().Add(maxAhead)) {
		v.cfg.Log.Warn("fleet shared service: ignoring a lease record's last actuation in the future (not written by a hub)",
			"key", key, "last", lv.rec.Last, "writer", lv.rec.Gateway)
		lv.rec.Last = time.Time{}
	}
	return lv
}

// maxAhead is how far ahead of a clock a recorded time may lie (hub
// members' clocks differ a little).
const maxAhead = 5 * time.Second

// idemOp claims, completes or gives up a key of fleet_idem for gw. A claim
// replaces only a record that is gw's own, unreadable, or older than the
// claim's TTL (at least MinIdemTTL) on the hub's clock.
func (v *Service) idemOp(ctx context.Context, gw, op string, q svcRequest) svcReply {
	if !strings.HasPrefix(q.Key, "idem.") || q.Req == "" {
		return refuse("%s: bad idempotency key %q", op, q.Key)
	}
	_, idem, _, err := v.s.handles(ctx)
	if err != nil {
		return failure(err)
	}
	e, err := v.s.get(ctx, idem, q.Key)
	if err != nil {
		return failure(err)
	}
	var cur idemRecord
	var rev uint64
	readable := false
	if e != nil {
		rev, readable = e.Revision(), json.Unmarshal(e.Value(), &cur) == nil
	}
	if rev != q.Rev {
		return conflict(q.Key, q.Rev, rev)
	}
	mine := claimant{Gateway: gw, Request: q.Req}
	switch op {
	case opIdemClaim:
		ttl := max(time.Duration(q.TTL)*time.Millisecond, v.cfg.MinIdemTTL)
		if e != nil && readable && cur.Gateway != gw && v.cfg.Clock.Now().Before(e.Created().Add(ttl)) {
			return refuse("idem_claim: %s is gateway %s's claim, not expired", q.Key, cur.Gateway)
		}
		nrev, err := v.s.cas(ctx, idem, q.Key, idemRecord{claimant: mine, Fingerprint: q.Fingerprint, State: idemRunning}, q.Rev)
		if err != nil {
			return failure(err)
		}
		return svcReply{Rev: nrev}
	}
	if e == nil || !readable || cur.claimant != mine {
		return refuse("%s: %s is not gateway %s's claim %s", op, q.Key, gw, q.Req)
	}
	if op == opIdemDrop {
		if err := idem.Delete(ctx, q.Key, jetstream.LastRevision(q.Rev)); err != nil {
			return failure(err)
		}
		return svcReply{}
	}
	cur.State, cur.Outcome = idemDone, q.Outcome
	nrev, err := v.s.cas(ctx, idem, q.Key, cur, q.Rev)
	if err != nil {
		return failure(err)
	}
	return svcReply{Rev: nrev}
}

// rateTake takes the first free slot of owner's action's limit for gw.
func (v *Service) rateTake(ctx context.Context, gw string, q svcRequest) svcReply {
	per := time.Duration(q.Per) * time.Millisecond
	switch {
	case !idRE.MatchString(q.Owner) || !idRE.MatchString(q.Action) || q.Max < 1 || q.Max > 10000 || per <= 0:
		return refuse("rate_take: bad limit %s.%s %d per %s", q.Owner, q.Action, q.Max, per)
	case !v.may(gw, q.Owner):
		return refuse("rate_take: gateway %s does not share %s", gw, q.Owner)
	}
	for slot := range q.Max {
		ack, err := v.s.js.Publish(ctx, rateSubject(q.Owner, q.Action, slot), []byte(gw),
			jetstream.WithMsgTTL(ttl(per)), jetstream.WithExpectStream(RateStream))
		if err == nil {
			return svcReply{Seq: ack.Sequence}
		}
		if Classify(err) != ClassRateFull {
			return failure(err)
		}
	}
	return svcReply{Err: "every slot is taken", Class: ClassRateFull, Code: codeMaxMsgsPerSubject}
}

// rateFree gives back a slot gw took.
func (v *Service) rateFree(ctx context.Context, gw string, q svcRequest) svcReply {
	_, _, st, err := v.s.handles(ctx)
	if err != nil {
		return failure(err)
	}
	m, err := st.GetMsg(ctx, q.Seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return svcReply{}
	}
	if err != nil {
		return failure(err)
	}
	if string(m.Data) != gw || !strings.HasPrefix(m.Subject, "rate.") {
		return refuse("rate_free: slot %d is not gateway %s's", q.Seq, gw)
	}
	if err := st.DeleteMsg(ctx, q.Seq); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
		return failure(err)
	}
	return svcReply{}
}

// call asks the hubs for op and returns their answer; a hub error comes
// back as an error Classify sorts as the hub did.
func (s *State) call(ctx context.Context, op string, q svcRequest) (svcReply, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if dl, ok := ctx.Deadline(); ok {
		q.Timeout = time.Until(dl).Milliseconds()
	}
	b, _ := json.Marshal(q)
	before := s.cfg.Clock.Now()
	m, err := s.nc.RequestWithContext(ctx, ServiceSubject(s.cfg.Gateway, op), b)
	if err != nil {
		return svcReply{}, err
	}
	after := s.cfg.Clock.Now()
	var rep svcReply
	if err := json.Unmarshal(m.Data, &rep); err != nil {
		return svcReply{}, fmt.Errorf("fleet shared service: unreadable answer to %s: %w", op, err)
	}
	if !rep.Now.IsZero() && s.skewStale(after) {
		s.measureSkew(rep.Now, before, after)
	}
	if s.fault != nil {
		if err := s.fault(op); err != nil {
			return svcReply{}, err
		}
	}
	return rep, rep.err(op)
}

// err rebuilds the hub's error.
func (r svcReply) err(op string) error {
	switch {
	case r.Err == "":
		return nil
	case r.Refused:
		return fmt.Errorf("%w: %s", ErrRefused, r.Err)
	case r.Code != 0:
		return fmt.Errorf("fleet hub, %s: %w", op, &jetstream.APIError{ErrorCode: jetstream.ErrorCode(r.Code), Description: r.Err})
	}
	var base error
	switch r.Class {
	case ClassConflict:
		base = jetstream.ErrKeyRevisionMismatch
	case ClassUnreachable:
		base = jetstream.ErrJetStreamNotEnabled
	case ClassNoQuorum:
		base = jetstream.ErrNoStreamResponse
	default:
		return fmt.Errorf("fleet hub, %s: %s", op, r.Err)
	}
	return fmt.Errorf("fleet hub, %s: %s: %w", op, r.Err, base)
}
