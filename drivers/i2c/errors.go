package i2c

import "errors"

// Errors of the register-map device, returned before any bus traffic.
var (
	// ErrUnknownRegister means the name is not in the device's register map.
	ErrUnknownRegister = errors.New("unknown register")
	// ErrReadOnly means the register is not declared writable.
	ErrReadOnly = errors.New("register is read-only")
	// ErrOutOfRange means a value does not fit the register's type (after
	// scale and offset), or is NaN or infinite.
	ErrOutOfRange = errors.New("value out of range")
)
