package gateway

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/promcp/promcp-device/capabilities"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/policy"
	"github.com/promcp/promcp-device/promcp"
	"github.com/promcp/promcp-device/server"
)

// MinConfidence is the match score below which an action is not reported.
const MinConfidence = 0.3

// Weights of the intent's fields in the confidence score.
const (
	weightAction   = 0.35
	weightTarget   = 0.25
	weightTags     = 0.30
	weightLocation = 0.10
)

func canDoDescription(caps []*capabilities.Capability) string {
	var actions []string
	for _, c := range caps {
		if c.Do != nil {
			actions = append(actions, c.Do.Tool)
		}
	}
	here := "Actions on this gateway: " + strings.Join(actions, ", ") + "."
	if len(actions) == 0 {
		here = "This endpoint serves readings only: no action matches."
	}
	return "Ask before you act: which actions match an intent, whether each is allowed right now, " +
		"within which constraints, with which side effects, and until when the answer holds (valid_until). " +
		"Touches no actuator. Give intent.semantic_tags, intent.action, intent.target, intent.value and/or intent.location. " +
		here
}

// match is an action that an intent matches, with its score.
type match struct {
	c     *capabilities.Capability
	score float64
}

// scope is what a can_do answers for: the capabilities of one surface
// (the whole gateway, or a tool group). Its report names only their tools.
type scope struct {
	g     *Gateway
	caps  []*capabilities.Capability
	reads map[string]bool // the read_* tools of caps
	index *index          // built with the scope: no call scans every capability
	// answers are the answers given, reused while nothing they depend on
	// can have changed (see answerCache).
	answers answerCache
	// refreshing is set while a read-ahead runs (refreshAhead).
	refreshing atomic.Bool
}

func newScope(g *Gateway, caps []*capabilities.Capability) *scope {
	s := &scope{g: g, caps: caps, reads: map[string]bool{}, index: newIndex(caps)}
	for _, c := range caps {
		s.reads[c.ReadTool()] = true
	}
	return s
}

// canDo answers the intent: every action of the scope scored, decided by
// the same policy evaluation that do_* runs, and sorted best first. The
// same question is answered again from the answer kept while nothing it
// depends on can have changed (see answerCache).
func (s *scope) canDo(ctx context.Context, req promcp.CanDoRequest) (promcp.CapabilityReport, error) {
	if rep, ok := s.canStart(ctx, req); ok {
		return rep, nil // a job's progress decides it: not kept
	}
	key, keyed := s.answerKey(ctx, req)
	keyed = keyed && s.g.reusable()
	var gen generation
	if keyed {
		gen = s.g.generation()
		now := s.g.srv.Clock().Now()
		if rep, refreshAt, ok := s.answers.get(key, gen, now); gen.ok && ok {
			s.refreshAhead(req, refreshAt, now)
			return copyReport(rep), nil
		}
	}
	now := s.g.srv.Clock().Now()
	rep, exp := s.answer(ctx, req)
	if keyed && gen.ok && !exp.failed && s.g.generation() == gen {
		if before, ok := s.reuseBefore(rep, now, exp.at); ok {
			// The server keeps this answer's encoding in its Memo: the
			// Memo goes with the answer kept, and no other.
			rep.Memo = &promcp.Memo{}
			s.answers.put(key, gen, copyReport(rep), now, before, exp.refreshAt())
		}
	}
	s.refreshAhead(req, exp.refreshAt(), now)
	return rep, nil
}

