package idempotency_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/promcp/promcp-device/idempotency"
)

type manualClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *manualClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

// After is never called: the stores only tell the time. A nil channel never
// fires.
func (c *manualClock) After(time.Duration) <-chan time.Time { return nil }

func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

var _ idempotency.Store = (*idempotency.Memory)(nil)

func TestMemoryReplaysKeptOutcome(t *testing.T) {
	m := idempotency.NewMemory(time.Hour, nil)
	var runs atomic.Int32
	act := func(context.Context, idempotency.Attempt) ([]byte, bool, error) {
		runs.Add(1)
		return []byte(`{"n":1}`), true, nil
	}
	out, replayed, err := m.Do(t.Context(), "k", "fp", act)
	if err != nil || replayed || string(out) != `{"n":1}` {
		t.Fatalf("first Do = %q, %t, %v; want the outcome, not replayed", out, replayed, err)
	}
	out, replayed, err = m.Do(t.Context(), "k", "fp", act)
	if err != nil || !replayed || string(out) != `{"n":1}` {
		t.Fatalf("second Do = %q, %t, %v; want the first outcome, replayed", out, replayed, err)
	}
	if got := runs.Load(); got != 1 {
		t.Fatalf("action ran %d times, want 1", got)
	}
}

func TestMemoryConflict(t *testing.T) {
	m := idempotency.NewMemory(time.Hour, nil)
	ok := func(context.Context, idempotency.Attempt) ([]byte, bool, error) { return []byte("x"), true, nil }
	if _, _, err := m.Do(t.Context(), "k", "a", ok); err != nil {
		t.Fatal(err)
	}
	ran := false
	_, _, err := m.Do(t.Context(), "k", "b", func(context.Context, idempotency.Attempt) ([]byte, bool, error) {
		ran = true
		return nil, true, nil
	})
	if !errors.Is(err, idempotency.ErrConflict) || ran {
		t.Fatalf("Do with another fingerprint = %v, ran %t; want ErrConflict and no run", err, ran)
	}
}

func TestMemoryDoesNotKeepRefusals(t *testing.T) {
	m := idempotency.NewMemory(time.Hour, nil)
	var runs int
	refuse := func(context.Context, idempotency.Attempt) ([]byte, bool, error) {
		runs++
		return []byte("refused"), false, nil
	}
	for range 2 {
		if out, replayed, err := m.Do(t.Context(), "k", "a", refuse); err != nil || replayed || string(out) != "refused" {
			t.Fatalf("Do = %q, %t, %v", out, replayed, err)
		}
	}
	if runs != 2 {
		t.Fatalf("refusing action ran %d times, want 2 (refusals are evaluated afresh)", runs)
	}
	// A refused key may later be used with other arguments.
	if _, _, err := m.Do(t.Context(), "k", "b", refuse); err != nil {
		t.Fatalf("after a refusal, another fingerprint = %v, want no conflict", err)
	}
}

func TestMemoryExpires(t *testing.T) {
	clk := &manualClock{t: time.Unix(0, 0)}
	m := idempotency.NewMemory(time.Minute, clk)
	var runs int
	act := func(context.Context, idempotency.Attempt) ([]byte, bool, error) {
		runs++
		return []byte("x"), true, nil
	}
	m.Do(t.Context(), "k", "a", act)
	clk.Advance(59 * time.Second)
	m.Do(t.Context(), "k", "a", act)
	clk.Advance(2 * time.Second)
	m.Do(t.Context(), "k", "a", act)
	if runs != 2 {
		t.Fatalf("runs = %d, want 2 (once, replay within TTL, once after expiry)", runs)
	}
}

func TestMemoryConcurrentDuplicatesRunOnce(t *testing.T) {
	m := idempotency.NewMemory(time.Hour, nil)
	var runs atomic.Int32
	release := make(chan struct{})
	act := func(context.Context, idempotency.Attempt) ([]byte, bool, error) {
		runs.Add(1)
		<-release
		return []byte("done"), true, nil
	}
	const n = 50
	var wg sync.WaitGroup
	outs := make([]string, n)
	started := make(chan struct{}, n)
	for i := range n {
		wg.Go(func() {
			started <- struct{}{}
			out, _, err := m.Do(context.Background(), "k", "fp", act)
			if err != nil {
				t.Error(err)
			}
			outs[i] = string(out)
		})
	}
	for range n {
		<-started
	}
	close(release)
	wg.Wait()
	if got := runs.Load(); got != 1 {
		t.Fatalf("action ran %d times under %d concurrent duplicates, want 1", got, n)
	}
	for i, o := range outs {
		if o != "done" {
			t.Fatalf("caller %d got %q, want the single outcome", i, o)
		}
	}
}

func TestMemoryWaiterHonoursContext(t *testing.T) {
	m := idempotency.NewMemory(time.Hour, nil)
	block := make(chan struct{})
	defer close(block)
	go m.Do(context.Background(), "k", "fp", func(context.Context, idempotency.Attempt) ([]byte, bool, error) {
		<-block
		return nil, true, nil
	})
	// Wait until the first call holds the key.
	for {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, _, err := m.Do(ctx, "k", "fp", func(context.Context, idempotency.Attempt) ([]byte, bool, error) { return []byte("second"), false, nil })
		if errors.Is(err, context.Canceled) {
			return
		}
	}
}
