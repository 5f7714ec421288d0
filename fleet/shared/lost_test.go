package shared

import (
	"context"
	"testing"
	"time"
)

// TestLostFor: the hub's reports of a lost quorum are counted from the
// first, across claims, until a write commits, and refuse after the
// election wait; a probe that times out or still counts a quorum (a
// stalled leader, a leader that counts its lost followers current)
// neither starts nor ends the count; a report not repeated for an
// election wait is forgotten, so that a transient one an hour ago does
// not refuse a claim at once now.
func TestLostFor(t *testing.T) {
	s := &State{cfg: Config{ElectionWait: 12 * time.Second, Timeout: 2 * time.Second}}
	t0 := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	lost := Reach{Reachable: 1, Required: 2}
	unknown := Reach{Reachable: -1, Required: 2}
	quorum := Reach{Reachable: 2, Required: 2}
	cut := Reach{Reachable: 0, Required: 2, Cut: true}
	type step struct {
		reach  Reach
		at     time.Duration
		want   time.Duration
		refuse bool
	}
	run := func(name string, steps []step) {
		for i, st := range steps {
			got, refuse := s.lostFor(st.reach, t0.Add(st.at))
			if got != st.want || refuse != st.refuse {
				t.Errorf("%s, step %d (%+v at %s): lost for %s refuse=%v, want %s refuse=%v", name, i, st.reach, st.at, got, refuse, st.want, st.refuse)
			}
		}
		s.quorumSeen()
	}
	run("stalled leader", []step{
		{unknown, 0, 0, false},
		{quorum, 6 * time.Second, 0, false},
		{unknown, 30 * time.Second, 0, false}, // never refused fleet-wide: each claim's own wait
	})
	run("two members lost", []step{
		{quorum, time.Minute, 0, false},                             // the leader still counts its followers current
		{lost, time.Minute + 5*time.Second, time.Nanosecond, false}, // reported: at least a moment
		{quorum, time.Minute + 10*time.Second, 5 * time.Second, false},
		{unknown, time.Minute + 16*time.Second, 11 * time.Second, false},
		{lost, time.Minute + 17*time.Second, 12 * time.Second, true}, // an election wait: refused
		{unknown, time.Minute + 18*time.Second, 13 * time.Second, true},
	})
	run("cut off", []step{
		{cut, 2 * time.Minute, time.Nanosecond, false},
		{cut, 2*time.Minute + 6*time.Second, 6 * time.Second, false},
		{cut, 2*time.Minute + 12*time.Second, 12 * time.Second, true},
	})
	run("forgotten", []step{
		{lost, 3 * time.Minute, time.Nanosecond, false},
		{lost, 3*time.Minute + 11*time.Second, 11 * time.Second, false},
		{lost, 4 * time.Minute, time.Nanosecond, false}, // none for an election wait: a new one
	})
	s.lostFor(lost, t0.Add(5*time.Minute))
	s.quorumSeen()
	if got, _ := s.lostFor(unknown, t0.Add(5*time.Minute+time.Second)); got != 0 {
		t.Errorf("after a committed write: lost for %s, want 0", got)
	}
}

// TestRetryLeft: a claim retries until its context's deadline less four
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
	short, cancel2 := context.WithDeadline(context.Background(), now.Add(7*time.Second))
	defer cancel2()
	if s.retryLeft(short, now) {
		t.Error("7 s before the deadline with 2 s writes: a retry (a pass may take four), want the refusal now")
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
