package policy

import (
	"sync"
	"time"
)

// State keeps the history of successful actuations that cooldowns and
// rate limits read. It is a seam: a fleet shares it through a replicated
// store; a single gateway keeps it in memory.
type State interface {
	// History returns the times of action's successful actuations at or
	// after since.
	History(action string, since time.Time) []time.Time
	// Record notes a successful actuation of action at t.
	Record(action string, t time.Time)
}

// MemoryState is a State in memory, safe for concurrent use. It keeps
// what the longest window asked so far needs, up to a day.
type MemoryState struct {
	mu   sync.Mutex
	hist map[string][]time.Time
}

// NewMemoryState returns an empty MemoryState.
func NewMemoryState() *MemoryState { return &MemoryState{hist: map[string][]time.Time{}} }

// History implements State.
func (s *MemoryState) History(action string, since time.Time) []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []time.Time
	for _, t := range s.hist[action] {
		if !t.Before(since) {
			out = append(out, t)
		}
	}
	return out
}

// Record implements State.
func (s *MemoryState) Record(action string, t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := append(s.hist[action], t)
	// Drop what no window of a day or less can need.
	cut := 0
	for cut < len(h) && h[cut].Before(t.Add(-24*time.Hour)) {
		cut++
	}
	s.hist[action] = h[cut:]
}

// FallibleState is a State whose history can fail to be read (a file on
// disk). The LocalReserver asks it through HistoryErr, and an action whose
// cooldown or rate limit needs a history that cannot be read is refused
// (fail closed), except a move to the safe value.
type FallibleState interface {
	State
	// HistoryErr is History, with the error that kept it from being read
	// whole.
	HistoryErr(action string, since time.Time) ([]time.Time, error)
}
