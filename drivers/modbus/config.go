package modbus

import "time"

// DefaultTimeout bounds a transaction on a line configured with no timeout.
const DefaultTimeout = 100 * time.Millisecond