// answer computes the answer to req, and the expiry of the readings it
// used.
func (s *scope) answer(ctx context.Context, req promcp.CanDoRequest) (promcp.CapabilityReport, expiry) {
	matches := s.matches(req.Intent)
	if len(req.ScopeDevices) > 0 {
		matches = slices.DeleteFunc(matches, func(m match) bool { return !slices.Contains(req.ScopeDevices, deviceID(m.c)) })
	}
	s.prefetch(ctx, matches)
	b := &reportBuilder{g: s.g, s: s, seen: map[string]bool{}, rep: promcp.CapabilityReport{
		Context: promcp.ReportContext{RelatedReads: []string{}, CurrentObservations: map[string]promcp.Observation{}},
	}}
	for _, m := range matches {
		b.add(ctx, m, req.Intent)
	}
	rep, exp := b.rep, b.exp
	rep.Metadata.Note = s.note(rep, len(matches), req)
	rep.Context.Location = req.Intent.Location
	if q := req.Query; q != nil {
		var cur capabilities.Reading
		found := false
		for _, c := range s.caps {
			if c.Name == q.Target {
				cur, found = c.Read(ctx), true
				exp.reading(policy.Reading{Time: cur.Time, Quality: cur.Quality, TTL: c.TTL()})
				break
			}
		}
		rep.Context.ImpliedTarget = q.ImpliedTarget(cur.Value, found && cur.Quality != promcp.QualityError && cur.Value != nil)
	}
	return rep, exp
}

// prefetch reads every capability the matched actions are decided on (the
// actuator's own reading, its depends_on and its interlocks) before the
// decisions, which then find them in the cache: buses in parallel, one
// read after another on each bus (a bus serves one transaction at a time
// anyway). Without it a broad intent read each matched action's sensors
// in turn: 400 SHT3x conversions of 15 ms one after another at 1,000
// capabilities, longer than their 2 s TTL, so the cache never stayed
// warm. Reads already fresh cost a cache lookup; concurrent calls share
// the transactions in flight (the sampler).
func (s *scope) prefetch(ctx context.Context, matches []match) {
	if len(matches) < 2 {
		return // nothing to overlap
	}
	byBus := s.decidedOn(matches)
	if len(byBus) < 2 {
		return // one bus: the decisions read it in turn all the same
	}
	readBuses(ctx, byBus, func(c *capabilities.Capability) time.Duration { return c.TTL() })
}

// decidedOn returns, by bus, every capability the matched actions are
// decided on: the actuator's own reading, its depends_on and its
// interlocks.
func (s *scope) decidedOn(matches []match) map[string][]*capabilities.Capability {
	seen := make(map[*capabilities.Capability]bool, 2*len(matches))
	byBus := map[string][]*capabilities.Capability{}
	add := func(c *capabilities.Capability) {
		if !seen[c] {
			seen[c] = true
			byBus[c.Binding.Bus] = append(byBus[c.Binding.Bus], c)
		}
	}
	var rules map[string]*manifests.ActionPolicy
	if pol := s.g.opts.Policy; pol != nil {
		rules = pol.Actions
	}
	for _, m := range matches {
		add(m.c)
		for _, name := range m.c.Do.DependsOn {
			if dep, ok := s.g.set.Get(name); ok {
				add(dep)
			}
		}
		if r := rules[m.c.Do.Tool]; r != nil {
			for _, il := range r.Interlocks {
				if other, ok := s.g.set.Get(strings.TrimPrefix(il.Read, "read_")); ok {
					add(other)
				}
			}
		}
	}
	return byBus
}

// readBuses reads every capability of byBus, accepting a sample younger
// than maxAge of it: buses in parallel, one read after another on each.
func readBuses(ctx context.Context, byBus map[string][]*capabilities.Capability, maxAge func(*capabilities.Capability) time.Duration) {
	var wg sync.WaitGroup
	for _, caps := range byBus {
		wg.Go(func() {
			for _, c := range caps {
				if ctx.Err() != nil {
					return
				}
				c.ReadWithin(ctx, maxAge(c))
			}
		})
	}
	wg.Wait()
}

