package gateway_test

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	mb "github.com/goburrow/modbus"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/promcp/promcp-device/capabilities"
	"github.com/promcp/promcp-device/drivers/modbus"
	"github.com/promcp/promcp-device/gateway/gatewaytest"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/sim"
	"github.com/promcp/promcp-device/simtest"
)

// meterBench serves a simulated energy meter on loopback TCP and returns
// its address and the read_site_power tool handler of a gateway over it.
func meterBench(b *testing.B) (string, mcpserver.ToolHandlerFunc, *capabilities.Capability) {
	b.Helper()
	var addr string
	g := gatewaytest.Serve(b, simtest.Manifest(b, "meter-bench.yml"), gatewaytest.Options{Hardware: func(w *sim.World) capabilities.HardwareFuncs {
		srv, err := w.ModbusServer("lan")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { srv.Close() })
		if addr, err = srv.ServeLoopback(manifests.BusModbusTCP); err != nil {
			b.Fatal(err)
		}
		return capabilities.HardwareFuncs{
			TCP: func(ctx context.Context, _ manifests.Bus) (net.Conn, error) { return modbus.DialerTCP(addr)(ctx) },
		}
	}})
	c, _ := g.Set.Get("site_power")
	return addr, g.Server.MCP().GetTool("read_site_power").Handler, c
}

func rawClient(b *testing.B, addr string) mb.Client {
	h := mb.NewTCPClientHandler(addr)
	h.SlaveId = 1
	h.Timeout = time.Second
	if err := h.Connect(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { h.Close() })
	return mb.NewClient(h)
}

// readTool calls read_site_power with max_age_ms 0, so that every call
// measures the bus rather than the read cache.
func readTool(b *testing.B, h mcpserver.ToolHandlerFunc) {
	res, err := h(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "read_site_power", Arguments: map[string]any{"max_age_ms": 0}}})
	if err != nil || res.IsError {
		b.Fatalf("read_site_power: %v %v", err, res)
	}
}

// BenchmarkModbusStackVsRaw measures, in one run against the same simulated
// meter over loopback TCP, the raw goburrow client reading the power
// registers in a loop, and read_site_power's tool handler reading them
// through the capability, the scheduler, our transporter and goburrow. It
// reports both rates and stack/raw, the ratio the issue asks to be ≥ 0.8.
func BenchmarkModbusStackVsRaw(b *testing.B) {
	addr, handler, capability := meterBench(b)
	raw := rawClient(b, addr)
	readTool(b, handler) // connect before timing
	var rawDur, stackDur, capDur time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if _, err := raw.ReadInputRegisters(0, 2); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		readTool(b, handler)
		t2 := time.Now()
		if r := capability.ReadWithin(context.Background(), 0); r.Err != nil {
			b.Fatal(r.Err)
		}
		rawDur += t1.Sub(t0)
		stackDur += t2.Sub(t1)
		capDur += time.Since(t2)
	}
	b.ReportMetric(float64(b.N)/rawDur.Seconds(), "raw_reads/s")
	b.ReportMetric(float64(b.N)/stackDur.Seconds(), "stack_reads/s")
	b.ReportMetric(rawDur.Seconds()/stackDur.Seconds(), "stack/raw")
	// The same read without the MCP layer (result building, output schema
	// validation): capability, scheduler, transporter, goburrow.
	b.ReportMetric(rawDur.Seconds()/capDur.Seconds(), "capability/raw")
}

// BenchmarkModbusReadToolCoalesced: 64 concurrent callers of the same
// read_* tool, each asking for a new measurement (max_age_ms 0);
// identical reads in flight share one transaction, so the stack serves far
// more reads than the line carries.
func BenchmarkModbusReadToolCoalesced(b *testing.B) {
	_, handler, _ := meterBench(b)
	readTool(b, handler)
	b.SetParallelism(64)
	start := time.Now()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			readTool(b, handler)
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "stack_reads/s")
}

// BenchmarkModbusRawParallel: the same 64 callers sharing one raw goburrow
// client (which serialises them itself), for comparison with the above.
func BenchmarkModbusRawParallel(b *testing.B) {
	addr, _, _ := meterBench(b)
	raw := rawClient(b, addr)
	var mu sync.Mutex
	b.SetParallelism(64)
	start := time.Now()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			mu.Lock()
			_, err := raw.ReadInputRegisters(0, 2)
			mu.Unlock()
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "raw_reads/s")
}
