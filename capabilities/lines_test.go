package capabilities_test

import (
	"errors"
	"testing"
	"time"

	"github.com/promcp/promcp-device/capabilities"
	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/drivers"
	"github.com/promcp/promcp-device/drivers/modbus"
	"github.com/promcp/promcp-device/promcp"
	"github.com/promcp/promcp-device/sim"
	"github.com/promcp/promcp-device/simtest"
)

// openDrive binds the drive manifest to a simulated slave on loopback TCP.
func openDrive(t *testing.T) (*capabilities.Set, *sim.ModbusSlave) {
	t.Helper()
	m := simtest.Manifest(t, "drive.yml")
	w := simtest.World(t, m, clock.NewManual(time.Unix(0, 0)))
	set := simtest.Open(t, m, simtest.Lines(t, w, capabilities.HardwareFuncs{}), capabilities.Options{})
	slave, _ := w.ModbusSlave("vfd")
	return set, slave
}

// TestModbusCapabilities: values keep their capability types through the
// codec both ways, exceptions and timeouts become error readings with the
// driver's class, and a value the register cannot hold never reaches it.
func TestModbusCapabilities(t *testing.T) {
	set, slave := openDrive(t)
	ctx := t.Context()
	w, err := set.TakeWriter()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := set.TakeWriter(); !errors.Is(err, capabilities.ErrWriterTaken) {
		t.Fatalf("a second TakeWriter: %v, want ErrWriterTaken", err)
	}
	get := func(name string) *capabilities.Capability {
		c, ok := set.Get(name)
		if !ok {
			t.Fatalf("no capability %s", name)
		}
		return c
	}
	for _, tc := range []struct {
		name  string
		write any
		want  any
		raw   any
	}{
		{"setpoint", -12.5, -12.5, -12.5},
		{"steps", int64(40000), int64(40000), 40000.0},
		{"run", true, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := get(tc.name)
			if err := w.Write(ctx, c, tc.write); err != nil {
				t.Fatalf("Write(%v): %v", tc.write, err)
			}
			if v, _ := slave.Get(tc.name); v != tc.raw {
				t.Errorf("after Write(%v) the slave holds %v, want %v", tc.write, v, tc.raw)
			}
			if r := c.Read(ctx); r.Quality != promcp.QualityGood || r.Value != tc.want {
				t.Errorf("Read = %v (%T) %s, want %v (%T) good", r.Value, r.Value, r.Quality, tc.want, tc.want)
			}
		})
	}

	// 5000 Hz is 50000 tenths: it does not fit an int16.
	if err := w.Write(ctx, get("setpoint"), 5000.0); !errors.Is(err, modbus.ErrOutOfRange) {
		t.Fatalf("Write(5000 Hz) into an int16 of tenths: %v, want ErrOutOfRange", err)
	}
	if v, _ := slave.Get("setpoint"); v != -12.5 {
		t.Fatalf("a refused write changed the register to %v", v)
	}

	slave.SetException(modbus.ExceptionBusy)
	r := get("steps").ReadWithin(ctx, 0) // a new transaction, not the cached value
	if r.Quality != promcp.QualityError || !errors.Is(r.Err, modbus.ErrBusy) || r.Reason == "" {
		t.Fatalf("busy device: %+v, want an error reading wrapping ErrBusy with a reason", r)
	}
	slave.SetException(0)
	slave.SetSilent(true)
	if r := get("steps").ReadWithin(ctx, 0); !errors.Is(r.Err, drivers.ErrTimeout) {
		t.Fatalf("silent device: %+v, want ErrTimeout", r)
	}
	slave.SetSilent(false)
	if r := get("steps").ReadWithin(ctx, 0); r.Quality != promcp.QualityGood {
		t.Fatalf("after the device answers again: %+v", r)
	}
}