// refreshAhead reads again, in the background, the readings older than
// half their TTL that req's answer is decided on, once they are (from
// refreshAt; zero: never), with GatewayOptions.RefreshAhead: so that the
// answer after them finds fresh readings in the cache instead of waiting
// for the bus (at 1,000 capabilities a broad intent waits for 400
// conversions when its readings age out). One read-ahead per scope at a
// time, only while questions are asked; it ends with the gateway (Close).
func (s *scope) refreshAhead(req promcp.CanDoRequest, refreshAt, now time.Time) {
	g := s.g
	if !g.opts.RefreshAhead || refreshAt.IsZero() || now.Before(refreshAt) || !s.refreshing.CompareAndSwap(false, true) {
		return
	}
	g.refreshMu.Lock()
	defer g.refreshMu.Unlock()
	if g.bgCtx == nil || g.refreshEnd {
		s.refreshing.Store(false)
		return
	}
	g.refreshes.Add(1)
	go func() {
		defer g.refreshes.Done()
		defer s.refreshing.Store(false)
		matches := s.matches(req.Intent)
		if len(req.ScopeDevices) > 0 {
			matches = slices.DeleteFunc(matches, func(m match) bool { return !slices.Contains(req.ScopeDevices, deviceID(m.c)) })
		}
		readBuses(g.bgCtx, s.decidedOn(matches), func(c *capabilities.Capability) time.Duration { return c.TTL() / 2 })
	}()
}

// matches scores the actions intent can match (the index's candidates)
// against it, keeps those at or above MinConfidence, best first, manifest
// order among equals. An action that names a tool exactly asks about that
// tool only.
func (s *scope) matches(intent promcp.Intent) []match {
	ix := s.index
	cands := ix.candidates(intent)
	if a := strings.TrimSpace(intent.Action); a != "" {
		// The last action in manifest order that a names, as when every
		// action was scanned.
		named := slices.Concat(ix.byName[a], ix.byName["do_"+a])
		named = slices.DeleteFunc(named, func(i int) bool { t := ix.actions[i].c.Do.Tool; return t != a && t != "do_"+a })
		if len(named) > 0 {
			tool := ix.actions[slices.Max(named)].c.Do.Tool
			cands = slices.DeleteFunc(cands, func(i int) bool { return ix.actions[i].c.Do.Tool != tool })
		}
	}
	sc := newScoring(intent)
	var matches []match
	for _, i := range cands {
		a := &ix.actions[i]
		if s, ok := sc.score(a.terms); ok && s >= MinConfidence {
			matches = append(matches, match{a.c, s})
		}
	}
	slices.SortStableFunc(matches, func(a, b match) int {
		switch {
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		}
		return 0
	})
	return matches
}

// reportBuilder gathers a can_do report: candidates, blocked actions, and
// the readings they depend on.
type reportBuilder struct {
	g    *Gateway
	s    *scope
	rep  promcp.CapabilityReport
	seen map[string]bool
	exp  expiry // of the readings the decisions used
}

// related lists tool among the related reads, once, when the scope serves
// it: a group's report names no tool of another group.
func (b *reportBuilder) related(tool string) {
	if b.s.reads[tool] && !b.seen[tool] {
		b.seen[tool] = true
		b.rep.Context.RelatedReads = append(b.rep.Context.RelatedReads, tool)
	}
}

// observe adds a reading the decision used to the report's context.
func (b *reportBuilder) observe(tool string, r policy.Reading) {
	if !b.s.reads[tool] {
		return // decided on, but not served here
	}
	b.related(tool)
	var v any
	if r.Quality != promcp.QualityError {
		v = r.Value
	}
	if o, ok := b.g.set.Get(strings.TrimPrefix(tool, "read_")); ok {
		b.rep.Context.CurrentObservations[tool] = promcp.Observation{
			Value: v, Unit: promcp.Unit(o.Unit), Timestamp: r.Time.UTC(), Quality: r.Quality}
	}
}

