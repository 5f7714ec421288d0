package capabilities

import (
	"context"
	"fmt"
	"net"

	pgpio "periph.io/x/conn/v3/gpio"
	pi2c "periph.io/x/conn/v3/i2c"
	pspi "periph.io/x/conn/v3/spi"

	"github.com/promcp/promcp-device/drivers"
	"github.com/promcp/promcp-device/drivers/modbus"
	"github.com/promcp/promcp-device/drivers/sysfs"
	"github.com/promcp/promcp-device/manifests"
)

// Hardware opens buses and pins. The host and the simulator implement it.
type Hardware interface {
	// OpenI2C opens the I2C bus the manifest declares. The caller closes it.
	OpenI2C(ctx context.Context, bus manifests.Bus) (pi2c.BusCloser, error)
	// OpenPin returns the pin of a GPIO device.
	OpenPin(ctx context.Context, dev manifests.Device) (pgpio.PinIO, error)
	// DialTCP connects to the address of a modbus_tcp or modbus_rtu_tcp
	// bus. It is called again to reconnect after the peer drops.
	DialTCP(ctx context.Context, bus manifests.Bus) (net.Conn, error)
	// OpenSerial opens the port of a modbus_rtu or serial bus with its
	// settings. The caller closes it.
	OpenSerial(ctx context.Context, bus manifests.Bus) (modbus.Port, error)
}

// SysfsHardware is the Hardware of the buses reached through the kernel's
// attribute files (onewire, pwm). HardwareFuncs implements it with its
// Sysfs function.
type SysfsHardware interface {
	// OpenSysfs returns the attribute files of bus b.
	OpenSysfs(ctx context.Context, b manifests.Bus) (sysfs.FS, error)
}

// SPIHardware is the Hardware of spi buses. HardwareFuncs implements it
// with its SPI function.
type SPIHardware interface {
	// OpenSPI opens the port of bus b. The caller closes it.
	OpenSPI(ctx context.Context, b manifests.Bus) (pspi.PortCloser, error)
}

// HardwareFuncs adapts functions to Hardware. A nil function fails with
// drivers.ErrUnavailable.
type HardwareFuncs struct {
	I2C    func(ctx context.Context, bus manifests.Bus) (pi2c.BusCloser, error)
	Pin    func(ctx context.Context, dev manifests.Device) (pgpio.PinIO, error)
	TCP    func(ctx context.Context, bus manifests.Bus) (net.Conn, error)
	Serial func(ctx context.Context, bus manifests.Bus) (modbus.Port, error)
	// Sysfs returns the kernel attribute files of a onewire or pwm bus.
	Sysfs func(ctx context.Context, bus manifests.Bus) (sysfs.FS, error)
	// SPI opens the port of an spi bus. The caller closes it.
	SPI func(ctx context.Context, bus manifests.Bus) (pspi.PortCloser, error)
}

// DialTCP implements Hardware.
func (h HardwareFuncs) DialTCP(ctx context.Context, bus manifests.Bus) (net.Conn, error) {
	return orUnavailable(ctx, h.TCP, bus, "bus "+bus.Name, "TCP dialer")
}

// OpenSerial implements Hardware.
func (h HardwareFuncs) OpenSerial(ctx context.Context, bus manifests.Bus) (modbus.Port, error) {
	return orUnavailable(ctx, h.Serial, bus, "bus "+bus.Name, "serial ports")
}

// OpenI2C implements Hardware; a nil I2C fails with
// drivers.ErrUnavailable.
func (h HardwareFuncs) OpenI2C(ctx context.Context, bus manifests.Bus) (pi2c.BusCloser, error) {
	return orUnavailable(ctx, h.I2C, bus, "bus "+bus.Name, "I2C buses")
}

// OpenPin implements Hardware; a nil Pin fails with
// drivers.ErrUnavailable.
func (h HardwareFuncs) OpenPin(ctx context.Context, dev manifests.Device) (pgpio.PinIO, error) {
	return orUnavailable(ctx, h.Pin, dev, "device "+dev.Name, "GPIO pins")
}

// OpenSysfs implements SysfsHardware; a nil Sysfs fails with
// drivers.ErrUnavailable.
func (h HardwareFuncs) OpenSysfs(ctx context.Context, b manifests.Bus) (sysfs.FS, error) {
	return orUnavailable(ctx, h.Sysfs, b, "bus "+b.Name, kernelFiles)
}

// OpenSPI implements SPIHardware; a nil SPI fails with
// drivers.ErrUnavailable.
func (h HardwareFuncs) OpenSPI(ctx context.Context, b manifests.Bus) (pspi.PortCloser, error) {
	return orUnavailable(ctx, h.SPI, b, "bus "+b.Name, spiPorts)
}

// What a HardwareFuncs or a Hardware without an extension lacks, in errors.
const (
	kernelFiles = "kernel attribute files"
	spiPorts    = "spi ports"
)

// orUnavailable opens a (a bus or a device, named where in errors) with
// open, or fails with drivers.ErrUnavailable, saying the hardware has no
// what, when open is nil.
func orUnavailable[A, T any](ctx context.Context, open func(context.Context, A) (T, error), a A, where, what string) (T, error) {
	if open == nil {
		var zero T
		return zero, fmt.Errorf("%s: %w: no %s", where, drivers.ErrUnavailable, what)
	}
	return open(ctx, a)
}

// openExtension opens what the bus of device d offers through the
// Hardware extension H (open is H's method), failing with
// drivers.ErrUnavailable when this hardware is no H (it has no what). It
// returns the bus too.
func openExtension[H, T any](ctx context.Context, d manifests.Device, e env, what string, open func(H, context.Context, manifests.Bus) (T, error)) (T, manifests.Bus, error) {
	var zero T
	b, ok := e.bus(d.Bus)
	if !ok {
		return zero, b, fmt.Errorf("bus %q is not declared", d.Bus)
	}
	h, ok := e.hw.(H)
	if !ok {
		return zero, b, fmt.Errorf("bus %s: %w: this hardware has no %s", b.Name, drivers.ErrUnavailable, what)
	}
	t, err := open(h, ctx, b)
	return t, b, err
}
