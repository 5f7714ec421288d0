package idempotency_test

import (
	"testing"

	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/idempotency"
	"github.com/promcp/promcp-device/idempotency/storetest"
)

var _ idempotency.Store = (*idempotency.Memory)(nil)

func TestMemory(t *testing.T) {
	storetest.Run(t, func(t *testing.T, clk *clock.Manual) idempotency.Store {
		return idempotency.NewMemory(storetest.TTL, clk)
	})
}
