package modbus_test

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/promcp/promcp-device/drivers"
	"github.com/promcp/promcp-device/drivers/modbus"
	"github.com/promcp/promcp-device/drivers/modbus/modbusconf"
	"github.com/promcp/promcp-device/manifests"
)

var kinds = []manifests.BusKind{manifests.BusModbusTCP, manifests.BusModbusRTUTCP, manifests.BusModbusRTU}

// sample returns a test value of type t that survives the type exactly.
func sample(t modbusconf.DataType) float64 {
	switch t {
	case modbusconf.DataInt16:
		return -12345
	case modbusconf.DataUint16:
		return 54321
	case modbusconf.DataInt32:
		return -123456789
	case modbusconf.DataUint32:
		return 3456789012
	case modbusconf.DataInt64:
		return -1234567890123
	case modbusconf.DataUint64:
		return 9876543210987
	case modbusconf.DataFloat32:
		return float64(float32(123.456))
	}
	return math.Pi * 1e10
}

// TestReadWriteEveryCodec sets each register in the simulated slave and
// reads it through the driver, then writes through the driver and checks
// the slave, over each transport.
func TestReadWriteEveryCodec(t *testing.T) {
	for _, k := range kinds {
		t.Run(string(k), func(t *testing.T) {
			w, m := world(t, k)
			line, _ := serve(t, w, k, modbus.Config{})
			slave, _ := w.ModbusSlave("dev1")
			unit := line.Unit(1)
			points := unit.Points(m.Devices[0].ModbusRegisters, m.Devices[0].MaxSpan)
			ctx := t.Context()
			for _, typ := range dataTypes {
				for _, o := range orders {
					name := fmt.Sprintf("%s_%s", typ, o)
					want := sample(typ)
					if err := slave.Set(name, want); err != nil {
						t.Fatal(err)
					}
					got, err := points[name].Read(ctx)
					if err != nil || got != want {
						t.Errorf("Read(%s) = %v, %v; want %v", name, got, err, want)
					}
					if err := points[name].Write(ctx, -want/2+1); err != nil && !errors.Is(err, modbus.ErrOutOfRange) {
						t.Errorf("Write(%s): %v", name, err)
					} else if err == nil {
						back, _ := slave.Get(name)
						if back != math.Round(-want/2+1) && back != -want/2+1 && back != float64(float32(-want/2+1)) {
							t.Errorf("after Write(%s, %v) the slave holds %v", name, -want/2+1, back)
						}
					}
				}
			}
			if err := points["scaled"].Write(ctx, 21.5); err != nil {
				t.Fatal(err)
			}
			if v, _ := slave.Get("scaled"); math.Abs(v.(float64)-21.5) > 1e-9 {
				t.Errorf("scaled register holds %v after writing 21.5", v)
			}
			if v, err := points["scaled"].Read(ctx); err != nil || math.Abs(v.(float64)-21.5) > 1e-9 {
				t.Errorf("Read(scaled) = %v, %v; want 21.5", v, err)
			}
			slave.Set("label", "FAN-01")
			if v, err := points["label"].Read(ctx); v != "FAN-01" || err != nil {
				t.Errorf("Read(label) = %q, %v", v, err)
			}
			slave.Set("status_bit3", true)
			slave.Set("door", true)
			for _, name := range []string{"status_bit3", "door"} {
				if v, err := points[name].Read(ctx); v != true || err != nil {
					t.Errorf("Read(%s) = %v, %v; want true", name, v, err)
				}
			}
			if err := points["relay"].Write(ctx, true); err != nil {
				t.Fatal(err)
			}
			if v, _ := slave.Get("relay"); v != true {
				t.Errorf("coil after WriteCoil(true) = %v", v)
			}
			if v, err := points["relay"].Read(ctx); v != true || err != nil {
				t.Errorf("Read(relay) = %v, %v", v, err)
			}
			if err := unit.WriteCoils(ctx, 0, []bool{false}); err != nil {
				t.Fatalf("WriteCoils (FC15): %v", err)
			}
			if v, _ := slave.Get("relay"); v != false {
				t.Errorf("coil after WriteCoils(false) = %v", v)
			}
		})
	}
}