// add decides matched action m as do_* would now and reports it as a
// candidate or as blocked, with the readings around it.
func (b *reportBuilder) add(ctx context.Context, m match, intent promcp.Intent) {
	g, c := b.g, m.c
	cur := c.Read(ctx)
	b.related(c.ReadTool())
	b.rep.Context.CurrentObservations[c.ReadTool()] = promcp.Observation{
		Value: cur.Value, Unit: promcp.Unit(c.Unit), Timestamp: cur.Time.UTC(), Quality: cur.Quality}
	for _, pos := range b.s.index.related(c) {
		if r := b.s.caps[pos]; relatedTo(r.Capability, c.Capability, intent.Location) {
			b.related(r.ReadTool())
		}
	}
	pr := g.request(ctx, c, intent.Value, intent.Value != nil, cur)
	b.exp.request(pr)
	for _, in := range pr.Inputs {
		b.observe(in.Name, in.Reading)
	}
	for tool, r := range pr.Readings {
		b.observe(tool, r)
	}
	d := g.decide(ctx, c, intent.Value, pr, cur)
	if d.Allowed() || d.Permission == promcp.RequiresHumanApproval {
		cand := candidate(m, cur, d)
		hist := pr // the history of actuations is the reservations' view
		g.opts.Reserver.Snapshot(g.claim(c, intent.Value)).Apply(&hist)
		physmcpFields(&cand, m, cur, hist, intent)
		cand.RevertAt = g.revertAt(c)
		b.rep.Candidates = append(b.rep.Candidates, cand)
		return
	}
	bl := promcp.Blocked{Capability: c.Do.Tool, Source: c.Source, Permission: d.Permission, Reason: d.Reason, DeviceID: deviceID(c)}
	if d.Details != "" {
		bl.Details = &d.Details
	}
	if !d.ValidUntil.IsZero() {
		t := d.ValidUntil.UTC()
		bl.ValidUntil = &t
	}
	b.rep.Blocked = append(b.rep.Blocked, bl)
}

// quorumChecker is implemented by a Reserver whose records live in a
// replicated store (fleet/shared): Check gives do_*'s partition_no_quorum
// answer when the store cannot commit the claim now; ok is true otherwise.
type quorumChecker interface {
	Check(ctx context.Context, c policy.Claim) (d policy.Decision, ok bool)
}

// decide evaluates request pr for action c as do_* would, against the
// reservations in progress, and says whether the safe direction stays
// open when the action is not allowed.
func (g *Gateway) decide(ctx context.Context, c *capabilities.Capability, value any, pr policy.Request, cur capabilities.Reading) policy.Decision {
	view := g.opts.Reserver.Snapshot(g.claim(c, value))
	view.Apply(&pr)
	d := g.policy.Evaluate(pr)
	if hd, held := g.holdRefusal(c, "", value, pr.Now); held && d.Allowed() {
		d = hd // do_* would be refused: a job holds the actuator
	}
	if ck, ok := g.opts.Reserver.(quorumChecker); ok && (d.Allowed() || d.Permission == promcp.RequiresHumanApproval) {
		// A fleet reserver's Snapshot cannot refuse: ask whether do_*
		// could commit its shared record now (partition_no_quorum).
		if qd, ok := ck.Check(ctx, g.claim(c, value)); !ok {
			return qd
		}
	}
	if view.Held() {
		if d.Allowed() || d.Permission == promcp.RequiresHumanApproval {
			// do_* would wait for the action in progress, then decide again.
			d.Reason = joinReason(d.Reason, inProgress(view)+": do_* waits for it to finish, then decides again on fresh readings")
		}
		// The answer changes when the action in progress ends, which
		// may be soon (a failed write releases its reservation).
		d.ValidUntil = minTime(d.ValidUntil, pr.Now.Add(time.Second))
	}
	if !d.Allowed() && c.Do.SafeValue != nil && !pr.IsSafe() && !strings.Contains(d.Details, "safe value") {
		// Say whether the safe direction stays open.
		sr := g.request(ctx, c, c.Do.SafeValue, true, cur)
		view.Apply(&sr)
		if sd := g.policy.Evaluate(sr); sd.Allowed() {
			d.Details = joinReason(d.Details, fmt.Sprintf("moving to the safe value (%s value=%s) is allowed now", c.Do.Tool, server.FormatValue(c.Do.SafeValue)))
		}
	}
	return d
}

// candidate is the report entry of an action the caller may run now (or
// with a human's approval).
func candidate(m match, cur capabilities.Reading, d policy.Decision) promcp.Candidate {
	c := m.c
	var state *promcp.State
	if cur.Quality != promcp.QualityError {
		state = &promcp.State{Value: cur.Value, Unit: promcp.Unit(c.Unit), Timestamp: cur.Time.UTC(), Quality: cur.Quality}
	}
	return promcp.Candidate{
		Capability:           c.Do.Tool,
		Source:               c.Source,
		Confidence:           m.score,
		Permission:           d.Permission,
		CurrentState:         state,
		Constraints:          constraints(c.Capability),
		SideEffects:          nonNil(c.Do.SideEffects),
		ValidUntil:           d.ValidUntil.UTC(),
		EstimatedLatencyMS:   ceilMS(c.Latency()),
		Reason:               d.Reason,
		RequiresConfirmation: m.score < ConfirmedConfidence,
	}
}

