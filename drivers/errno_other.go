//go:build !linux

package drivers

import "syscall"

// ErrnoRemoteIO is the errno Linux i2c-dev returns when a device does not
// acknowledge (EREMOTEIO, 121 on Linux). This platform has no such constant;
// the value stands in for it so that simulated buses, and [Classify], behave
// as on Linux.
const ErrnoRemoteIO = syscall.Errno(121)
