package gateway_test

import (
	"context"
	"encoding/json"
	"net"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/promcp/promcp-device/capabilities"
	"github.com/promcp/promcp-device/drivers/modbus"
	"github.com/promcp/promcp-device/gateway"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/promcp"
	"github.com/promcp/promcp-device/server"
	"github.com/promcp/promcp-device/sim"
)

// modbusBench has an energy meter on Modbus TCP and a VFD on RTU over TCP
// (so that a garbled CRC can be seen), served by simulated slaves on
// loopback sockets. The simulator's physics run on a manual clock; bus
// timeouts are real, and short.
const modbusBench = `
version: 1
gateway: bench-2
buses:
  - {name: plant, kind: modbus_tcp, address: "127.0.0.1:502", timeout: 150ms, retries: 0}
  - {name: line, kind: modbus_rtu_tcp, address: "127.0.0.1:4001", timeout: 150ms, retries: 0}
devices:
  - name: meter
    bus: plant
    model: modbus
    unit_id: 1
    registers:
      - {name: power, table: input, address: 0, type: float32, byte_order: CDAB}
      - {name: energy, table: input, address: 2, type: float32, byte_order: CDAB}
    sim: {profile: energy_meter}
  - name: vfd
    bus: line
    model: modbus
    unit_id: 1
    registers:
      - {name: speed_setpoint, table: holding, address: 0, type: uint16, scale: 0.1, writable: true}
      - {name: speed, table: input, address: 0, type: uint16, scale: 0.1}
    sim: {profile: vfd}
capabilities:
  - name: power
    type: number
    unit: W
    ttl: 2s
    read: {device: meter, channel: power}
    health:
      plausible: {min: 0, max: 100000}
      max_rate: 500
  - name: energy
    type: number
    unit: kWh
    ttl: 2s
    read: {device: meter, channel: energy}
    health: {stuck_samples: 3}
  - name: fan_setpoint
    type: number
    unit: Hz
    ttl: 2s
    read: {device: vfd, channel: speed_setpoint}
`

// TestModbusFaultsThroughServer injects every fault that a Modbus line can
// show into the simulated slaves and reads through the MCP server: the
// real driver sees the silence, the exception, the garbled CRC or the
// distorted registers, and the quality rules judge them as on I2C.
func TestModbusFaultsThroughServer(t *testing.T) {
	cases := []faultCase{
		{"read_power", "meter", manifests.Fault{Kind: manifests.FaultDropout}, 1, promcp.QualityStale, "read failed (timeout); last good value from 2 s ago"},
		{"read_power", "meter", manifests.Fault{Kind: manifests.FaultTimeout}, 1, promcp.QualityStale, "read failed (timeout)"},
		{"read_power", "meter", manifests.Fault{Kind: manifests.FaultNACK}, 1, promcp.QualityError, "read failed (device error)"},
		{"read_power", "meter", manifests.Fault{Kind: manifests.FaultNoise, Amplitude: 5000}, 1, promcp.QualityDegraded, "jump: "},
		{"read_power", "meter", manifests.Fault{Kind: manifests.FaultImplausible}, 1, promcp.QualityDegraded, "implausible: "},
		{"read_power", "meter", manifests.Fault{Kind: manifests.FaultSlow, Delay: 20 * time.Millisecond}, 1, promcp.QualityGood, ""},
		{"read_energy", "meter", manifests.Fault{Kind: manifests.FaultStuck}, 3, promcp.QualityDegraded, "stuck: "},
		{"read_fan_setpoint", "vfd", manifests.Fault{Kind: manifests.FaultCRC}, 1, promcp.QualityStale, "read failed (crc)"},
	}
	for _, tc := range cases {
		t.Run(tc.tool+"/"+string(tc.fault.Kind), func(t *testing.T) {
			clk, w, c := newModbusBench(t)
			runFaultCase(t, tc, clk, w, ttl, func(tool string) promcp.ReadResult {
				t.Helper()
				res, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: map[string]any{}}})
				if err != nil {
					t.Fatal(err)
				}
				var r promcp.ReadResult
				b, _ := json.Marshal(res.StructuredContent)
				if err := json.Unmarshal(b, &r); err != nil {
					t.Fatal(err)
				}
				return r
			})
		})
	}
}

func newModbusBench(t *testing.T) (*sim.ManualClock, *sim.World, *client.Client) {
	t.Helper()
	m, err := manifests.Parse("bench.yml", []byte(modbusBench))
	if err != nil {
		t.Fatal(err)
	}
	clk := sim.NewManualClock(epoch)
	w, err := sim.New(m, clk)
	if err != nil {
		t.Fatal(err)
	}
	ep, err := w.StartLines()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ep.Close() })
	hw := capabilities.HardwareFuncs{TCP: func(ctx context.Context, b manifests.Bus) (net.Conn, error) {
		addr, _ := ep.Address(b.Name)
		return modbus.DialerTCP(addr)(ctx)
	}}
	set, err := capabilities.Open(t.Context(), m, hw, capabilities.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { set.Close() })
	_, c := serveInProcess(t, set, []server.Option{server.WithClock(clk)}, gateway.GatewayOptions{})
	return clk, w, c
}
