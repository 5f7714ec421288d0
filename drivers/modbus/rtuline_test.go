package modbus_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/drivers"
	"github.com/promcp/promcp-device/drivers/modbus"
	"github.com/promcp/promcp-device/drivers/modbus/modbusconf"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/sim"
)

// TestRTULateRepliesNeverMisPaired: on a real pseudo-terminal, a simulated
// slave answers every 7th request only after the master has given up on
// it (1.5 times the master's timeout), and the late answer still goes out
// on the line. Six readers ask for one register each (all replies have the
// same shape: unit 1, function 3, 7 bytes) and two writers write their own
// register, concurrently. Every read that succeeds returns the value of the
// register it asked for, and every write that succeeds is in the slave:
// no reply is paired with the wrong request. Before the fix, the first
// late reply was taken for the next request, and the line stayed one reply
// behind.
func TestRTULateRepliesNeverMisPaired(t *testing.T) {
	const (
		regs    = 8
		timeout = 200 * time.Millisecond
		late    = 300 * time.Millisecond // after the timeout, within twice it
		rounds  = 25
	)
	d := manifests.Device{Name: "slow", Bus: "line", Model: manifests.ModelModbus, UnitID: 1, MaxSpan: 1}
	for i := range regs + 2 {
		d.ModbusRegisters = append(d.ModbusRegisters, manifests.ModbusRegister{Name: fmt.Sprintf("r%d", i),
			Table: modbusconf.TableHolding, Address: uint16(i), Type: modbusconf.DataUint16, ByteOrder: modbusconf.OrderABCD,
			Bit: -1, Scale: 1, Writable: true})
	}
	m := &manifests.Manifest{Gateway: "t", Buses: []manifests.Bus{{Name: "line", Kind: manifests.BusModbusRTU}}, Devices: []manifests.Device{d}}
	w, err := sim.New(m, clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
	if err != nil {
		t.Fatal(err)
	}
	slave, _ := w.ModbusSlave("slow")
	for i := range regs {
		slave.Set(fmt.Sprintf("r%d", i), float64(1000+i))
	}
	line, _ := serve(t, w, manifests.BusModbusRTU, modbus.Config{Timeout: timeout, Retries: -1, BreakerThreshold: 1 << 20})
	slave.SetLate(7, late)
	unit := line.Unit(1)
	ctx := t.Context()

	var reads, good, wrong, writes, timeouts atomic.Int64
	var wg sync.WaitGroup
	for r := range 6 {
		wg.Go(func() {
			for i := range rounds {
				reg := uint16((r + i*3) % regs)
				b, err := unit.ReadRegisters(ctx, modbusconf.TableHolding, reg, 1)
				reads.Add(1)
				switch {
				case errors.Is(err, drivers.ErrTimeout):
					timeouts.Add(1)
				case err != nil:
					t.Errorf("read holding %d: %v", reg, err)
				case binary.BigEndian.Uint16(b) != 1000+reg:
					wrong.Add(1)
					t.Errorf("read holding %d returned %d, the value of another register", reg, binary.BigEndian.Uint16(b))
				default:
					good.Add(1)
				}
			}
		})
	}
	for wr := range 2 {
		reg := uint16(regs + wr)
		name := fmt.Sprintf("r%d", reg)
		wg.Go(func() {
			for i := range rounds {
				v := uint16(100*(wr+1) + i)
				err := unit.WriteRegisters(ctx, reg, binary.BigEndian.AppendUint16(nil, v))
				writes.Add(1)
				switch {
				case errors.Is(err, drivers.ErrTimeout):
					timeouts.Add(1)
				case err != nil:
					t.Errorf("write %d to holding %d: %v", v, reg, err)
				default:
					if got, _ := slave.Get(name); got != float64(v) {
						wrong.Add(1)
						t.Errorf("write %d to holding %d was confirmed, but the slave holds %v", v, reg, got)
					}
				}
			}
		})
	}
	wg.Wait()
	st := line.Stats()
	t.Logf("%d reads (%d right, %d wrong), %d writes, %d timeouts; slave answered %d of %d requests late; %d transactions, %d bytes discarded",
		reads.Load(), good.Load(), wrong.Load(), writes.Load(), timeouts.Load(), slave.Late(), slave.Requests(), st.Transactions, st.Discarded)
	if slave.Late() == 0 || timeouts.Load() == 0 {
		t.Fatalf("no late answer or no timeout: the test did not exercise a late reply")
	}
	if st.Discarded == 0 {
		t.Errorf("late replies came, but the line discarded nothing")
	}
	if good.Load() < reads.Load()/2 {
		t.Errorf("only %d of %d reads succeeded", good.Load(), reads.Load())
	}
}
