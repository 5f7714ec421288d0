package promcp

import "sync/atomic"

// Memo is where a server keeps what it made of a report that a handler
// gives again unchanged (the encoded answer, with its per-call parts left
// to fill), so that the same answer is not encoded again. A can_do
// handler that gives an answer again sets the report's Memo to the one it
// kept with that answer, and a new Memo with every new answer: a Memo
// lives exactly as long as its answer is given. Safe for concurrent use;
// its zero value is empty.
type Memo struct {
	v atomic.Pointer[memoValue]
}

type memoValue struct{ v any }

// Load returns what was stored, or nil.
func (m *Memo) Load() any {
	if p := m.v.Load(); p != nil {
		return p.v
	}
	return nil
}

// Store keeps v, replacing what was stored.
func (m *Memo) Store(v any) { m.v.Store(&memoValue{v}) }
