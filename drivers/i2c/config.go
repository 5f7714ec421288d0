package i2c

import (
	"time"

	"github.com/promcp/promcp-device/drivers/i2c/i2cconf"
)

// DefaultTimeout bounds a transaction on a bus created with no timeout.
const DefaultTimeout = 100 * time.Millisecond

// BigEndian is package i2cconf's, which holds the register map's types
// (i2cconf.Register, i2cconf.RegType, i2cconf.ByteOrder) and imports no
// hardware module, under the name that callers outside the drivers still
// use.
//
// Deprecated: use i2cconf.BigEndian.
const BigEndian = i2cconf.BigEndian
