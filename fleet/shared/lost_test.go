package shared

import (
	"context"
	"testing"
	"time"
)

// TestLostFor: a loss of quorum is counted from the first probe that
// found it, across claims; a probe that cannot tell keeps counting a
// loss already seen but starts none; a quorum found, or a committed
// write, forgets it; and a loss not seen again for an election wait is
// forgotten, so that a transient one hours ago does not refuse a claim
// at once today.
func TestLostFor(t *testing.T) {
	s := &State{cfg: Config{ElectionWait: 12 * time.Second, Timeout: 2 * time.Second}}
	t0 := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	lost := Reach{Reachable: 1, Required: 2}
	unknown := Reach{Reachable: -1, Required: 2}
	quorum := Reach{Reachable: 2, Required: 2}
	cut := Reach{Reachable: 0, Required: 2, Cut: true}
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	steps := []struct {
		reach Reach
		at    time.Duration
		want  time.Duration
	}{
		{unknown, 0, 0},                             // nothing known: no loss
		{lost, time.Second, 0},                      // first seen lost
		{unknown, 5 * time.Second, 4 * time.Second}, // still counting
		{lost, 12 * time.Second, 11 * time.Second},  // within the election wait
		{lost, 14 * time.Second, 13 * time.Second},  // past it: refused at once
		{quorum, 15 * time.Second, 0},               // elected: forgotten
		{lost, 16 * time.Second, 0},                 // a new loss starts its own wait
		{cut, 18 * time.Second, 2 * time.Second},    // cut off counts as lost
		{lost, time.Hour, 0},                        // seen long ago: forgotten
		{unknown, time.Hour + time.Second, time.Second},
	}
	for i, st := range steps {
		if got := s.lostFor(st.reach, at(st.at)); got != st.want {
			t.Errorf("step %d (%+v at %s): lost for %s, want %s", i, st.reach, st.at, got, st.want)
		}
	}
	s.quorumSeen()
	if got := s.lostFor(unknown, at(time.Hour+2*time.Second)); got != 0 {
		t.Errorf("after a committed write: lost for %s, want 0", got)
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