// physmcpFields fills a candidate's PhysMCP extensions: the device (the
// gateway that serves it), why it matched, its rate limit and what is left
// of it, and how long the device takes to apply a write.
func physmcpFields(cand *promcp.Candidate, m match, cur capabilities.Reading, pr policy.Request, intent promcp.Intent) {
	c := m.c
	cand.DeviceID = deviceID(c)
	cand.MatchReasons = matchReasons(intent, c.Capability, cur)
	if pr.Rules != nil && pr.Rules.RateLimit != nil {
		rl := pr.Rules.RateLimit
		used := 0
		for _, t := range pr.History {
			if t.After(pr.Now.Add(-rl.Per)) && !t.After(pr.Now) {
				used++
			}
		}
		cand.RateLimit = &promcp.CandidateRateLimit{Max: rateString(*rl), CurrentWindowRemaining: max(rl.Max-used, 0)}
	}
	if c.Do.Settle > 0 {
		cand.EstimatedEffectLagMS = ceilMS(c.Do.Settle)
	}
}

// deviceID is the PhysMCP device id of c's action: the gateway that serves
// it (the first element of its source).
func deviceID(c *capabilities.Capability) string {
	id, _, _ := strings.Cut(c.Source, "/")
	return id
}

// rateString writes a rate limit as PhysMCP does: "6/hour", "1/min".
func rateString(rl manifests.RateLimit) string {
	unit := map[time.Duration]string{time.Second: "sec", time.Minute: "min", time.Hour: "hour", 24 * time.Hour: "day"}[rl.Per]
	if unit == "" {
		unit = rl.Per.String()
	}
	return fmt.Sprintf("%d/%s", rl.Max, unit)
}

// matchReasons says in PhysMCP's words why an action matched the intent:
// the tags it shares, the location, the tool or target named, and whether
// its device answers now.
func matchReasons(intent promcp.Intent, c manifests.Capability, cur capabilities.Reading) []string {
	var out []string
	vocab := words(c.Name + " " + c.Location + " " + strings.Join(c.Tags, " "))
	var tags []string
	for _, t := range intent.SemanticTags {
		w := strings.Join(words(t), "_")
		if w != "" && share([]string{w}, vocab) == 1 {
			tags = append(tags, t)
		}
	}
	if len(tags) > 0 {
		out = append(out, "tag_overlap: "+strings.Join(tags, ", "))
	}
	if l := strings.TrimSpace(intent.Location); l != "" && strings.EqualFold(c.Location, l) {
		out = append(out, "location_match: "+c.Location)
	}
	if a := strings.TrimSpace(intent.Action); a == c.Do.Tool || "do_"+a == c.Do.Tool {
		out = append(out, "action_match: "+c.Do.Tool)
	}
	if t := strings.TrimSpace(intent.Target); t != "" && (t == c.Name || t == c.Do.Tool) {
		out = append(out, "target_match: "+t)
	}
	if cur.Quality != promcp.QualityError {
		out = append(out, "currently_online")
	}
	return out
}

