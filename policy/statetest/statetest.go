// Package statetest is the conformance suite every [policy.State] passes:
// the memory state and the bbolt state run the same tests, and a new
// implementation (a fleet's replicated store) calls [Run] from its own
// tests.
//
// Run checks what cooldowns and rate limits rely on: History returns each
// recorded actuation of one action at or after since, none of another
// action's; a day of history is kept; concurrent callers lose nothing.
// What only a durable state does (surviving a restart) stays in that
// implementation's own tests.
package statetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/promcp/promcp-device/policy"
)

// Now is the time the suite records around.
var Now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// Run runs the suite on states that open returns: each empty, and closed
// when the test ends.
func Run(t *testing.T, open func(t *testing.T) policy.State) {
	t.Run("HistorySince", func(t *testing.T) { historySince(t, open(t)) })
	t.Run("KeepsADay", func(t *testing.T) { keepsADay(t, open(t)) })
	t.Run("Concurrent", func(t *testing.T) { concurrent(t, open(t)) })
}

func historySince(t *testing.T, s policy.State) {
	if h := s.History("do_a", Now.Add(-time.Hour)); len(h) != 0 {
		t.Fatalf("History of an empty state = %v, want none", h)
	}
	at := []time.Time{Now.Add(-2 * time.Hour), Now.Add(-time.Hour), Now.Add(-time.Minute), Now}
	for _, a := range at {
		s.Record("do_a", a)
	}
	s.Record("do_b", Now.Add(-30*time.Second))
	for _, tc := range []struct {
		since time.Time
		want  []time.Time
	}{
		{Now.Add(-3 * time.Hour), at},
		{Now.Add(-time.Hour), at[1:]}, // since is inclusive
		{Now.Add(-time.Hour + time.Nanosecond), at[2:]},
		{Now.Add(time.Second), nil},
	} {
		if h := s.History("do_a", tc.since); !equal(h, tc.want) {
			t.Errorf("History(do_a, %v) = %v, want %v", tc.since, h, tc.want)
		}
	}
	if h := s.History("do_b", Now.Add(-time.Hour)); !equal(h, []time.Time{Now.Add(-30 * time.Second)}) {
		t.Errorf("History(do_b) = %v, want only do_b's actuation", h)
	}
	if h := s.History("do_none", Now.Add(-time.Hour)); len(h) != 0 {
		t.Errorf("History of an unknown action = %v, want none", h)
	}
}

// keepsADay: an actuation less than a day old is kept (the longest window
// a policy may ask for is a day); an older one is dropped, so the history
// stays bounded.
func keepsADay(t *testing.T, s policy.State) {
	s.Record("do_a", Now.Add(-25*time.Hour))
	s.Record("do_a", Now.Add(-23*time.Hour))
	s.Record("do_a", Now)
	if h := s.History("do_a", Now.Add(-48*time.Hour)); !equal(h, []time.Time{Now.Add(-23 * time.Hour), Now}) {
		t.Fatalf("History(do_a, two days) = %v, want the actuations of the last 23 hours and the day-old one dropped", h)
	}
}

func concurrent(t *testing.T, s policy.State) {
	const writers, each = 4, 10
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				s.Record(fmt.Sprint("do_", w%2), Now.Add(-time.Duration(w*each+i)*time.Second))
				s.History("do_0", Now.Add(-time.Hour))
			}
		})
	}
	wg.Wait()
	for a := range 2 {
		if h := s.History(fmt.Sprint("do_", a), Now.Add(-time.Hour)); len(h) != writers/2*each {
			t.Errorf("after %d concurrent writers, History(do_%d) has %d entries, want %d", writers, a, len(h), writers/2*each)
		}
	}
}

func equal(a, b []time.Time) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.SortFunc(a, time.Time.Compare)
	slices.SortFunc(b, time.Time.Compare)
	return slices.EqualFunc(a, b, time.Time.Equal)
}
