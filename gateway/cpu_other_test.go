//go:build !unix

package gateway_test

import "time"

// processCPU is not measured here: benchmarks report 0 CPU per call.
func processCPU() time.Duration { return 0 }
