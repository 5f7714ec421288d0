package jobs_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/jobs"
)

type reverts struct {
	mu   sync.Mutex
	got  []jobs.Timer
	fail bool
	done chan struct{}
}

func (r *reverts) revert(_ context.Context, t jobs.Timer) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail {
		r.fail = false
		return errors.New("refused")
	}
	r.got = append(r.got, t)
	r.done <- struct{}{}
	return nil
}

func TestDeadManRevertsUnlessRenewed(t *testing.T) {
	clk := clock.NewManual(t0)
	r := &reverts{done: make(chan struct{}, 4)}
	d, err := jobs.NewDeadMan(jobs.DeadManOptions{Clock: clk, Revert: r.revert})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go d.Run(ctx)
	d.Arm(jobs.Timer{Tool: "do_heater", To: false, At: t0.Add(10 * time.Minute), Value: true})
	waiting(t, clk, 1)
	clk.Advance(8 * time.Minute)
	// Renewed: a new do_* with a new key arms it again.
	d.Arm(jobs.Timer{Tool: "do_heater", To: false, At: clk.Now().Add(10 * time.Minute), Value: true})
	waiting(t, clk, 2) // the old wait is abandoned, a new one starts
	clk.Advance(5 * time.Minute)
	select {
	case <-r.done:
		t.Fatal("reverted 13 min after arming though renewed at 8 min")
	default:
	}
	clk.Advance(5 * time.Minute)
	select {
	case <-r.done:
	case <-time.After(time.Minute):
		t.Fatal("not reverted 10 min after the renewal")
	}
	if _, armed := d.Due("do_heater"); armed {
		waitDisarmed(t, d, "do_heater")
	}
}

func waitDisarmed(t *testing.T, d *jobs.DeadMan, tool string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		if _, armed := d.Due(tool); !armed {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still armed after its revert", tool)
		}
		time.Sleep(time.Millisecond) // polling for the disarm the revert triggers; not a timing assumption
	}
}

// A timer due while the process was down reverts as it starts; a revert
// that fails is retried.
func TestDeadManDueAtStartAndRetried(t *testing.T) {
	path := t.TempDir() + "/jobs.db"
	b, err := jobs.OpenBolt(path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	b.PutTimer(jobs.Timer{Tool: "do_heater", To: false, At: t0.Add(-time.Minute)})
	clk := clock.NewManual(t0)
	r := &reverts{done: make(chan struct{}, 4), fail: true}
	d, err := jobs.NewDeadMan(jobs.DeadManOptions{Clock: clk, Store: b, Revert: r.revert, Retry: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go d.Run(ctx)
	waiting(t, clk, 1) // the first revert failed; the retry waits 5 s
	if tm, ok := d.Due("do_heater"); !ok || tm.Tries != 1 || !tm.At.Equal(t0.Add(5*time.Second)) {
		t.Fatalf("after a failed revert: %+v, %v", tm, ok)
	}
	// Run may still be re-reading its timers (the failed revert's re-arm
	// wakes it) and register its wait on the clock after this Advance, 5 s
	// past the new now: advance again until the revert happens.
	for i := 0; ; i++ {
		clk.Advance(5 * time.Second)
		select {
		case <-r.done:
		case <-time.After(20 * time.Millisecond): // real time: let Run register its wait
			if i == 100 {
				t.Fatal("the retried revert did not happen")
			}
			continue
		}
		break
	}
	waitDisarmed(t, d, "do_heater")
	if ts, _ := b.LoadTimers(); len(ts) != 0 {
		t.Errorf("timers left in the store: %+v", ts)
	}
}

// Only the arming a timer belongs to disarms it: a revert of the first
// arming that ends after a renewal (a second arming) leaves the renewal's
// timer armed; a retry of a renewed arming does not bring it back.
func TestDeadManDisarmsOnlyItsArming(t *testing.T) {
	d, err := jobs.NewDeadMan(jobs.DeadManOptions{Clock: clock.NewManual(t0), Revert: func(context.Context, jobs.Timer) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	first, _ := d.Arm(jobs.Timer{Tool: "do_heater", To: false, At: t0.Add(10 * time.Minute), Value: true})
	renewal, _ := d.Arm(jobs.Timer{Tool: "do_heater", To: false, At: t0.Add(20 * time.Minute), Value: true})
	if first.Gen == 0 || renewal.Gen == first.Gen {
		t.Fatalf("generations %d and %d, want two distinct", first.Gen, renewal.Gen)
	}
	if ok, _ := d.Disarm("do_heater", first.Gen); ok {
		t.Fatal("the first arming disarmed the renewal's timer")
	}
	retry := first
	retry.At, retry.Tries = t0.Add(11*time.Minute), 1
	if got, _ := d.Arm(retry); got.Gen != renewal.Gen {
		t.Fatalf("a retry of the renewed arming replaced the timer: %+v", got)
	}
	if cur, armed := d.Due("do_heater"); !armed || cur.Gen != renewal.Gen || !cur.At.Equal(renewal.At) {
		t.Fatalf("timer %+v (armed %v), want the renewal's", cur, armed)
	}
	if ok, _ := d.Disarm("do_heater", renewal.Gen); !ok {
		t.Fatal("the renewal's own arming did not disarm it")
	}
}
