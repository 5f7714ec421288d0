package boltstate_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/promcp/promcp-device/policy"
	"github.com/promcp/promcp-device/policy/boltstate"
	"github.com/promcp/promcp-device/policy/statetest"
)

var _ policy.State = (*boltstate.BoltState)(nil)

var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func open(t *testing.T, path string) *boltstate.BoltState {
	t.Helper()
	s, err := boltstate.OpenBoltState(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestBoltState(t *testing.T) {
	statetest.Run(t, func(t *testing.T) policy.State {
		s := open(t, filepath.Join(t.TempDir(), "policy.db"))
		t.Cleanup(func() { s.Close() })
		return s
	})
}

// TestBoltStateSurvivesReopen: a cooldown's history is still there after
// the gateway restarts.
func TestBoltStateSurvivesReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.db")
	s := open(t, path)
	s.Record("do_a", now.Add(-25*time.Hour))
	s.Record("do_a", now.Add(-2*time.Minute))
	s.Record("do_b", now)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, path)
	defer s.Close()
	if h := s.History("do_a", now.Add(-48*time.Hour)); len(h) != 1 || !h[0].Equal(now.Add(-2*time.Minute)) {
		t.Fatalf("History(do_a, 2 days) after reopen = %v, want the actuation 2 minutes ago (the day-old one pruned)", h)
	}
}
