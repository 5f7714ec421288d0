package modbus

import (
	bugst "go.bug.st/serial"
)

// The seams and their implementations.
var (
	_ Port      = bugst.Port(nil)
	_ transport = (*streamTransport)(nil)
	_ transport = (*serialTransport)(nil)
	_ transport = (*fakeTransport)(nil)
)
