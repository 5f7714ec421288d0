// Package drivers opens the host's buses and classifies bus failures.
//
// The device drivers themselves live in sub-packages: [i2c] (a per-bus
// transaction scheduler, the Sensirion SHT3x and a generic register-map
// device) and [gpio] (digital inputs and outputs). They consume periph.io's
// seams (periph.io/x/conn/v3/i2c.Bus and periph.io/x/conn/v3/gpio.PinIO), so
// the same code runs on real hardware, opened here through [Host], and on the
// simulator (package sim). [modbus] schedules Modbus TCP, RTU and
// RTU-over-TCP lines on goburrow/modbus with transporters of its own, and
// [serial] talks to text-line instruments; both run on real sockets and
// serial ports, which the simulator provides on loopback and on ptys.
//
// # Errors
//
// Every failure that callers branch on is classified into one of four
// sentinels: [ErrTimeout], [ErrNACK], [ErrCRC] and [ErrUnavailable]. [Classify]
// translates raw errors from periph and the kernel (syscall.Errno values such
// as EREMOTEIO) into them; the sub-packages call it once per transaction and
// wrap the result with the bus and address, so errors.Is works on every error
// they return.
//
// # Concurrency
//
// [Host] is safe for concurrent use. The buses and pins it returns belong to
// the caller, who closes them.
//
// [i2c]: https://pkg.go.dev/github.com/promcp/promcp-device/drivers/i2c
// [gpio]: https://pkg.go.dev/github.com/promcp/promcp-device/drivers/gpio
// [modbus]: https://pkg.go.dev/github.com/promcp/promcp-device/drivers/modbus
// [serial]: https://pkg.go.dev/github.com/promcp/promcp-device/drivers/serial
package drivers
