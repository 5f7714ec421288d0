package modbus

import (
	"time"

	"github.com/promcp/promcp-device/drivers/modbus/modbusconf"
)

// DefaultTimeout bounds a transaction on a line configured with no timeout.
const DefaultTimeout = 100 * time.Millisecond

// The driver's configuration (tables, value types, word orders, register
// maps, serial settings) is package modbusconf, which imports no hardware
// module. These are modbusconf's, under the names that callers outside the
// drivers still use.
//
// Deprecated: use modbusconf.SerialConfig, modbusconf.Parity,
// modbusconf.TableHolding, modbusconf.TableInput and modbusconf.DataBool.
type (
	SerialConfig = modbusconf.SerialConfig
	Parity       = modbusconf.Parity
)

// Deprecated: see SerialConfig.
const (
	TableHolding = modbusconf.TableHolding
	TableInput   = modbusconf.TableInput
	DataBool     = modbusconf.DataBool
)
