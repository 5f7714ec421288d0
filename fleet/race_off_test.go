//go:build !race

package fleet_test

import "time"

// testBudget is the fleet can_do budget in tests: PhysMCP's 500 ms.
const testBudget = 500 * time.Millisecond

// raceEnabled says whether the race detector is on.
const raceEnabled = false
