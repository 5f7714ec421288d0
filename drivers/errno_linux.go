package drivers

import "syscall"

// ErrnoRemoteIO is the errno Linux i2c-dev returns when a device does not
// acknowledge (EREMOTEIO). Simulated buses return it too, so that [Classify]
// sees on the simulator what it sees on hardware.
const ErrnoRemoteIO = syscall.EREMOTEIO
