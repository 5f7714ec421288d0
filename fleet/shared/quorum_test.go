package shared_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/promcp/promcp-device/fleet/shared"
	"github.com/promcp/promcp-device/fleet/shared/sharedtest"
	"github.com/promcp/promcp-device/promcp"
)

// TestQuorum: losing one hub node of three fails no action; losing two
// refuses shared and quorum claims partition_no_quorum and reserves
// nothing, while local claims proceed; restarting them heals.
func TestQuorum(t *testing.T) {
	f := startFleet(t, 2*time.Second)

	// One node lost while the gateways act: no action fails.
	var done, failed atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for _, g := range f.gws {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
				d, err := act(ctx, g, claim("do_quorum_one"), 0)
				cancel()
				if err != nil || !d.Allowed() {
					failed.Add(1)
					t.Errorf("%s action %d with one hub node lost: %s (%s) err=%v", g.name, i, d.Permission, d.Reason, err)
				}
				done.Add(1)
			}
		})
	}
	waitCount(t, &done, 15)
	f.hub.Stop(0)
	before := done.Load()
	waitCount(t, &done, before+45)
	close(stop)
	wg.Wait()
	t.Logf("one hub node lost: %d actions, %d failed", done.Load(), failed.Load())

	// Two nodes lost: refused, nothing reserved, the reason says what is reachable.
	f.hub.Stop(1)
	var refusals sync.WaitGroup
	for _, g := range f.gws {
		refusals.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			res, d, err := g.res.Reserve(ctx, claim("do_quorum_two"), cooldownDecide(claim("do_quorum_two"), 0))
			if err != nil || res != nil || d.Permission != promcp.PartitionNoQuorum {
				t.Errorf("%s with two hub nodes lost: res=%v %s (%s) err=%v, want partition_no_quorum", g.name, res, d.Permission, d.Reason, err)
				return
			}
			// 1, or "fewer than 2" while the leader still counts a lost
			// follower current: never a count that would be a quorum.
			if !strings.Contains(d.Reason, "replicas reachable: 1, required: 2") && !strings.Contains(d.Reason, "replicas reachable: fewer than 2, required: 2") {
				t.Errorf("%s reason %q does not say replicas reachable: 1 (or fewer than 2), required: 2", g.name, d.Reason)
			}
			if h := g.hist.History("do_quorum_two", time.Time{}); len(h) != 0 {
				t.Errorf("%s: refused claim left history %v", g.name, h)
			}
			if d, err := act(ctx, g, claim("do_local_two"), time.Hour); err != nil || !d.Allowed() {
				t.Errorf("%s local claim with two hub nodes lost: %s (%s) err=%v", g.name, d.Permission, d.Reason, err)
			}
		})
	}
	refusals.Wait()
	// can_do's check agrees with do_*: the leader still serves reads, but
	// the claim could not commit.
	for _, g := range f.gws {
		chk, ok := g.res.(shared.Checker)
		if !ok {
			t.Fatalf("%s: the fleet reserver is no shared.Checker", g.name)
		}
		if d, ok := chk.Check(context.Background(), claim("do_quorum_two")); ok || d.Permission != promcp.PartitionNoQuorum {
			t.Errorf("%s: Check with two hub nodes lost = %v, %s (%s); want partition_no_quorum", g.name, ok, d.Permission, d.Reason)
		}
	}

	// Healing: the nodes come back, and so do shared claims.
	f.hub.Restart(0)
	f.hub.Restart(1)
	g := f.gws[0]
	// An attempt that times out while the hub re-elects may leave its
	// pending record (its write may have committed with the reply lost):
	// the next attempt waits for it as for any claim in progress, until
	// its lease (30 s) ends. So the poll outlasts a lease, and each
	// attempt has time to see its own write through.
	if err := sharedtest.Poll(120*time.Second, func(context.Context) error {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if d, err := act(ctx, g, claim("do_quorum_heal"), 0); err != nil || !d.Allowed() {
			return fmt.Errorf("%s (%s) err=%v", d.Permission, d.Reason, err)
		}
		return nil
	}); err != nil {
		t.Fatalf("no shared claim after healing: %v", err)
	}
}

// waitCount polls until n reaches want (30 s at most).
func waitCount(t *testing.T, n *atomic.Int64, want int64) {
	t.Helper()
	if err := sharedtest.Poll(60*time.Second, func(context.Context) error {
		if n.Load() >= want {
			return nil
		}
		return fmt.Errorf("%d actions done, want %d", n.Load(), want)
	}); err != nil {
		t.Fatal(err)
	}
}
