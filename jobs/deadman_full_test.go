package jobs_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/jobs"
)

// fullTimers is a timer store on a disk that may be full: every write
// fails while full is set. It counts the deletions tried.
type fullTimers struct {
	mu      sync.Mutex
	full    bool
	timers  map[string]jobs.Timer
	deletes int
}

var errFull = errors.New("no space left on device")

func (s *fullTimers) PutTimer(t jobs.Timer) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.full {
		return errFull
	}
	s.timers[t.Tool] = t
	return nil
}

func (s *fullTimers) DeleteTimer(tool string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deletes++
	if s.full {
		return errFull
	}
	delete(s.timers, tool)
	return nil
}

func (s *fullTimers) LoadTimers() ([]jobs.Timer, error) { return nil, nil }

func (s *fullTimers) set(full bool) (deletes, kept int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.full = full
	return s.deletes, len(s.timers)
}

// A revert whose timer cannot be deleted from a full store reverts once,
// not again and again at the same instant (the write storm TestModel
// found): the timer is forgotten in memory and its record's deletion is
// retried on the clock every Retry, until the store takes it.
func TestDeadManFullDiskRevertsOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := clock.NewManual(t0)
		st := &fullTimers{timers: map[string]jobs.Timer{}}
		var mu sync.Mutex
		reverts := 0
		d, err := jobs.NewDeadMan(jobs.DeadManOptions{Clock: clk, Store: st, Retry: 10 * time.Second,
			Revert: func(ctx context.Context, _ jobs.Timer) error {
				mu.Lock()
				reverts++
				n := reverts
				mu.Unlock()
				if n > 1 { // a second revert: hold it, so that a loop fails the test instead of spinning
					<-ctx.Done()
				}
				return nil
			}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		go d.Run(ctx)
		if _, err := d.Arm(jobs.Timer{Tool: "do_heater", To: false, At: t0.Add(time.Minute), Value: true}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		st.set(true) // the disk fills
		clk.Advance(time.Minute)
		synctest.Wait()
		for range 6 { // a minute of retries
			clk.Advance(10 * time.Second)
			synctest.Wait()
		}
		mu.Lock()
		n := reverts
		mu.Unlock()
		deletes, kept := st.set(false)
		t.Logf("reverts %d, deletions tried %d over a minute of a full disk", n, deletes)
		if n != 1 {
			t.Fatalf("reverted %d times, want once: a timer whose record could not be deleted fired again", n)
		}
		if _, armed := d.Due("do_heater"); armed {
			t.Fatal("the reverted timer is still armed")
		}
		if deletes < 2 || deletes > 8 {
			t.Fatalf("%d deletions tried in a minute with a 10 s retry: want them retried on the clock, not in a loop", deletes)
		}
		if kept != 1 {
			t.Fatalf("%d records in the full store, want the undeleted one", kept)
		}
		clk.Advance(10 * time.Second) // the disk has room: the next retry deletes it
		synctest.Wait()
		if _, kept := st.set(false); kept != 0 {
			t.Fatal("the timer's record was not deleted once the store had room")
		}
	})
}

// A refused revert with a full store (its re-arm for the retry cannot be
// written) waits Retry before it is tried again, instead of firing at
// once for ever.
func TestDeadManFullDiskRetryWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := clock.NewManual(t0)
		st := &fullTimers{timers: map[string]jobs.Timer{}}
		var mu sync.Mutex
		tries := 0
		d, err := jobs.NewDeadMan(jobs.DeadManOptions{Clock: clk, Store: st, Retry: 10 * time.Second,
			Revert: func(ctx context.Context, _ jobs.Timer) error {
				mu.Lock()
				tries++
				n := tries
				mu.Unlock()
				if n > 4 { // more than the clock allows: hold it, so that a loop fails the test instead of spinning
					<-ctx.Done()
				}
				return errors.New("refused")
			}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		go d.Run(ctx)
		d.Arm(jobs.Timer{Tool: "do_heater", To: false, At: t0.Add(time.Minute), Value: true})
		synctest.Wait()
		st.set(true)
		clk.Advance(time.Minute)
		synctest.Wait()
		for range 3 {
			clk.Advance(10 * time.Second)
			synctest.Wait()
		}
		mu.Lock()
		defer mu.Unlock()
		if tries != 4 {
			t.Fatalf("%d reverts tried over 30 s after the deadline with a 10 s retry, want 4", tries)
		}
		if tm, armed := d.Due("do_heater"); !armed || !tm.At.Equal(clk.Now().Add(10*time.Second)) {
			t.Fatalf("timer %+v (armed %v): want it retried 10 s on", tm, armed)
		}
	})
}
