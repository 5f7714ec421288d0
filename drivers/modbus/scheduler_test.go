package modbus

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/promcp/promcp-device/drivers"
	"github.com/promcp/promcp-device/drivers/modbus/modbusconf"
)

// fakeTransport answers MBAP requests in memory: units in dead never answer
// (the transaction runs into its deadline); others answer after latency
// with registers that hold their address. It counts what reaches the wire.
type fakeTransport struct {
	latency time.Duration
	dead    map[uint8]bool

	mu       sync.Mutex
	deadline time.Time
	sends    map[uint8]int
}

func (f *fakeTransport) prepare(_ context.Context, d time.Time) error {
	f.deadline = d
	return nil
}

func (f *fakeTransport) Send(adu []byte) ([]byte, error) {
	unit := adu[6]
	f.mu.Lock()
	f.sends[unit]++
	f.mu.Unlock()
	if f.dead[unit] {
		time.Sleep(time.Until(f.deadline))
		return nil, fmt.Errorf("%w: fake unit %d is dead", drivers.ErrTimeout, unit)
	}
	time.Sleep(f.latency)
	addr, n := binary.BigEndian.Uint16(adu[8:]), binary.BigEndian.Uint16(adu[10:])
	res := append([]byte(nil), adu[:8]...)
	res = append(res, byte(2*n))
	for i := range n {
		res = binary.BigEndian.AppendUint16(res, addr+i)
	}
	binary.BigEndian.PutUint16(res[4:], uint16(len(res)-6))
	return res, nil
}

func (f *fakeTransport) count(unit uint8) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sends[unit]
}

func (f *fakeTransport) settle(context.Context, uint8) error { return nil }
func (f *fakeTransport) abort()                              {}
func (f *fakeTransport) reset()                              {}
func (f *fakeTransport) discards() uint64                    { return 0 }
func (f *fakeTransport) Close() error                        { return nil }

func fakeLine(cfg Config, dead ...uint8) (*Line, *fakeTransport) {
	f := &fakeTransport{latency: 5 * time.Millisecond, dead: map[uint8]bool{}, sends: map[uint8]int{}}
	for _, u := range dead {
		f.dead[u] = true
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 100 * time.Millisecond
	}
	cfg.Name = "fake"
	return newLine(cfg, f, false, nil), f
}

// TestCoalescedReads: N goroutines reading the same registers at once cause
// one bus transaction, and all get the value.
func TestCoalescedReads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		line, f := fakeLine(Config{})
		u := line.Unit(1)
		const n = 50
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for range n {
			wg.Go(func() {
				b, err := u.ReadRegisters(t.Context(), modbusconf.TableHolding, 7, 2)
				if err == nil && (binary.BigEndian.Uint16(b) != 7 || binary.BigEndian.Uint16(b[2:]) != 8) {
					err = fmt.Errorf("got % x, want registers 7 and 8", b)
				}
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if got := f.count(1); got != 1 {
			t.Fatalf("%d concurrent identical reads made %d transactions, want 1", n, got)
		}
		if _, err := u.ReadRegisters(t.Context(), modbusconf.TableHolding, 7, 2); err != nil || f.count(1) != 2 {
			t.Fatalf("a later read: %v, %d transactions; want a new transaction (no caching here)", err, f.count(1))
		}
	})
}

