// Package i2c drives devices on an I²C bus: a per-bus transaction scheduler
// ([Bus]), the Sensirion SHT3x temperature and humidity sensor ([SHT3x]) and a
// generic register-map device ([Registers]) with its codec ([Decode],
// [Encode]). The register map's types are package i2cconf
// (drivers/i2c/i2cconf), which imports no hardware module.
//
// Drivers consume periph.io's i2c.Bus (imported here as pi2c). They never own
// the bus: whoever opened the pi2c.BusCloser (host.Host or the simulator)
// closes it, after the drivers are done with it.
//
// # Context and timeouts
//
// periph's Tx takes no context and cannot be cancelled, so [Bus.Tx] bridges:
// it waits for the bus's turn under ctx, never starts a transaction once ctx
// is done, and bounds each transaction by min(bus timeout, ctx deadline). A
// transaction that overruns returns an error wrapping drivers.ErrTimeout at
// once, while the bus stays held until the stuck transaction really returns,
// so a hung bus is never driven twice.
//
// # Errors
//
// Every error names the bus and the address ("i2c 1 addr 0x44: ...") and is
// classified with drivers.Classify: branch on drivers.ErrTimeout,
// drivers.ErrNACK, drivers.ErrCRC, and this package's [ErrUnknownRegister],
// [ErrReadOnly] and [ErrOutOfRange] with errors.Is.
//
// # Datasheets
//
// SHT3x-DIS: https://sensirion.com/media/documents/213E6A3B/63A5A569/Datasheet_SHT3x_DIS.pdf
//
// # Concurrency
//
// [Bus], [SHT3x] and [Registers] are safe for concurrent use. Transactions on
// one Bus run one at a time; an SHT3x measurement (command, wait, read) is
// not interleaved with another measurement of the same sensor.
package i2c
