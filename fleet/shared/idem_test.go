package shared_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/fleet/shared"
	"github.com/promcp/promcp-device/idempotency"
	"github.com/promcp/promcp-device/idempotency/storetest"
)

// testIdempotency: the same key sent to two gateways at once runs once;
// the other gateway replays the outcome; other arguments are a conflict.
func testIdempotency(t *testing.T, f *fleet) {
	stores := make([]idempotency.Store, 2)
	for i := range stores {
		stores[i] = f.gws[i].state.Store(idempotency.NewMemory(time.Hour, nil), time.Hour)
	}
	rounds := 50
	if raceEnabled {
		rounds = 20
	}
	for round := range rounds {
		key := fmt.Sprintf("key-%d", round)
		var runs atomic.Int32
		outs := make([]string, len(stores))
		replays := make([]bool, len(stores))
		var wg sync.WaitGroup
		for i, st := range stores {
			wg.Go(func() {
				out, replayed, err := st.Do(context.Background(), key, "do_valve value=1", func(context.Context, idempotency.Attempt) ([]byte, bool, error) {
					runs.Add(1)
					return []byte("ran at " + f.gws[i].name), true, nil
				})
				if err != nil {
					t.Errorf("round %d gateway %d: %v", round, i, err)
				}
				outs[i], replays[i] = string(out), replayed
			})
		}
		wg.Wait()
		if runs.Load() != 1 || outs[0] != outs[1] || replays[0] == replays[1] {
			t.Fatalf("round %d: ran %d times, outcomes %q, replayed %v; want once, one outcome, one replay", round, runs.Load(), outs, replays)
		}
	}
	_, _, err := stores[1].Do(context.Background(), "key-0", "do_valve value=0", storetest.Counting(new(atomic.Int32), "x", true))
	if !errors.Is(err, idempotency.ErrConflict) {
		t.Fatalf("key reused with other arguments on another gateway = %v, want ErrConflict", err)
	}
	// A key with characters KV keys do not allow still claims fleet-wide.
	var runs atomic.Int32
	for _, st := range stores {
		if _, _, err := st.Do(context.Background(), "weird key/ü.", "fp", storetest.Counting(&runs, "y", true)); err != nil {
			t.Fatal(err)
		}
	}
	if runs.Load() != 1 {
		t.Fatalf("a key with odd characters ran %d times on two gateways, want 1", runs.Load())
	}
}

// testStoreConformance runs the idempotency conformance suite on the
// fleet store (the bucket emptied for each case, the clocks injected).
func testStoreConformance(t *testing.T, f *fleet) {
	nc := f.hub.Connect()
	js, err := jetstream.NewWithDomain(nc, "hub")
	if err != nil {
		t.Fatal(err)
	}
	storetest.Run(t, func(t *testing.T, clk *clock.Manual) idempotency.Store {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		st, err := js.Stream(ctx, "KV_"+shared.IdemBucket)
		if err == nil {
			err = st.Purge(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
		leaf := f.gws[0].leaf
		s, err := shared.Open(ctx, leaf.Conn(t), shared.Config{Gateway: "conf", Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		return s.Store(idempotency.NewMemory(storetest.TTL, clk), storetest.TTL)
	})
}
