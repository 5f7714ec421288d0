package gateway_test

import (
	"context"
	"testing"
)

// TestBudgetModbusRead: a Modbus read through the capability with
// maxAge 0 (a bus transaction every call: sampler, coalescing, breaker,
// line, goburrow, the simulated slave over loopback TCP), under a context
// that cannot be cancelled and under one that can, as a client request's.
// The allocations counted are the whole process's, the slave's included.
func TestBudgetModbusRead(t *testing.T) {
	_, _, c := meterBench(t)
	cancellable, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want budget
	}{
		{"background", context.Background(), budgetModbusRead},
		{"cancellable", cancellable, budgetModbusReadCancellable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			read := func() {
				if r := c.ReadWithin(tc.ctx, 0); r.Err != nil {
					t.Fatal(r.Err)
				}
			}
			read()
			n := testing.AllocsPerRun(200, read)
			t.Logf("%.0f allocs/read (race %t)", n, raceEnabled)
			if n > tc.want.allocsNow() {
				t.Errorf("%.0f allocations per read, budget %.0f (race %t)", n, tc.want.allocsNow(), raceEnabled)
			}
		})
	}
}
