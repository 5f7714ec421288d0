//go:build unix

package perf

import (
	"syscall"
	"time"
)

// ProcessCPU is the CPU time (user and system) this process has used: a
// benchmark's CPU per call, unlike its ns/op, does not grow when other
// processes load the machine. 0 when it cannot be read.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
