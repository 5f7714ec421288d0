package mqtt

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/promcp/promcp-device/clock"
)

// flakySession fails its first fails subscribes, as a broker whose
// acknowledgement does not come within the timeout under load.
type flakySession struct {
	mu         sync.Mutex
	fails      int
	attempts   int
	subscribed []string
}

func (s *flakySession) subscribe(_ context.Context, topics []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.attempts++
	if s.fails > 0 {
		s.fails--
		return context.DeadlineExceeded
	}
	s.subscribed = append(s.subscribed, topics...)
	return nil
}

func (s *flakySession) publish(context.Context, string, []byte, bool) error { return nil }

func (s *flakySession) state() (int, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attempts, slices.Clone(s.subscribed)
}

func testClient(t *testing.T) *Client {
	ctx, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	return &Client{cfg: Config{Name: "b", ConnectTimeout: time.Second, MinBackoff: 250 * time.Millisecond, MaxBackoff: 5 * time.Second},
		clock: clock.System{}, log: slog.New(slog.DiscardHandler), ctx: ctx, stop: stop,
		watched: map[string]bool{"home/door": true}, last: map[string]Message{}, waiters: map[string][]chan struct{}{}}
}

// A subscription that fails while the connection stays up is tried again
// until it holds (before, it was logged and the topic stayed silent for
// the connection's life: "no message yet (connected)").
func TestSubscribeRetriedWhileConnected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := testClient(t)
		s := &flakySession{fails: 3}
		c.up(s)
		time.Sleep(time.Minute)
		synctest.Wait()
		attempts, subs := s.state()
		if !slices.Equal(subs, []string{"home/door"}) || attempts != 4 {
			t.Fatalf("after 3 failed subscribes: %d attempts, subscribed %v; want 4 attempts and home/door", attempts, subs)
		}
	})
}

// A connection that went down stops its retries: the next one subscribes
// anew.
func TestSubscribeStopsWithItsConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := testClient(t)
		s := &flakySession{fails: 1000}
		c.up(s)
		synctest.Wait()
		c.downed()
		time.Sleep(time.Minute)
		synctest.Wait()
		if attempts, _ := s.state(); attempts != 1 {
			t.Fatalf("%d subscribes on a connection that went down after the first, want 1", attempts)
		}
		next := &flakySession{}
		c.up(next)
		synctest.Wait()
		if _, subs := next.state(); !slices.Equal(subs, []string{"home/door"}) {
			t.Fatalf("the next connection subscribed %v, want home/door", subs)
		}
	})
}
