package serial_test

import (
	bugst "go.bug.st/serial"

	"github.com/promcp/promcp-device/drivers/serial"
)

// go.bug.st/serial's ports are what a Line reads lines from.
var _ serial.Port = bugst.Port(nil)
