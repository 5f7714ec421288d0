// Package modbus puts Modbus devices on a scheduled line: Modbus TCP (MBAP),
// Modbus RTU on a serial port (RS-485 or RS-232), and RTU frames over TCP
// as serial device servers carry them. The protocol (function codes 1, 2,
// 3, 4, 5, 6, 15, 16 and their framing) is goburrow/modbus, imported as mb
// and reached only through its NewClient2 seam with transporters of our
// own: they take a deadline, redial a dropped TCP connection, keep the RTU
// inter-frame silence, check the CRC, and drive RS-485 direction (the
// kernel's TIOCSRS485 mode or RTS toggling) when the adapter needs it.
//
// RTU frames carry no transaction id, so an RTU transport takes only the
// reply whose unit, function (or exception) and length fit the request in
// flight (a write's reply must repeat what was written) and discards other
// frames; it flushes stale input before each request and, after a timeout
// or a stray frame, drains the line until it has been silent for the
// inter-frame gap. After a timeout, the next request to the same unit is
// held back, the line draining, until as long again as the request was
// given has passed, so that a late reply is not taken for its reply.
// [Stats].Discarded counts the bytes thrown away.
//
// Specifications: Modbus Application Protocol V1.1b3 and Modbus over Serial
// Line V1.02, https://modbus.org/specs.php.
//
// # Configuration
//
// The register maps, tables, value types, word orders and serial settings
// are package modbusconf (drivers/modbus/modbusconf), which imports no
// hardware module, so that a manifest or a tool can describe a device
// without linking this driver.
//
// # Units and addresses
//
// Addresses are 0-based PDU addresses (holding register 40001 is holding 0).
// Registers are 16 bits, sent big endian; multi-register values follow a
// modbusconf.WordOrder. [Codec] converts between registers and raw values as
// pure functions; [Engineering] and [Codec.Raw] apply scale and offset.
//
// # Errors
//
// Errors name the line, the unit and the registers ("modbus rs485 unit 1
// holding 0+2: ...") and wrap one class: an [*ExceptionError] (unwrapping
// to ErrIllegalFunction, ErrIllegalAddress, ErrIllegalValue,
// ErrDeviceFailure, ErrBusy, ErrGatewayPath or ErrGatewayTargetFailed),
// drivers.ErrTimeout, drivers.ErrCRC, ErrFrame, or drivers.ErrUnavailable
// with ErrCircuitOpen. goburrow's error types never leave the package.
//
// # Concurrency
//
// A [Line] and its [Unit]s and [Point]s are safe for concurrent use. One
// transaction is on the line at a time, granted first come first served
// under the caller's context; each is bounded by min(timeout, ctx
// deadline). Failed transactions are retried with back-off (the line is
// free while a unit backs off); a unit whose calls keep failing is refused
// for a cool-down without touching the line, so it cannot starve the
// others. Identical concurrent reads share one transaction, and the points
// of a span (adjacent registers, see [Unit.Points]) are read together.
// There is no cache: a read after a read goes to the device.
package modbus