// TestFaults: exceptions become *ExceptionError with their class, a silent
// slave a timeout, a garbled CRC ErrCRC, and the line recovers each time.
func TestFaults(t *testing.T) {
	for _, k := range kinds {
		t.Run(string(k), func(t *testing.T) {
			w, m := world(t, k)
			line, _ := serve(t, w, k, modbus.Config{Retries: 1, BreakerThreshold: 100})
			slave, _ := w.ModbusSlave("dev1")
			points := line.Unit(1).Points(m.Devices[0].ModbusRegisters, 1)
			p := points["uint16_ABCD"]
			ctx := t.Context()
			for _, tc := range []struct {
				code byte
				want error
			}{
				{modbus.ExceptionIllegalFunction, modbus.ErrIllegalFunction},
				{modbus.ExceptionIllegalAddress, modbus.ErrIllegalAddress},
				{modbus.ExceptionIllegalValue, modbus.ErrIllegalValue},
				{modbus.ExceptionDeviceFailure, modbus.ErrDeviceFailure},
				{modbus.ExceptionBusy, modbus.ErrBusy},
				{modbus.ExceptionGatewayPath, modbus.ErrGatewayPath},
				{modbus.ExceptionGatewayTargetFailed, modbus.ErrGatewayTargetFailed},
			} {
				slave.SetException(tc.code)
				_, err := p.Read(ctx)
				ex, ok := errors.AsType[*modbus.ExceptionError](err)
				if !errors.Is(err, tc.want) || !ok || ex.Code != tc.code || ex.Function != 3 {
					t.Errorf("exception %d: Read error = %v, want *ExceptionError{3, %d} wrapping %v", tc.code, err, tc.code, tc.want)
				}
			}
			slave.SetException(0)

			line2, _ := serve(t, w, k, modbus.Config{Retries: 0, Timeout: 50 * time.Millisecond, BreakerThreshold: 100})
			p2 := line2.Unit(1).Points(m.Devices[0].ModbusRegisters, 1)["uint16_ABCD"]
			faultThenRecovery(t, p2, slave.SetSilent, drivers.ErrTimeout, "a silent slave")
			if k != manifests.BusModbusTCP {
				faultThenRecovery(t, p, slave.SetGarbleCRC, drivers.ErrCRC, "a garbled CRC")
			}
			if k != manifests.BusModbusRTU {
				// A connection the peer dropped while idle is redialled
				// within the same transaction, even with no retries.
				line0, srv0 := serve(t, w, k, modbus.Config{Retries: 0})
				q := line0.Unit(1).Points(m.Devices[0].ModbusRegisters, 1)["uint16_ABCD"]
				if _, err := q.Read(ctx); err != nil {
					t.Fatal(err)
				}
				srv0.DropConnections()
				before := line0.Stats()
				if _, err := q.Read(ctx); err != nil {
					t.Errorf("read after the peer dropped the connection: %v", err)
				}
				if got := line0.Stats().Transactions - before.Transactions; got != 1 {
					t.Errorf("read after a drop took %d transactions, want 1 (redial inside it)", got)
				}
			}
		})
	}
}

// faultThenRecovery switches a fault of the slave on, expects p's read to
// fail with want, switches it off and expects the next read to succeed.
func faultThenRecovery(t *testing.T, p *modbus.Point, fault func(bool), want error, what string) {
	t.Helper()
	fault(true)
	if _, err := p.Read(t.Context()); !errors.Is(err, want) {
		t.Errorf("%s: Read error = %v, want %v", what, err, want)
	}
	fault(false)
	if _, err := p.Read(t.Context()); err != nil {
		t.Errorf("after %s: %v", what, err)
	}
}
