package gateway

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/promcp/promcp-device/capabilities"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/policy"
	"github.com/promcp/promcp-device/promcp"
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

func canDoDescription(set *capabilities.Set) string {
	var actions []string
	for _, c := range set.All() {
		if c.Do != nil {
			actions = append(actions, c.Do.Tool)
		}
	}
	return "Ask before you act: which actions match an intent, whether each is allowed right now, " +
		"within which constraints, with which side effects, and until when the answer holds (valid_until). " +
		"Touches no actuator. Give intent.semantic_tags, intent.action, intent.target, intent.value and/or intent.location. " +
		"Actions on this gateway: " + strings.Join(actions, ", ") + "."
}

// canDo answers the intent: every action scored, decided by the same policy
// evaluation that do_* runs, and sorted best first.
func (g *Gateway) canDo(ctx context.Context, req promcp.CanDoRequest) (promcp.CapabilityReport, error) {
	type match struct {
		c     *capabilities.Capability
		score float64
	}
	// An action that names a tool exactly asks about that tool only.
	named := ""
	if a := strings.TrimSpace(req.Intent.Action); a != "" {
		for _, c := range g.set.All() {
			if c.Do != nil && (a == c.Do.Tool || "do_"+a == c.Do.Tool) {
				named = c.Do.Tool
			}
		}
	}
	var matches []match
	for _, c := range g.set.All() {
		if c.Do == nil || named != "" && c.Do.Tool != named {
			continue
		}
		if s, ok := Score(req.Intent, c.Capability, c.Source); ok && s >= MinConfidence {
			matches = append(matches, match{c, s})
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

	rep := promcp.CapabilityReport{
		Context: promcp.ReportContext{RelatedReads: []string{}, CurrentObservations: map[string]promcp.Observation{}},
	}
	seen := map[string]bool{}
	related := func(tool string) {
		if !seen[tool] {
			seen[tool] = true
			rep.Context.RelatedReads = append(rep.Context.RelatedReads, tool)
		}
	}
	for _, m := range matches {
		c := m.c
		cur := c.Read(ctx)
		related(c.ReadTool())
		rep.Context.CurrentObservations[c.ReadTool()] = promcp.Observation{
			Value: cur.Value, Unit: promcp.Unit(c.Unit), Timestamp: cur.Time.UTC(), Quality: cur.Quality}
		for _, r := range g.set.All() {
			if r.Do == nil && relatedTo(r.Capability, c.Capability, req.Intent.Location) {
				related(r.ReadTool())
			}
		}

		pr := g.request(ctx, c, req.Intent.Value, req.Intent.Value != nil, cur)
		observe := func(tool string, r policy.Reading) {
			related(tool)
			var v any
			if r.Quality != promcp.QualityError {
				v = r.Value
			}
			if o, ok := g.set.Get(strings.TrimPrefix(tool, "read_")); ok {
				rep.Context.CurrentObservations[tool] = promcp.Observation{
					Value: v, Unit: promcp.Unit(o.Unit), Timestamp: r.Time.UTC(), Quality: r.Quality}
			}
		}
		for _, in := range pr.Inputs {
			observe(in.Name, in.Reading)
		}
		for tool, r := range pr.Readings {
			observe(tool, r)
		}
		view := g.opts.Reserver.Snapshot(g.claim(c, req.Intent.Value))
		view.Apply(&pr)
		d := g.policy.Evaluate(pr)
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
				d.Details = joinReason(d.Details, fmt.Sprintf("moving to the safe value (%s value=%s) is allowed now", c.Do.Tool, formatValue(c.Do.SafeValue)))
			}
		}
		if d.Allowed() || d.Permission == promcp.RequiresHumanApproval {
			var state *promcp.State
			if cur.Quality != promcp.QualityError {
				state = &promcp.State{Value: cur.Value, Unit: promcp.Unit(c.Unit), Timestamp: cur.Time.UTC(), Quality: cur.Quality}
			}
			rep.Candidates = append(rep.Candidates, promcp.Candidate{
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
			})
			continue
		}
		b := promcp.Blocked{Capability: c.Do.Tool, Source: c.Source, Permission: d.Permission, Reason: d.Reason}
		if d.Details != "" {
			b.Details = &d.Details
		}
		if !d.ValidUntil.IsZero() {
			t := d.ValidUntil.UTC()
			b.ValidUntil = &t
		}
		rep.Blocked = append(rep.Blocked, b)
	}
	unconfirmed := 0
	for _, c := range rep.Candidates {
		if c.RequiresConfirmation {
			unconfirmed++
		}
	}
	if unconfirmed > 0 {
		rep.Metadata.Note = fmt.Sprintf("%d of %d candidates have confidence below %.1f (requires_confirmation): "+
			"confirm with the user, or name the tool in intent.action, before calling do_*", unconfirmed, len(rep.Candidates), ConfirmedConfidence)
	}
	if len(matches) == 0 && namesNothing(req.Intent) {
		rep.Metadata.Note = "the intent names nothing, so it matches nothing: give intent.action, intent.target, intent.semantic_tags or intent.location"
	} else if len(matches) == 0 {
		var actions []string
		for _, c := range g.set.All() {
			if c.Do != nil {
				actions = append(actions, c.Do.Tool)
			}
		}
		rep.Metadata.Note = "no action on this gateway matches the intent; actions here: " + strings.Join(actions, ", ")
	}
	if req.Scope == "fleet" {
		note := "scope fleet: this gateway answers for itself only"
		if rep.Metadata.Note != "" {
			note = rep.Metadata.Note + "; " + note
		}
		rep.Metadata.Note = note
	}
	return rep, nil
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
	device := source[strings.LastIndex(source, "/")+1:]
	name := words(c.Name + " " + c.Do.Tool + " " + device)
	around := words(c.Location + " " + strings.Join(c.Tags, " "))
	vocab := append(slices.Clone(name), around...)
	var sum, weight float64
	add := func(w, s float64) { sum += w * s; weight += w }

	if a := strings.TrimSpace(intent.Action); a != "" {
		if a == c.Do.Tool || "do_"+a == c.Do.Tool {
			add(weightAction, 1)
		} else if ws := content(words(a)); len(ws) > 0 {
			add(weightAction, naming(ws, name, around))
		}
	}
	if t := strings.TrimSpace(intent.Target); t != "" {
		if t == c.Name || t == c.Do.Tool || t == device {
			add(weightTarget, 1)
		} else if ws := content(words(t)); len(ws) > 0 {
			add(weightTarget, naming(ws, name, around))
		}
	}
	if len(intent.SemanticTags) > 0 {
		var tags []string
		for _, t := range intent.SemanticTags {
			if w := strings.Join(words(t), "_"); w != "" {
				tags = append(tags, w)
			}
		}
		if len(tags) > 0 {
			add(weightTags, share(tags, vocab))
		}
	}
	if l := strings.ToLower(strings.TrimSpace(intent.Location)); l != "" {
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
		names = append(names, fmt.Sprintf("%s value=%s (since %s)", p.Action, formatValue(p.Value), p.Since.UTC().Format(time.RFC3339)))
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
