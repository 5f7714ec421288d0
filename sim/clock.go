package sim

import (
	"time"

	"github.com/promcp/promcp-device/clock"
)

// Clock tells the simulated time and waits on it.
type Clock = clock.Clock

// ManualClock is the clock that moves only when told to: [clock.Manual].
type ManualClock = clock.Manual

// NewManualClock returns a ManualClock reading start.
func NewManualClock(start time.Time) *ManualClock { return clock.NewManual(start) }

// ScaledClock is the clock that runs faster than real time: [clock.Scaled].
type ScaledClock = clock.Scaled

// NewScaledClock returns [clock.NewScaled](scale).
func NewScaledClock(scale float64) *ScaledClock { return clock.NewScaled(scale) }

// NewScaledClockAt returns [clock.NewScaledAt](origin, scale).
func NewScaledClockAt(origin time.Time, scale float64) *ScaledClock {
	return clock.NewScaledAt(origin, scale)
}
