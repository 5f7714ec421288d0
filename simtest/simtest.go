// Package simtest serves the bench manifests that tests share on the
// simulator, in the periph …test style: a test names a bench, gets the
// parsed manifest, a simulated world on its clock, and the capability set
// over the world's buses.
//
// The benches are in testdata:
//
//   - i2c-bench.yml: an SHT3x and a register-map light sensor on I²C, a
//     pump relay on GPIO;
//   - fault-bench.yml: i2c-bench with a door switch and health rules on
//     every reading, for quality and fault tests;
//   - modbus-bench.yml: an energy meter on Modbus TCP and a VFD on RTU
//     over TCP, short timeouts, no retries;
//   - meter-bench.yml: the energy meter alone, for benchmarks;
//   - drive.yml: a drive's holding registers and coil on Modbus TCP.
package simtest

import (
	"context"
	"embed"
	"net"
	"os"
	"path/filepath"
	"testing"

	pgpio "periph.io/x/conn/v3/gpio"
	pi2c "periph.io/x/conn/v3/i2c"
	pspi "periph.io/x/conn/v3/spi"

	"github.com/promcp/promcp-device/capabilities"
	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/drivers/modbus"
	"github.com/promcp/promcp-device/drivers/sysfs"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/manifests/manifesttest"
	"github.com/promcp/promcp-device/sim"
)

//go:embed testdata/*.yml
var benches embed.FS

// Manifest parses the bench manifest name (a file in testdata).
func Manifest(tb testing.TB, name string) *manifests.Manifest {
	tb.Helper()
	b, err := benches.ReadFile("testdata/" + name)
	if err != nil {
		tb.Fatal(err)
	}
	return manifesttest.Parse(tb, name, string(b))
}

// World simulates m's devices on clk.
func World(tb testing.TB, m *manifests.Manifest, clk clock.Clock) *sim.World {
	tb.Helper()
	w, err := sim.New(m, clk)
	if err != nil {
		tb.Fatal(err)
	}
	return w
}

// Hardware is the simulated world's I²C buses and GPIO pins as the
// capability set opens them.
func Hardware(w *sim.World) capabilities.HardwareFuncs {
	return capabilities.HardwareFuncs{
		I2C: func(ctx context.Context, b manifests.Bus) (pi2c.BusCloser, error) { return w.I2C(ctx, b.Name) },
		Pin: func(ctx context.Context, d manifests.Device) (pgpio.PinIO, error) { return w.Pin(ctx, d.Pin) },
	}
}

// SPI adds to hw the simulated spi buses of w.
func SPI(w *sim.World, hw capabilities.HardwareFuncs) capabilities.HardwareFuncs {
	hw.SPI = func(ctx context.Context, b manifests.Bus) (pspi.PortCloser, error) { return w.SPI(ctx, b.Name) }
	return hw
}

// Sysfs adds to hw the simulated kernel files of w's onewire and pwm
// buses, each in a directory named as the bus under root (a test's
// temporary directory).
func Sysfs(w *sim.World, hw capabilities.HardwareFuncs, root string) capabilities.HardwareFuncs {
	hw.Sysfs = func(ctx context.Context, b manifests.Bus) (sysfs.FS, error) {
		dir := filepath.Join(root, b.Name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		return w.Sysfs(ctx, b, dir)
	}
	return hw
}

// Lines starts w's simulated Modbus slaves and serial lines on loopback
// (stopped when the test ends) and returns hw with the dialer and the
// serial ports that reach them.
func Lines(tb testing.TB, w *sim.World, hw capabilities.HardwareFuncs) capabilities.HardwareFuncs {
	tb.Helper()
	ep, err := w.StartLines()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ep.Close() })
	hw.TCP = func(ctx context.Context, b manifests.Bus) (net.Conn, error) {
		addr, _ := ep.Address(b.Name)
		return modbus.DialerTCP(addr)(ctx)
	}
	hw.Serial = ep.OpenPort
	return hw
}

// Open opens m's capability set over hw, closed when the test ends.
func Open(tb testing.TB, m *manifests.Manifest, hw capabilities.HardwareFuncs, opts capabilities.Options) *capabilities.Set {
	tb.Helper()
	set, err := capabilities.Open(tb.Context(), m, hw, opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { set.Close() })
	return set
}
