package drivers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
)

// Classes of bus failure. Errors returned by this module's drivers wrap
// exactly one of them when the failure has a known class; branch with
// errors.Is.
var (
	// ErrTimeout means a transaction did not finish in time: the bus timeout
	// or the caller's deadline expired first.
	ErrTimeout = errors.New("timeout")
	// ErrNACK means the device did not acknowledge: it is absent, powered
	// off, at another address, or busy (an SHT3x NACKs reads while it
	// measures).
	ErrNACK = errors.New("device did not acknowledge")
	// ErrCRC means the data arrived with a checksum that does not match.
	ErrCRC = errors.New("checksum mismatch")
	// ErrUnavailable means a bus or pin could not be opened.
	ErrUnavailable = errors.New("cannot open")
	// ErrDeviceError means the device answered with an error flag of its
	// own, such as a Modbus exception response: it is there, and says it
	// cannot do what was asked.
	ErrDeviceError = errors.New("device reported an error")
)

// Classify maps a raw error from a bus library or the kernel to one of the
// sentinels, wrapping the original so that both stay visible to errors.Is:
//
//   - syscall.EREMOTEIO and syscall.ENXIO (what Linux i2c-dev returns when
//     no device acknowledges) become [ErrNACK];
//   - syscall.ETIMEDOUT and context.DeadlineExceeded become [ErrTimeout].
//
// Errors that already wrap a sentinel, and errors of no known class
// (context.Canceled among them), are returned unchanged; nil stays nil.
//
// periph's Linux I2C driver formats the errno with %v, which drops it from
// the error chain; for those errors only, Classify falls back to matching the
// errno's message at the end of the text. This is the one place in the module
// that looks at an error's text.
func Classify(err error) error {
	if err == nil {
		return nil
	}
	for _, s := range [...]error{ErrTimeout, ErrNACK, ErrCRC, ErrUnavailable} {
		if errors.Is(err, s) {
			return err
		}
	}
	switch {
	case isErrno(err, ErrnoRemoteIO), isErrno(err, syscall.ENXIO):
		return fmt.Errorf("%w: %w", ErrNACK, err)
	case isErrno(err, syscall.ETIMEDOUT), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%w: %w", ErrTimeout, err)
	}
	return err
}

// isErrno reports whether err wraps errno, or, when err wraps no
// syscall.Errno at all, whether its text ends with errno's message.
func isErrno(err error, errno syscall.Errno) bool {
	if errors.Is(err, errno) {
		return true
	}
	var other syscall.Errno
	if errors.As(err, &other) {
		return false
	}
	return strings.HasSuffix(err.Error(), errno.Error())
}

// ErrNoMQTT is the refusal of a binary built with -tags nomqtt: an mqtt bus
// or device, or the simulator's broker, named where it is asked for.
var ErrNoMQTT = errors.New("this binary was built without MQTT; rebuild without -tags nomqtt")
