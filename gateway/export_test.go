package gateway

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/promcp/promcp-device/promcp"
)

// Units is units, for the external tests: the actions each action's
// do_* reserves together with.
var Units = units

// DeadManDue is the armed dead-man timer of tool: when it falls due.
func DeadManDue(g *Gateway, tool string) (at time.Time, armed bool) {
	if g.deadman == nil {
		return time.Time{}, false
	}
	t, ok := g.deadman.Due(tool)
	return t.At, ok
}

// CanDoAndFresh asks Serve's can_do scope req twice: as can_do does (an
// answer kept may be given again) and afresh (nothing kept is used or
// kept); reused is true when the first was an answer given again.
func CanDoAndFresh(ctx context.Context, g *Gateway, req promcp.CanDoRequest) (first, fresh promcp.CapabilityReport, reused bool) {
	s := g.jobsScope
	hits := s.answers.hits.Load()
	first, _ = s.canDo(ctx, req)
	reused = s.answers.hits.Load() > hits
	fresh, _ = s.answer(ctx, req)
	return first, fresh, reused
}

// CanDoMatches returns the tools can_do's index matches intent to, best
// first, and those a scan of every action scores: the index must find
// the same.
func CanDoMatches(g *Gateway, intent promcp.Intent) (indexed, scanned []string) {
	s := g.jobsScope
	for _, m := range s.matches(intent) {
		indexed = append(indexed, fmt.Sprintf("%s=%.2f", m.c.Do.Tool, m.score))
	}
	var all []match
	for _, c := range s.caps {
		if c.Do == nil {
			continue
		}
		if sc, ok := Score(intent, c.Capability, c.Source); ok && sc >= MinConfidence {
			all = append(all, match{c, sc})
		}
	}
	named := ""
	if a := strings.TrimSpace(intent.Action); a != "" {
		for _, c := range s.caps {
			if c.Do != nil && (a == c.Do.Tool || "do_"+a == c.Do.Tool) {
				named = c.Do.Tool
			}
		}
	}
	slices.SortStableFunc(all, func(a, b match) int { return cmp.Compare(b.score, a.score) })
	for _, m := range all {
		if named == "" || m.c.Do.Tool == named {
			scanned = append(scanned, fmt.Sprintf("%s=%.2f", m.c.Do.Tool, m.score))
		}
	}
	return indexed, scanned
}

// CanDoRelated returns the read-only capabilities related to action (by
// read tool) as the index finds them and as a scan of every capability
// does.
func CanDoRelated(g *Gateway, action, location string) (indexed, scanned []string) {
	s := g.jobsScope
	a, _ := g.set.Get(action)
	for _, pos := range s.index.related(a) {
		if r := s.caps[pos]; relatedTo(r.Capability, a.Capability, location) {
			indexed = append(indexed, r.ReadTool())
		}
	}
	for _, r := range s.caps {
		if r.Do == nil && relatedTo(r.Capability, a.Capability, location) {
			scanned = append(scanned, r.ReadTool())
		}
	}
	return indexed, scanned
}

// CanDoHits counts the answers Serve's can_do scope gave again.
func CanDoHits(g *Gateway) uint64 { return g.jobsScope.answers.hits.Load() }

// CanDoFresh is the answer Serve's can_do scope gives req now, computed
// afresh: nothing kept is used or kept.
func CanDoFresh(ctx context.Context, g *Gateway, req promcp.CanDoRequest) promcp.CapabilityReport {
	rep, _ := g.jobsScope.answer(ctx, req)
	return rep
}

// WaitRefreshes waits for can_do's reads ahead in flight (RefreshAhead).
func WaitRefreshes(g *Gateway) { g.refreshes.Wait() }
