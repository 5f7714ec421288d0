package shared

import (
	"context"
	"testing"
	"time"
)

// TestLostFor: a missing quorum is counted from the first probe that
// found none, across claims; it refuses after the election wait once a
// probe reported the loss (or no hub at all), after twice that when
// probes only timed out (a stalled leader); a quorum found, or a
// committed write, forgets it; and a loss not seen again for an election
// wait is forgotten, so that a transient one an hour ago does not refuse
// a claim at once now.
func TestLostFor(t *testing.T) {
	s := &State{cfg: Config{ElectionWait: 12 * time.Second, Timeout: 2 * time.Second}}
	t0 := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	lost := Reach{Reachable: 1, Required: 2}
	unknown := Reach{Reachable: -1, Required: 2}
	quorum := Reach{Reachable: 2, Required: 2}
	cut := Reach{Reachable: 0, Required: 2, Cut: true}
	steps := []struct {
		reach  Reach
		at     time.Duration
		want   time.Duration
		refuse bool
	}{
		{unknown, 0, 0, false}, // timeouts only: the clock starts
		{unknown, 6 * time.Second, 6 * time.Second, false},
		{unknown, 13 * time.Second, 13 * time.Second, false}, // past one election wait: still tried
		{quorum, 14 * time.Second, 0, false},                 // elected: forgotten
		{lost, 15 * time.Second, 0, false},                   // reported lost: its own wait
		{unknown, 20 * time.Second, 5 * time.Second, false},  // still counting
		{lost, 26 * time.Second, 11 * time.Second, false},    // within the election wait
		{unknown, 28 * time.Second, 13 * time.Second, true},  // past it, once reported: refused at once
		{quorum, 29 * time.Second, 0, false},
		{cut, 30 * time.Second, 0, false}, // no hub at all counts as reported
		{unknown, 36 * time.Second, 6 * time.Second, false},
		{unknown, 43 * time.Second, 13 * time.Second, true},
		{lost, time.Hour, 0, false},                     // last seen long ago: forgotten
		{unknown, time.Hour + 25*time.Second, 0, false}, // not seen for an election wait: forgotten
	}
	for i, st := range steps {
		got, refuse := s.lostFor(st.reach, t0.Add(st.at))
		if got != st.want || refuse != st.refuse {
			t.Errorf("step %d (%+v at %s): lost for %s refuse=%v, want %s refuse=%v", i, st.reach, st.at, got, refuse, st.want, st.refuse)
		}
	}
	s.lostFor(lost, t0.Add(time.Hour+26*time.Second))
	s.quorumSeen()
	if got, _ := s.lostFor(unknown, t0.Add(time.Hour+27*time.Second)); got != 0 {
		t.Errorf("after a committed write: lost for %s, want 0", got)
	}
	for d := time.Duration(0); d <= 24*time.Second; d += 6 * time.Second {
		_, refuse := s.lostFor(unknown, t0.Add(2*time.Hour+d))
		if want := d >= 24*time.Second; refuse != want {
			t.Errorf("timeouts only, %s in: refuse=%v, want %v (twice the election wait)", d, refuse, want)
		}
	}
}

// TestRetryLeft: a claim retries until its context's deadline less two
// write timeouts, or a minute without a deadline, never after its
// context ended; not a fixed election wait.
func TestRetryLeft(t *testing.T) {
	s := &State{cfg: Config{ElectionWait: 12 * time.Second, Timeout: 2 * time.Second}}
	now := time.Now()
	ctx, cancel := context.WithDeadline(context.Background(), now.Add(time.Minute))
	defer cancel()
	if !s.retryLeft(ctx, now.Add(-30*time.Second)) {
		t.Error("30 s into a claim with 60 s left: no retry, want one (an election may take longer than 12 s)")
	}
	short, cancel2 := context.WithDeadline(context.Background(), now.Add(3*time.Second))
	defer cancel2()
	if s.retryLeft(short, now) {
		t.Error("3 s before the deadline with 2 s writes: a retry, want the refusal now")
	}
	if !s.retryLeft(context.Background(), now.Add(-50*time.Second)) || s.retryLeft(context.Background(), now.Add(-61*time.Second)) {
		t.Error("without a deadline: want retries for a minute, then none")
	}
	ended, cancel3 := context.WithCancel(context.Background())
	cancel3()
	if s.retryLeft(ended, now) {
		t.Error("an ended context: a retry")
	}
}
