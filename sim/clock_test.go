package sim_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/promcp/promcp-device/sim"
)

func TestScaledClock(t *testing.T) {
	for _, tc := range []struct {
		scale float64
		want  time.Duration
	}{
		{60, time.Minute},
		{1, time.Second},
		{0, time.Second},
		{-5, time.Second},
		{0.5, 500 * time.Millisecond},
	} {
		synctest.Test(t, func(t *testing.T) {
			c := sim.NewScaledClock(tc.scale)
			start := c.Now()
			<-time.After(time.Second)
			if got := c.Now().Sub(start); got != tc.want {
				t.Errorf("NewScaledClock(%v): %v after 1s, want %v", tc.scale, got, tc.want)
			}
		})
	}
}
