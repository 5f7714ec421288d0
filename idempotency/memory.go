package idempotency

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/promcp/promcp-device/clock"
)

// DefaultTTL is how long Memory keeps an outcome when no TTL is given.
const DefaultTTL = 24 * time.Hour

// Memory is a Store that keeps outcomes in memory for a TTL. Outcomes are
// lost on restart, and so are keys in flight: Memory never asks an action to
// recover. Use [Bolt] where that matters.
type Memory struct {
	ttl   time.Duration
	clock clock.Clock

	mu      sync.Mutex
	entries map[string]*entry
	calls   int // Do calls since the last sweep
}

type entry struct {
	fingerprint string
	done        chan struct{} // closed when the first call ends
	outcome     []byte
	kept        bool
	expires     time.Time
}

// NewMemory returns an empty Memory store. ttl <= 0 means DefaultTTL; a nil
// clock means the system clock.
func NewMemory(ttl time.Duration, clk clock.Clock) *Memory {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	return &Memory{ttl: ttl, clock: clock.Or(clk), entries: map[string]*entry{}}
}

// TTL returns how long outcomes are kept.
func (m *Memory) TTL() time.Duration { return m.ttl }

// Do implements Store.
func (m *Memory) Do(ctx context.Context, key, fingerprint string, act Action) ([]byte, bool, error) {
	for {
		m.mu.Lock()
		m.sweepLocked()
		e, ok := m.entries[key]
		if ok && e.kept && m.clock.Now().After(e.expires) {
			delete(m.entries, key)
			ok = false
		}
		if ok && e.fingerprint != fingerprint {
			m.mu.Unlock()
			return nil, false, fmt.Errorf("key %q: %w", key, ErrConflict)
		}
		if !ok {
			e = &entry{fingerprint: fingerprint, done: make(chan struct{})}
			m.entries[key] = e
			m.mu.Unlock()
			return m.run(ctx, key, e, act)
		}
		m.mu.Unlock()
		if err := WaitInFlight(ctx, key, e.done); err != nil {
			return nil, false, err
		}
		m.mu.Lock()
		kept := e.kept
		out := e.outcome
		m.mu.Unlock()
		if kept {
			return out, true, nil
		}
		// The first call kept nothing (refused or failed before acting):
		// loop to claim the key ourselves.
	}
}

func (m *Memory) run(ctx context.Context, key string, e *entry, act Action) (out []byte, replayed bool, err error) {
	keep := false
	defer func() {
		m.mu.Lock()
		if keep {
			e.kept = true
			e.outcome = out
			e.expires = m.clock.Now().Add(m.ttl)
		} else if m.entries[key] == e {
			delete(m.entries, key)
		}
		m.mu.Unlock()
		close(e.done)
	}()
	out, keep, err = act(ctx, Attempt{})
	if err != nil {
		keep = false
		return nil, false, err
	}
	return out, false, nil
}

// sweepLocked drops expired outcomes every 256 calls, so memory stays
// bounded by the calls of one TTL.
func (m *Memory) sweepLocked() {
	m.calls++
	if m.calls < 256 {
		return
	}
	m.calls = 0
	now := m.clock.Now()
	for k, e := range m.entries {
		if e.kept && now.After(e.expires) {
			delete(m.entries, k)
		}
	}
}
