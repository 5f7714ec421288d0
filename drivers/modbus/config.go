package modbus

import (
	"time"

	"github.com/promcp/promcp-device/drivers/modbus/modbusconf"
)

// DefaultTimeout bounds a transaction on a line configured with no timeout.
const DefaultTimeout = 100 * time.Millisecond

// The configuration types are package modbusconf's, which imports no
// hardware module; their values are modbusconf's constants
// (modbusconf.TableHolding, modbusconf.DataFloat32, ...).
type (
	Table        = modbusconf.Table
	DataType     = modbusconf.DataType
	WordOrder    = modbusconf.WordOrder
	Register     = modbusconf.Register
	Parity       = modbusconf.Parity
	RS485        = modbusconf.RS485
	SerialConfig = modbusconf.SerialConfig
)

// TableHolding, TableInput and DataBool are modbusconf's, under the names
// that callers outside the drivers still use.
//
// Deprecated: use modbusconf.TableHolding, modbusconf.TableInput and
// modbusconf.DataBool.
const (
	TableHolding = modbusconf.TableHolding
	TableInput   = modbusconf.TableInput
	DataBool     = modbusconf.DataBool
)
