package i2c

import "time"

// DefaultTimeout bounds a transaction on a bus created with no timeout.
const DefaultTimeout = 100 * time.Millisecond
