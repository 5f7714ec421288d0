package promcp_test

import (
	"testing"

	"github.com/promcp/promcp-device/promcp"
)

// Number takes every Go number a read or do_* value can be, and nothing
// else.
func TestNumber(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want float64
		ok   bool
	}{
		{21.5, 21.5, true},
		{float32(0.5), 0.5, true},
		{int(-3), -3, true},
		{int64(-1 << 40), -1 << 40, true},
		{int32(-70000), -70000, true},
		{uint16(65535), 65535, true},
		{uint32(4000000000), 4000000000, true},
		{uint64(1 << 50), 1 << 50, true},
		{true, 0, false},
		{"21.5", 0, false},
		{nil, 0, false},
	} {
		f, ok := promcp.Number(tc.v)
		if f != tc.want || ok != tc.ok {
			t.Errorf("Number(%T %v) = %v, %t; want %v, %t", tc.v, tc.v, f, ok, tc.want, tc.ok)
		}
	}
}
