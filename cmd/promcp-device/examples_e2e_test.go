package main

import (
	"strings"
	"testing"
	"time"
)

// servesGood lints an example manifest (its output must hold lintOK and
// no warning), serves it on --sim from the real binary over stdio, and
// checks that every read_* is good with a value and that there are reads
// of them; it returns the session for the example's own checks.
func servesGood(t *testing.T, manifest, lintOK string, reads int) *session {
	t.Helper()
	out, _, code := runCLI(t, "lint", manifest)
	policy := strings.TrimSuffix(manifest[strings.LastIndex(manifest, "/")+1:], ".yml") + ".policy.yml: ok: policy"
	if code != 0 || !strings.Contains(out, lintOK) || !strings.Contains(out, policy) || strings.Contains(out, "warning") {
		t.Fatalf("lint %s: exit %d, %q", manifest, code, out)
	}
	s := stdioSession(t, protocols[0], "--manifest", manifest)
	n := 0
	for _, tool := range s.tools {
		if !strings.HasPrefix(tool.Name, "read_") {
			continue
		}
		n++
		r, isErr := s.call(tool.Name, map[string]any{})
		if isErr || r["quality"] != "good" || r["value"] == nil {
			t.Errorf("%s = %v, want a good value", tool.Name, r)
		}
	}
	if n != reads {
		t.Errorf("%d read_* tools, want %d", n, reads)
	}
	return s
}

// untilGood calls tool until its answer's quality is good or deadline
// passes, and returns the last answer: a device's first message travels
// through the broker on its own time (the deadline bounds a broker that
// never delivers; it is never asserted).
func (s *session) untilGood(tool string, deadline time.Time) map[string]any {
	s.t.Helper()
	for {
		body, _ := s.call(tool, map[string]any{})
		if body["quality"] == "good" || time.Now().After(deadline) {
			return body
		}
		time.Sleep(50 * time.Millisecond) // the next message is the broker's
	}
}

// canDoOffers asks can_do for intent and reports whether its candidates
// or its blocked actions hold capability from source; it returns the
// report for the failure message.
func (s *session) canDoOffers(intent map[string]any, capability, source string) (bool, map[string]any) {
	s.t.Helper()
	rep, _ := s.call("can_do", map[string]any{"intent": intent})
	cands, _ := rep["candidates"].([]any)
	blocked, _ := rep["blocked"].([]any)
	for _, c := range append(cands, blocked...) {
		if e, _ := c.(map[string]any); e["capability"] == capability && e["source"] == source {
			return true, rep
		}
	}
	return false, rep
}
