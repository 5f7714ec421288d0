package i2c

import (
	"time"

	"github.com/promcp/promcp-device/drivers/i2c/i2cconf"
)

// DefaultTimeout bounds a transaction on a bus created with no timeout.
const DefaultTimeout = 100 * time.Millisecond

// The register map's types are package i2cconf's, which imports no hardware
// module; their values are i2cconf's constants (i2cconf.RegInt16,
// i2cconf.BigEndian, ...).
type (
	RegType   = i2cconf.RegType
	ByteOrder = i2cconf.ByteOrder
	Register  = i2cconf.Register
)

// BigEndian is i2cconf's, under the name that callers outside the drivers
// still use.
//
// Deprecated: use i2cconf.BigEndian.
const BigEndian = i2cconf.BigEndian
