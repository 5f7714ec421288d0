package modbus

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/promcp/promcp-device/drivers"
	"github.com/promcp/promcp-device/drivers/modbus/modbusconf"
)

// stuckTransport never answers: Send waits for abort or the deadline.
type stuckTransport struct {
	fakeTransport
	aborted chan struct{}
	aborts  atomic.Int32
}

func (s *stuckTransport) Send([]byte) ([]byte, error) {
	select {
	case <-s.aborted:
		return nil, fmt.Errorf("%w: aborted", errPeer)
	case <-time.After(time.Until(s.deadline)):
		return nil, fmt.Errorf("%w: no answer", drivers.ErrTimeout)
	}
}

func (s *stuckTransport) abort() {
	s.aborts.Add(1)
	close(s.aborted)
}

func stuckLine() (*Line, *stuckTransport) {
	s := &stuckTransport{aborted: make(chan struct{})}
	return newLine(Config{Name: "stuck", Timeout: time.Hour, BreakerThreshold: 100}, s, false, nil), s
}

// A caller that gives up aborts the line's transaction, but only once
// every caller of the coalesced read has: one leaving does not abort the
// read the other still waits for.
func TestLastCallerLeavingAbortsTheTransaction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		line, s := stuckLine()
		u := line.Unit(1)
		read := func(ctx context.Context, errs chan<- error) {
			_, err := u.ReadRegisters(ctx, modbusconf.TableHolding, 0, 1)
			errs <- err
		}
		ctx1, cancel1 := context.WithCancel(t.Context())
		ctx2, cancel2 := context.WithCancel(t.Context())
		errs1, errs2 := make(chan error, 1), make(chan error, 1)
		go read(ctx1, errs1)
		synctest.Wait()
		go read(ctx2, errs2)
		synctest.Wait()
		cancel2()
		if err := <-errs2; !errors.Is(err, context.Canceled) {
			t.Fatalf("the joined caller that left got %v, want Canceled", err)
		}
		synctest.Wait()
		if n := s.aborts.Load(); n != 0 {
			t.Fatalf("one of two callers leaving aborted the transaction (%d aborts)", n)
		}
		start := time.Now()
		cancel1()
		if err := <-errs1; !errors.Is(err, context.Canceled) {
			t.Fatalf("the last caller that left got %v, want Canceled", err)
		}
		if n := s.aborts.Load(); n != 1 || time.Since(start) != 0 {
			t.Fatalf("the last caller leaving: %d aborts, returned after %v; want 1, at once", n, time.Since(start))
		}
	})
}

// A caller whose context cannot be cancelled is not watched: its
// transaction runs to its deadline, and nothing aborts it.
func TestUncancellableCallerRunsToTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		line, s := stuckLine()
		line.Unit(1, WithTimeout(time.Second))
		start := time.Now()
		_, err := line.Unit(1).ReadRegisters(context.Background(), modbusconf.TableHolding, 0, 1)
		if !errors.Is(err, drivers.ErrTimeout) || time.Since(start) != time.Second || s.aborts.Load() != 0 {
			t.Fatalf("got %v after %v with %d aborts, want a timeout after 1s and none", err, time.Since(start), s.aborts.Load())
		}
	})
}