// note is the report's metadata note: candidates to confirm, an intent
// that matched nothing (and why), and the scope this gateway answers for.
func (s *scope) note(rep promcp.CapabilityReport, matched int, req promcp.CanDoRequest) string {
	note := ""
	unconfirmed := 0
	for _, c := range rep.Candidates {
		if c.RequiresConfirmation {
			unconfirmed++
		}
	}
	if unconfirmed > 0 {
		note = fmt.Sprintf("%d of %d candidates have confidence below %.1f (requires_confirmation): "+
			"confirm with the user, or name the tool in intent.action, before calling do_*", unconfirmed, len(rep.Candidates), ConfirmedConfidence)
	}
	if matched == 0 && namesNothing(req.Intent) {
		note = "the intent names nothing, so it matches nothing: give intent.action, intent.target, intent.semantic_tags or intent.location"
	} else if matched == 0 {
		var actions []string
		for _, c := range s.caps {
			if c.Do != nil {
				actions = append(actions, c.Do.Tool)
			}
		}
		note = "no action on this gateway matches the intent; actions here: " + strings.Join(actions, ", ")
		if len(actions) == 0 {
			note = "no action on this endpoint matches the intent: it serves readings only"
		}
	}
	if req.Scope == "fleet" {
		scope := "scope fleet: this gateway answers for itself only"
		if note != "" {
			scope = note + "; " + scope
		}
		note = scope
	}
	return note
}

// ConfirmedConfidence is the score from which a candidate counts as
// confirmed: the spec says a score below 0.7 SHOULD trigger a confirmation
// step before do_* runs, so such candidates carry requires_confirmation.
const ConfirmedConfidence = 0.7

// Score is the confidence that capability c (an action) is what intent
// asks for, from 0 to 1. Each field the intent gives is scored from 0 to 1
// and the scores are averaged with weights action 0.35, target 0.25,
// semantic_tags 0.30 and location 0.10 over the fields given:
//
//   - action: 1 when it names the tool (with or without "do_"), else the
//     mean of its words' scores (filler such as "the", "turn", "open" left
//     out): 1 for a word that names the actuator (its capability name,
//     tool name or device), 0.5 for one found only in its context (its
//     location or tags), 0 otherwise;
//   - target: 1 when it names the capability, tool or device, else the
//     mean of its words' scores as for action;
//   - semantic_tags: the share of tags found in the vocabulary (name and
//     context alike);
//   - location: 1 when equal to the capability's location, 0.5 when the
//     capability has none (it serves every location).
//
// A capability in another location than the one asked is no match (ok is
// false), and so is every capability for an intent that names nothing (no
// field given, or only filler words). Words match when equal or when one is
// a prefix of the other of at least four letters ("heat" matches "heater"
// and "heating").
func Score(intent promcp.Intent, c manifests.Capability, source string) (score float64, ok bool) {
	return newScoring(intent).score(newTerms(c, source))
}

// scoring is an intent prepared for Score: its words split once for every
// action it is scored against.
type scoring struct {
	action, target, location string
	actionWords, targetWords []string // content words
	tags                     []string // each tag's words joined by "_"
}

func newScoring(intent promcp.Intent) scoring {
	sc := scoring{action: strings.TrimSpace(intent.Action), target: strings.TrimSpace(intent.Target),
		location: strings.ToLower(strings.TrimSpace(intent.Location))}
	sc.actionWords, sc.targetWords = content(words(sc.action)), content(words(sc.target))
	for _, t := range intent.SemanticTags {
		if w := strings.Join(words(t), "_"); w != "" {
			sc.tags = append(sc.tags, w)
		}
	}
	return sc
}

// score is Score for the action of t.
func (sc scoring) score(t terms) (score float64, ok bool) {
	c := t.c
	var sum, weight float64
	add := func(w, s float64) { sum += w * s; weight += w }

	if a := sc.action; a != "" {
		if a == c.Do.Tool || "do_"+a == c.Do.Tool {
			add(weightAction, 1)
		} else if len(sc.actionWords) > 0 {
			add(weightAction, naming(sc.actionWords, t.name, t.around))
		}
	}
	if tg := sc.target; tg != "" {
		if tg == c.Name || tg == c.Do.Tool || tg == t.device {
			add(weightTarget, 1)
		} else if len(sc.targetWords) > 0 {
			add(weightTarget, naming(sc.targetWords, t.name, t.around))
		}
	}
	if len(sc.tags) > 0 {
		add(weightTags, share(sc.tags, t.vocab))
	}
	if l := sc.location; l != "" {
		switch {
		case c.Location == "":
			add(weightLocation, 0.5)
		case strings.EqualFold(c.Location, l):
			add(weightLocation, 1)
		default:
			return 0, false
		}
	}
	if weight == 0 {
		return 0, false
	}
	return math.Round(sum/weight*100) / 100, true
}

