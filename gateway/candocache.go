package gateway

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/promcp/promcp-device/policy"
	"github.com/promcp/promcp-device/promcp"
	"github.com/promcp/promcp-device/server"
)

// An answer of can_do depends on the policy's state (the actuation
// history behind cooldowns and rate limits, the reservations in progress,
// the dead-man timers, the jobs' holds), on the readings it was decided on
// and on the clock. The gateway gives an answer again for the same
// question while none of that can have changed:
//
//   - the generation is the same: the gateway's own counter, moved when
//     an actuation begins and when it ends (every change of the history,
//     reservations and dead-man timers happens in between) and when a job
//     takes or releases its holds, and the set's count of sample changes
//     (capabilities.Set.Changes); while an actuation is in flight nothing
//     is reused or kept;
//   - the clock has not reached the answer's earliest valid_until, nor
//     the instant when a reading it used ages out (a fresh answer would
//     read again), nor a second after the answer was computed;
//   - the answer holds nothing that counts down with the clock (a
//     cooldown's "active for 42s more", a dead-man revert_at reckoned from
//     now) and no reading that failed.
//
// Only a gateway whose reservations are its own (policy.LocalReserver, no
// peers) reuses answers: a fleet's shared records change on other
// gateways. A reused answer is the one first given: equal to a fresh one
// in every field but valid_until, which is the first answer's (earlier
// than a fresh answer's, never later).

// reuseWindow bounds how long an answer is given again.
const reuseWindow = time.Second

// maxAnswers bounds the answers kept per scope; when full, they are
// dropped all at once.
const maxAnswers = 256

// generation is the state an answer was computed in; ok is false while an
// actuation is in flight.
type generation struct {
	state, samples uint64
	ok             bool
}

// stateGen counts the changes of the gateway's policy state (see above).
type stateGen struct {
	n        atomic.Uint64
	inFlight atomic.Int64
}

// begin marks an actuation in flight; end its end.
func (s *stateGen) begin() { s.inFlight.Add(1); s.n.Add(1) }
func (s *stateGen) end()   { s.n.Add(1); s.inFlight.Add(-1) }

// generation returns the gateway's current generation.
func (g *Gateway) generation() generation {
	gen := generation{state: g.gen.n.Load(), samples: g.set.Changes()}
	// In flight after the count was read: the count moved at its begin
	// already, so a generation read before that differs anyway.
	gen.ok = g.gen.inFlight.Load() == 0
	return gen
}

// reusable reports whether the gateway may reuse answers at all.
func (g *Gateway) reusable() bool {
	_, local := g.opts.Reserver.(*policy.LocalReserver)
	return local && g.opts.Peers == nil
}

// answerCache holds a scope's answers by question. Safe for concurrent use.
type answerCache struct {
	hits    atomic.Uint64 // answers given again (tests, benchmarks)
	mu      sync.Mutex
	gen     generation // the generation of every entry
	entries map[string]cachedAnswer
}

type cachedAnswer struct {
	rep        promcp.CapabilityReport
	at, before time.Time // computed at; reusable before
	// refreshAt is when the readings it was decided on are half their
	// TTL old (expiry.refreshAt), for GatewayOptions.RefreshAhead.
	refreshAt time.Time
}

// get returns the answer to key kept in gen, if still reusable at now,
// and when its readings are to be read ahead.
func (ac *answerCache) get(key string, gen generation, now time.Time) (rep promcp.CapabilityReport, refreshAt time.Time, ok bool) {
	ac.mu.Lock()
	defer ac.mu.Unlock()
	if ac.gen != gen {
		return promcp.CapabilityReport{}, time.Time{}, false
	}
	e, ok := ac.entries[key]
	if !ok || now.Before(e.at) || !now.Before(e.before) {
		return promcp.CapabilityReport{}, time.Time{}, false
	}
	ac.hits.Add(1)
	return e.rep, e.refreshAt, true
}

// put keeps rep for key in gen.
func (ac *answerCache) put(key string, gen generation, rep promcp.CapabilityReport, at, before, refreshAt time.Time) {
	ac.mu.Lock()
	defer ac.mu.Unlock()
	if ac.gen != gen || len(ac.entries) >= maxAnswers {
		ac.gen, ac.entries = gen, map[string]cachedAnswer{}
	}
	ac.entries[key] = cachedAnswer{rep: rep, at: at, before: before, refreshAt: refreshAt}
}

// answerKey is the question of req as asked by the caller of ctx: the
// request and the caller's role.
func (s *scope) answerKey(ctx context.Context, req promcp.CanDoRequest) (string, bool) {
	role := server.CallerFrom(ctx).Role
	if role == "" {
		role = s.g.opts.DefaultRole
	}
	q, err := json.Marshal(struct {
		Intent  promcp.Intent
		Scope   string
		Devices []string
		Query   *promcp.PhysMCPQuery
		Role    string
	}{req.Intent, req.Scope, req.ScopeDevices, req.Query, role})
	return string(q), err == nil
}

// reuseBefore returns until when rep, computed at now from readings that
// age out at expiry, may be given again; ok is false when it may not be
// (see above).
func (s *scope) reuseBefore(rep promcp.CapabilityReport, now, expiry time.Time) (time.Time, bool) {
	until := now.Add(reuseWindow)
	if !expiry.IsZero() {
		until = minTime(until, expiry)
	}
	for _, c := range rep.Candidates {
		if c.RevertAt != nil {
			return until, false
		}
		until = minTime(until, c.ValidUntil)
	}
	for _, b := range rep.Blocked {
		if b.Permission == promcp.CooldownActive {
			return until, false
		}
		if b.ValidUntil != nil {
			until = minTime(until, *b.ValidUntil)
		}
	}
	return until, until.After(now)
}

// copyReport returns rep with its own top-level slices and map, so that
// the caller may change them without changing the answer kept.
func copyReport(rep promcp.CapabilityReport) promcp.CapabilityReport {
	rep.Candidates = slices.Clone(rep.Candidates)
	rep.Blocked = slices.Clone(rep.Blocked)
	rep.Context.RelatedReads = slices.Clone(rep.Context.RelatedReads)
	rep.Context.CurrentObservations = maps.Clone(rep.Context.CurrentObservations)
	return rep
}

// expiry tracks the earliest instant at which a reading an answer used
// ages out; failed is set when one failed (such an answer is not reused).
type expiry struct {
	at     time.Time
	ttl    time.Duration // the shortest TTL of the readings
	failed bool
}

func (e *expiry) reading(r policy.Reading) {
	if r.Quality == promcp.QualityError {
		e.failed = true
		return
	}
	t := r.Time.Add(r.TTL)
	if e.at.IsZero() || t.Before(e.at) {
		e.at = t
	}
	if r.TTL > 0 && (e.ttl == 0 || r.TTL < e.ttl) {
		e.ttl = r.TTL
	}
}

// refreshAt is when the readings are read ahead, with RefreshAhead: when
// the first to age out is half the shortest TTL from it; zero for none.
func (e *expiry) refreshAt() time.Time {
	if e.at.IsZero() || e.ttl == 0 {
		return time.Time{}
	}
	return e.at.Add(-e.ttl / 2)
}

// request notes every reading of pr.
func (e *expiry) request(pr policy.Request) {
	if pr.Current != nil {
		e.reading(*pr.Current)
	}
	for _, in := range pr.Inputs {
		e.reading(in.Reading)
	}
	for _, r := range pr.Readings {
		e.reading(r)
	}
}