// TestSpanBatching: points in one span are read in one transaction, and
// concurrent reads of different points of the span share it.
func TestSpanBatching(t *testing.T) {
	regs := []modbusconf.Register{
		{Name: "a", Table: modbusconf.TableInput, Address: 10, Type: modbusconf.DataUint16, Bit: -1, Scale: 1},
		{Name: "b", Table: modbusconf.TableInput, Address: 11, Type: modbusconf.DataFloat32, Bit: -1, Scale: 1},
		{Name: "c", Table: modbusconf.TableInput, Address: 13, Type: modbusconf.DataUint16, Bit: -1, Scale: 1},
		{Name: "far", Table: modbusconf.TableInput, Address: 40, Type: modbusconf.DataUint16, Bit: -1, Scale: 1},
		{Name: "h", Table: modbusconf.TableHolding, Address: 12, Type: modbusconf.DataUint16, Bit: -1, Scale: 1},
	}
	for _, tc := range []struct {
		name    string
		maxSpan int
		want    map[string][2]uint16 // start, count
	}{
		{"off", 0, map[string][2]uint16{"a": {10, 1}, "b": {11, 2}, "c": {13, 1}, "far": {40, 1}, "h": {12, 1}}},
		{"span 3", 3, map[string][2]uint16{"a": {10, 3}, "b": {10, 3}, "c": {13, 1}, "far": {40, 1}, "h": {12, 1}}},
		{"span 4", 4, map[string][2]uint16{"a": {10, 4}, "b": {10, 4}, "c": {10, 4}, "far": {40, 1}, "h": {12, 1}}},
		{"span 125", 125, map[string][2]uint16{"a": {10, 4}, "b": {10, 4}, "c": {10, 4}, "far": {40, 1}, "h": {12, 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			line, _ := fakeLine(Config{})
			points := line.Unit(1).Points(regs, tc.maxSpan)
			for name, want := range tc.want {
				if s, c := points[name].Span(); s != want[0] || c != want[1] {
					t.Errorf("Points(maxSpan %d)[%s].Span() = %d+%d, want %d+%d", tc.maxSpan, name, s, c, want[0], want[1])
				}
			}
		})
	}
	synctest.Test(t, func(t *testing.T) {
		line, f := fakeLine(Config{})
		points := line.Unit(1).Points(regs, 4)
		var wg sync.WaitGroup
		got := make([]any, 3)
		for i, name := range []string{"a", "b", "c"} {
			wg.Go(func() {
				v, err := points[name].Read(t.Context())
				if err != nil {
					t.Error(err)
				}
				got[i] = v
			})
		}
		wg.Wait()
		if f.count(1) != 1 {
			t.Fatalf("reading three points of one span made %d transactions, want 1", f.count(1))
		}
		if got[0] != 10.0 || got[2] != 13.0 {
			t.Fatalf("a, c = %v, %v; want 10, 13", got[0], got[2])
		}
	})
}

// TestFailingDeviceDoesNotStarveHealthyOne: a dead unit holds the line for
// at most one timeout per attempt; a healthy unit on the same line gets its
// answer within that timeout (plus its own latency), and the dead unit's
// back-off leaves the line free. After repeated failures the dead unit is
// refused without touching the line.
func TestFailingDeviceDoesNotStarveHealthyOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const timeout = 100 * time.Millisecond
		line, f := fakeLine(Config{Timeout: timeout, Retries: 2, Backoff: 20 * time.Millisecond, BreakerThreshold: 2, BreakerCooldown: 5 * time.Second}, 2)
		dead, healthy := line.Unit(2), line.Unit(1)
		ctx := t.Context()

		deadErr := make(chan error, 1)
		go func() {
			_, err := dead.ReadRegisters(ctx, modbusconf.TableHolding, 0, 1)
			deadErr <- err
		}()
		synctest.Wait() // the dead unit's first attempt holds the line
		for i := range 5 {
			start := time.Now()
			if _, err := healthy.ReadRegisters(ctx, modbusconf.TableHolding, uint16(i), 1); err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d > timeout+f.latency {
				t.Fatalf("healthy read %d took %v with a dead unit on the line, want at most %v", i, d, timeout+f.latency)
			}
		}
		if err := <-deadErr; !errors.Is(err, drivers.ErrTimeout) {
			t.Fatalf("dead unit: %v, want ErrTimeout", err)
		}
		if got := f.count(2); got != 3 {
			t.Fatalf("dead unit: %d attempts, want 1 + 2 retries", got)
		}

		// A second failed call opens the breaker: the next is refused at once.
		dead.ReadRegisters(ctx, modbusconf.TableHolding, 0, 1)
		sent := f.count(2)
		start := time.Now()
		_, err := dead.ReadRegisters(ctx, modbusconf.TableHolding, 0, 1)
		if !errors.Is(err, ErrCircuitOpen) || !errors.Is(err, drivers.ErrUnavailable) || time.Since(start) != 0 || f.count(2) != sent {
			t.Fatalf("after 2 failed calls: %v after %v, %d new attempts; want ErrCircuitOpen at once, none sent", err, time.Since(start), f.count(2)-sent)
		}
		// After the cool-down one trial goes through.
		time.Sleep(5 * time.Second)
		dead.ReadRegisters(ctx, modbusconf.TableHolding, 0, 1)
		if f.count(2) == sent {
			t.Fatal("after the cool-down no trial reached the line")
		}
	})
}

