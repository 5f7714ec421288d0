package modbus_test

import (
	"context"
	"fmt"
	"time"

	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/drivers/modbus"
	"github.com/promcp/promcp-device/drivers/modbus/modbusconf"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/sim"
)

// A simulated energy meter on loopback Modbus TCP, read and written through
// a Line exactly as a real one on the plant LAN would be.
func Example() {
	m, _ := manifests.Parse("meter.yml", []byte(`
version: 1
gateway: example
buses: [{name: lan, kind: modbus_tcp, address: "192.0.2.1:502"}]
devices:
  - name: meter
    bus: lan
    model: modbus
    unit_id: 7
    max_span: 4
    registers:
      - {name: power, table: input, address: 0, type: float32, byte_order: CDAB}
      - {name: energy, table: input, address: 2, type: float32, byte_order: CDAB}
      - {name: ct_ratio, table: holding, address: 10, type: uint16, writable: true}
    sim: {profile: energy_meter}
`))
	w, _ := sim.New(m, clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
	srv, _ := w.ModbusServer("lan")
	addr, _ := srv.ServeLoopback(manifests.BusModbusTCP)
	defer srv.Close()

	line := modbus.NewTCP(modbus.Config{Name: "lan", Timeout: time.Second}, modbus.DialerTCP(addr), nil)
	defer line.Close()
	points := line.Unit(7).Points(m.Devices[0].ModbusRegisters, m.Devices[0].MaxSpan)
	ctx := context.Background()

	power, _ := points["power"].Read(ctx)
	start, count := points["energy"].Span()
	fmt.Printf("power %v W (read with energy: input %d+%d)\n", power, start, count)
	if err := points["ct_ratio"].Write(ctx, 40.0); err != nil {
		fmt.Println(err)
	}
	ratio, _ := points["ct_ratio"].Read(ctx)
	fmt.Println("ct ratio", ratio)
	_, err := line.Unit(7).ReadRegisters(ctx, modbusconf.TableHolding, 99, 1)
	fmt.Println(err)
	// Output:
	// power 150 W (read with energy: input 0+4)
	// ct ratio 40
	// modbus lan unit 7 holding 99+1: modbus exception 2 (illegal data address) to function 3
}