// namesNothing reports whether intent gives no field Score can use: no
// action, target, tag or location beyond filler words.
func namesNothing(intent promcp.Intent) bool {
	for _, t := range intent.SemanticTags {
		if len(words(t)) > 0 {
			return false
		}
	}
	return len(content(words(intent.Action))) == 0 && len(content(words(intent.Target))) == 0 &&
		strings.TrimSpace(intent.Location) == ""
}

// naming scores the words of an action or target phrase: the mean of 1 for
// each word naming the actuator, 0.5 for each found only around it (its
// location and tags).
func naming(ws, name, around []string) float64 {
	var s float64
	for _, w := range ws {
		switch {
		case slices.ContainsFunc(name, func(v string) bool { return wordMatch(w, v) }):
			s++
		case slices.ContainsFunc(around, func(v string) bool { return wordMatch(w, v) }):
			s += 0.5
		}
	}
	return s / float64(len(ws))
}

// relatedTo reports whether read-only capability r informs action a: same
// location (or the one asked) and a shared tag.
func relatedTo(r, a manifests.Capability, location string) bool {
	if location != "" && r.Location != "" && !strings.EqualFold(r.Location, location) {
		return false
	}
	if a.Location != "" && r.Location != "" && r.Location != a.Location {
		return false
	}
	for _, t := range r.Tags {
		if slices.Contains(a.Tags, t) {
			return true
		}
	}
	return false
}

// stopWords are filler: articles, prepositions and the verbs of acting
// ("open", "start", "increase"), which say what to do with an actuator but
// not which one (the value says what to do).
var stopWords = map[string]bool{"a": true, "an": true, "the": true, "to": true, "of": true, "in": true,
	"on": true, "off": true, "do": true, "set": true, "turn": true, "switch": true, "make": true,
	"please": true, "and": true, "at": true, "for": true, "it": true, "up": true, "down": true,
	"open": true, "close": true, "start": true, "stop": true, "enable": true, "disable": true,
	"increase": true, "decrease": true, "raise": true, "lower": true, "change": true, "adjust": true}

func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

func content(ws []string) []string {
	return slices.DeleteFunc(ws, func(w string) bool { return stopWords[w] })
}

// share is the fraction of words found in vocab. A multi-word tag
// ("air_temperature") counts when all its parts are found.
func share(ws, vocab []string) float64 {
	if len(ws) == 0 {
		return 0
	}
	found := 0
	for _, w := range ws {
		all := true
		for _, part := range strings.Split(w, "_") {
			if !slices.ContainsFunc(vocab, func(v string) bool { return wordMatch(part, v) }) {
				all = false
				break
			}
		}
		if all {
			found++
		}
	}
	return float64(found) / float64(len(ws))
}

func wordMatch(a, b string) bool {
	if a == b {
		return true
	}
	if len(a) >= 4 && len(b) >= 4 {
		return strings.HasPrefix(a, b) || strings.HasPrefix(b, a)
	}
	return false
}

func constraints(c manifests.Capability) promcp.Constraints {
	k := c.Do.Constraints
	out := promcp.Constraints{Min: k.Min, Max: k.Max, Step: k.Step, Unit: promcp.Unit(c.Unit), EnumValues: slices.Clone(k.Enum)}
	if c.Type == manifests.TypeBoolean {
		out.EnumValues = []string{"true", "false"}
	}
	if out.EnumValues == nil {
		out.EnumValues = []string{}
	}
	return out
}

// inProgress names the reservations held on a unit.
func inProgress(v policy.View) string {
	var names []string
	for _, p := range v.Pending {
		names = append(names, fmt.Sprintf("%s value=%s (since %s)", p.Action, server.FormatValue(p.Value), p.Since.UTC().Format(time.RFC3339)))
	}
	return "an action on this actuator or one tied to it is in progress: " + strings.Join(names, ", ")
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func ceilMS(d time.Duration) int64 {
	ms := int64(math.Ceil(float64(d) / float64(time.Millisecond)))
	return max(ms, 1)
}
