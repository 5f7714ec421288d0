package modbus

import (
	"errors"
	"fmt"

	mb "github.com/goburrow/modbus"

	"github.com/promcp/promcp-device/drivers"
)

// Exception classes: every *ExceptionError unwraps to one of them (or to
// none, for an exception code outside this list).
var (
	ErrIllegalFunction     = errors.New("illegal function")
	ErrIllegalAddress      = errors.New("illegal data address")
	ErrIllegalValue        = errors.New("illegal data value")
	ErrDeviceFailure       = errors.New("server device failure")
	ErrBusy                = errors.New("server device busy")
	ErrGatewayPath         = errors.New("gateway path unavailable")
	ErrGatewayTargetFailed = errors.New("gateway target device failed to respond")
	// ErrCircuitOpen means the device failed too often in a row and is
	// left alone for a while so that it does not starve the line; it is
	// wrapped together with drivers.ErrUnavailable.
	ErrCircuitOpen = errors.New("device backed off after repeated failures")
	// ErrFrame means a response frame was malformed (wrong length, unit
	// or transaction id).
	ErrFrame = errors.New("malformed response")
)

// Exception codes of the Modbus application protocol.
const (
	ExceptionIllegalFunction     byte = 1
	ExceptionIllegalAddress      byte = 2
	ExceptionIllegalValue        byte = 3
	ExceptionDeviceFailure       byte = 4
	ExceptionAcknowledge         byte = 5
	ExceptionBusy                byte = 6
	ExceptionGatewayPath         byte = 10
	ExceptionGatewayTargetFailed byte = 11
)

// ExceptionError is a Modbus exception response: the device understood the
// request and refused it.
type ExceptionError struct {
	Function byte // the request's function code (without the 0x80 bit)
	Code     byte // the exception code
}

func (e *ExceptionError) Error() string {
	name := "exception"
	if s := e.class(); s != nil {
		name = s.Error()
	}
	return fmt.Sprintf("modbus exception %d (%s) to function %d", e.Code, name, e.Function)
}

// Unwrap returns the exception's class sentinel (none for an unlisted
// code) and drivers.ErrDeviceError: an exception is the device's own error
// flag.
func (e *ExceptionError) Unwrap() []error {
	if c := e.class(); c != nil {
		return []error{c, drivers.ErrDeviceError}
	}
	return []error{drivers.ErrDeviceError}
}

func (e *ExceptionError) class() error {
	switch e.Code {
	case ExceptionIllegalFunction:
		return ErrIllegalFunction
	case ExceptionIllegalAddress:
		return ErrIllegalAddress
	case ExceptionIllegalValue:
		return ErrIllegalValue
	case ExceptionDeviceFailure:
		return ErrDeviceFailure
	case ExceptionBusy, ExceptionAcknowledge:
		return ErrBusy
	case ExceptionGatewayPath:
		return ErrGatewayPath
	case ExceptionGatewayTargetFailed:
		return ErrGatewayTargetFailed
	}
	return nil
}

// classify translates goburrow's errors and transport errors into this
// package's and drivers' classes. It is the one place that sees goburrow's
// error types.
func classify(err error) error {
	if err == nil {
		return nil
	}
	if me, ok := errors.AsType[*mb.ModbusError](err); ok {
		return &ExceptionError{Function: me.FunctionCode &^ 0x80, Code: me.ExceptionCode}
	}
	if _, ok := errors.AsType[*ExceptionError](err); ok {
		return err
	}
	for _, s := range []error{drivers.ErrTimeout, drivers.ErrCRC, ErrFrame, drivers.ErrUnavailable} {
		if errors.Is(err, s) {
			return err
		}
	}
	if ne, ok := errors.AsType[interface {
		error
		Timeout() bool
	}](err); ok && ne.Timeout() {
		return fmt.Errorf("%w: %w", drivers.ErrTimeout, err)
	}
	if c := drivers.Classify(err); c != err {
		return c
	}
	if errors.Is(err, errPeer) {
		return err
	}
	// goburrow reports framing problems (length, ids) as plain text errors
	// without a type; everything else it returns is a framing problem.
	return fmt.Errorf("%w: %v", ErrFrame, err)
}

// retryable reports whether a failed transaction may succeed if tried
// again: a timeout, a garbled or malformed frame, a busy device, a dropped
// connection. Other exceptions are answers and are not retried.
func retryable(err error) bool {
	switch {
	case errors.Is(err, ErrBusy):
		return true
	case errors.Is(err, ErrCircuitOpen):
		return false
	}
	if _, ok := errors.AsType[*ExceptionError](err); ok {
		return false
	}
	return true
}

// errPeer marks transport errors on the connection or port (reset, closed,
// refused): the device or the network, not the frame.
var errPeer = errors.New("connection")
