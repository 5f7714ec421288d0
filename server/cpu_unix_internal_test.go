//go:build unix

package server

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user and system) this process has used: a
// benchmark's CPU per call, unlike its ns/op, does not grow when other
// processes load the machine.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