// TestWaitingForTheLineHonoursContext: a caller whose deadline passes while
// another transaction holds the line gives up then, with ErrTimeout.
func TestWaitingForTheLineHonoursContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		line, _ := fakeLine(Config{Timeout: time.Second, BreakerThreshold: 100}, 2)
		done := make(chan struct{})
		defer func() { <-done }()
		go func() {
			defer close(done)
			line.Unit(2).ReadRegisters(t.Context(), modbusconf.TableHolding, 0, 1)
		}()
		synctest.Wait()
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := line.Unit(1).ReadRegisters(ctx, modbusconf.TableHolding, 0, 1)
		if !errors.Is(err, drivers.ErrTimeout) || time.Since(start) != 30*time.Millisecond {
			t.Fatalf("waiting behind a 1s transaction with a 30ms deadline: %v after %v", err, time.Since(start))
		}
	})
}

// TestPerDeviceTimeout: a unit's own timeout bounds its transactions, so a
// dead unit with a short timeout holds the line only that long.
func TestPerDeviceTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		line, f := fakeLine(Config{Timeout: time.Second, BreakerThreshold: 100}, 2)
		dead := line.Unit(2, WithTimeout(20*time.Millisecond))
		done := make(chan error, 1)
		start := time.Now()
		go func() {
			_, err := dead.ReadRegisters(t.Context(), modbusconf.TableHolding, 0, 1)
			done <- err
		}()
		synctest.Wait()
		if _, err := line.Unit(1).ReadRegisters(t.Context(), modbusconf.TableHolding, 0, 1); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != 20*time.Millisecond+f.latency {
			t.Fatalf("healthy read behind a dead unit with a 20ms timeout finished after %v, want %v", d, 20*time.Millisecond+f.latency)
		}
		if err := <-done; !errors.Is(err, drivers.ErrTimeout) {
			t.Fatalf("dead unit: %v", err)
		}
	})
}

// TestAbandonedCallsDoNotResetTheBreaker: a call whose caller gives up says
// nothing about the device, so failures on either side of it still add up.
func TestAbandonedCallsDoNotResetTheBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		line, f := fakeLine(Config{Timeout: 100 * time.Millisecond, BreakerThreshold: 2}, 2)
		dead := line.Unit(2)
		read := func(ctx context.Context) error {
			_, err := dead.ReadRegisters(ctx, modbusconf.TableHolding, 0, 1)
			return err
		}
		read(t.Context())
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
		read(ctx)
		cancel()
		read(t.Context())
		sent := f.count(2)
		if err := read(t.Context()); !errors.Is(err, ErrCircuitOpen) || f.count(2) != sent {
			t.Fatalf("failed, abandoned, failed: next call %v; want ErrCircuitOpen without touching the line", err)
		}
	})
}

// TestImpatientCallerDoesNotFailOthers: when the caller that started a
// shared read gives up, the others still get the answer.
func TestImpatientCallerDoesNotFailOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		line, f := fakeLine(Config{})
		f.latency = 50 * time.Millisecond
		u := line.Unit(1)
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
		defer cancel()
		first := make(chan error, 1)
		go func() {
			_, err := u.ReadRegisters(ctx, modbusconf.TableHolding, 0, 1)
			first <- err
		}()
		synctest.Wait()
		b, err := u.ReadRegisters(t.Context(), modbusconf.TableHolding, 0, 1)
		if err != nil || len(b) != 2 {
			t.Fatalf("patient caller: % x, %v; want the shared answer", b, err)
		}
		if err := <-first; !errors.Is(err, drivers.ErrTimeout) {
			t.Fatalf("impatient caller: %v, want ErrTimeout", err)
		}
		if f.count(1) != 1 {
			t.Fatalf("%d transactions, want 1 shared", f.count(1))
		}
	})
}

// TestFairTurns: a unit that reads in a tight loop does not keep the line
// from another unit; turns are granted first come first served, so the
// other waits for at most the transaction in progress.
func TestFairTurns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		line, f := fakeLine(Config{})
		busy, other := line.Unit(1), line.Unit(2)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := range 20 {
				busy.ReadRegisters(t.Context(), modbusconf.TableHolding, uint16(i), 1)
			}
		}()
		synctest.Wait()
		start := time.Now()
		if _, err := other.ReadRegisters(t.Context(), modbusconf.TableHolding, 0, 1); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d > 2*f.latency {
			t.Fatalf("a read behind a unit reading in a loop took %v, want at most %v (one transaction ahead)", d, 2*f.latency)
		}
		<-done
	})
}
