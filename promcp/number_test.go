package promcp_test

import (
	"testing"

	"github.com/promcp/promcp-device/promcp"
)

// Number takes every Go number a read or do_* value can be, and nothing
// else.
func TestNumber(t *testing.T) {
	numbers := map[any]float64{
		21.5: 21.5, float32(0.5): 0.5, int(-3): -3, int64(-1 << 40): -1 << 40,
		int32(-70000): -70000, uint16(65535): 65535, uint32(4000000000): 4000000000, uint64(1 << 50): 1 << 50,
	}
	for v, want := range numbers {
		if f, ok := promcp.Number(v); !ok || f != want {
			t.Errorf("Number(%T %v) = %v, %t; want %v, true", v, v, f, ok, want)
		}
	}
	for _, v := range []any{true, "21.5", nil} {
		if f, ok := promcp.Number(v); ok {
			t.Errorf("Number(%T %v) = %v, true; want false", v, v, f)
		}
	}
}
