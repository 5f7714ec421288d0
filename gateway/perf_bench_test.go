package gateway_test

import (
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/gateway"
	"github.com/promcp/promcp-device/gateway/gatewaytest"
	"github.com/promcp/promcp-device/internal/perf"
	"github.com/promcp/promcp-device/manifests/manifesttest"
	"github.com/promcp/promcp-device/server"
)

// perfBench serves a generated greenhouse of n capabilities
// (perf.Manifest) on the simulator, on a clock that stands still.
func perfBench(tb testing.TB, n int) *gatewaytest.Bench {
	tb.Helper()
	m := manifesttest.Parse(tb, "perf.yml", perf.Manifest(n))
	return gatewaytest.Serve(tb, m, gatewaytest.Options{Clock: clock.NewManual(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))})
}

// perfGateway serves a generated greenhouse of n capabilities (see
// perf.Manifest) on the simulator and returns an in-process client. The
// clock stands still, so every reading after the first is served from the
// cache: the benchmarks measure the stack, not the simulated conversions.
func perfGateway(b *testing.B, n int) *client.Client {
	b.Helper()
	return perfBench(b, n).Connect()
}

// reportPercentiles adds the p50 and p99 of lat to the benchmark's
// figures, in milliseconds.
func reportPercentiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	at := func(p float64) float64 { return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))]) / 1e6 }
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
}

// skipLarge skips sizes above 200 capabilities under -short: CI runs every
// benchmark once to keep it working (scripts/test), the sizes that take
// seconds to set up only without -short.
func skipLarge(b *testing.B, n int) {
	if testing.Short() && n > 200 {
		b.Skip("-short: sizes above 200 capabilities run without -short")
	}
}

func call(b *testing.B, c *client.Client, tool string, args map[string]any) *mcp.CallToolResult {
	res, err := c.CallTool(b.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: args}})
	if err != nil {
		b.Fatal(err)
	}
	if res.IsError {
		b.Fatalf("%s: %v", tool, res.Content)
	}
	return res
}

// BenchmarkReadInProcess: a cached read_* through the whole MCP stack in
// process (JSON-RPC decode, argument check, handler, contract check,
// provenance, encode).
//
//	go test ./gateway -run '^$' -bench ReadInProcess -benchmem
func BenchmarkReadInProcess(b *testing.B) {
	c := perfGateway(b, 10)
	call(b, c, "read_temperature_z0", nil)
	cpu := perf.ProcessCPU()
	for b.Loop() {
		call(b, c, "read_temperature_z0", nil)
	}
	reportCPU(b, cpu)
}

// reportCPU adds the process CPU time per call since cpu (processCPU) to
// the benchmark's figures: the figure to compare between a read and a
// can_do on a shared machine, where ns/op is wall time.
func reportCPU(b *testing.B, cpu time.Duration) {
	b.ReportMetric(float64(perf.ProcessCPU()-cpu)/float64(b.N)/1e3, "cpu-µs/op")
}

// BenchmarkCanDo: can_do with a broad intent (two of every five
// capabilities match, each with depends_on sensors) at 10, 100 and 1,000
// capabilities, warm cache.
//
//	go test ./gateway -run '^$' -bench CanDo -benchmem
func BenchmarkCanDo(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("caps=%d", n), func(b *testing.B) {
			skipLarge(b, n)
			g := perfBench(b, n)
			c := g.Connect()
			args := map[string]any{"intent": map[string]any{"semantic_tags": []any{"temperature"}}}
			call(b, c, "can_do", args)
			var lat []time.Duration
			hits := gateway.CanDoHits(g.Gateway)
			cpu := perf.ProcessCPU()
			for b.Loop() {
				t0 := time.Now()
				call(b, c, "can_do", args)
				lat = append(lat, time.Since(t0))
			}
			reportCPU(b, cpu)
			reportPercentiles(b, lat)
			// The share of answers given again (the clock stands still).
			b.ReportMetric(float64(gateway.CanDoHits(g.Gateway)-hits)/float64(b.N), "reused/op")
		})
	}
}

// BenchmarkToolsList: tools/list at 10, 200 and 1,000 capabilities, every
// page; reports the bytes listed per tool.
//
//	go test ./gateway -run '^$' -bench ToolsList -benchmem
func BenchmarkToolsList(b *testing.B) {
	for _, n := range []int{10, 200, 1000} {
		b.Run(fmt.Sprintf("caps=%d", n), func(b *testing.B) {
			skipLarge(b, n)
			c := perfGateway(b, n)
			var tools, size int
			for b.Loop() {
				tools, size = listAll(b, c)
			}
			b.ReportMetric(float64(size)/float64(tools), "B/tool")
		})
	}
}

// listAll lists every tool, page by page, and returns how many and their
// encoded size.
func listAll(b *testing.B, c *client.Client) (int, int) {
	var req mcp.ListToolsRequest
	tools, size := 0, 0
	for {
		res, err := c.ListToolsByPage(b.Context(), req)
		if err != nil {
			b.Fatal(err)
		}
		for _, t := range res.Tools {
			raw, _ := t.MarshalJSON()
			size += len(raw)
		}
		tools += len(res.Tools)
		if res.NextCursor == "" {
			return tools, size
		}
		req.Params.Cursor = res.NextCursor
	}
}

// BenchmarkReadHTTP: a cached read_* over streamable HTTP on loopback, 8
// sessions at once (the server's HTTP handler, its session table and
// limits, and mcp-go's transport), on both protocol generations. The
// client's cost is in the figure too; profile with -cpuprofile to see the
// server's share.
//
//	go test ./gateway -run '^$' -bench ReadHTTP -benchmem -cpuprofile cpu.out
func BenchmarkReadHTTP(b *testing.B) {
	for _, protocol := range []string{"2025-11-25", "2026-07-28"} {
		b.Run(protocol, func(b *testing.B) {
			url := perfHTTP(b, 10)
			clients := make(chan *client.Client, 8)
			for range 8 {
				clients <- httpClient(b, url, protocol)
			}
			b.SetParallelism(4) // 8 goroutines on 2 cores
			b.RunParallel(func(pb *testing.PB) {
				c := <-clients
				for pb.Next() {
					call(b, c, "read_temperature_z0", map[string]any{})
				}
			})
		})
	}
}

// perfHTTP serves a generated greenhouse of n capabilities over streamable
// HTTP on a loopback port and returns its URL.
func perfHTTP(b *testing.B, n int) string {
	b.Helper()
	srv := perfBench(b, n).Server
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	hs := srv.HTTPServer(server.HTTPConfig{Caller: server.Caller{Role: "operator"}})
	go hs.Serve(ln)
	b.Cleanup(func() { hs.Close() })
	return "http://" + ln.Addr().String() + "/mcp"
}

func httpClient(b *testing.B, url, protocol string) *client.Client {
	b.Helper()
	c, err := client.NewStreamableHttpClient(url)
	if err != nil {
		b.Fatal(err)
	}
	client.WithProtocolVersion(protocol)(c)
	b.Cleanup(func() { c.Close() })
	if err := c.Start(b.Context()); err != nil {
		b.Fatal(err)
	}
	if _, err := c.Initialize(b.Context(), mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: protocol,
		ClientInfo: mcp.Implementation{Name: "bench", Version: "1"}}}); err != nil {
		b.Fatal(err)
	}
	return c
}

// TestToolsListPages: a gateway of more tools than server.ToolsPageSize
// lists them in pages with the protocol's cursor; following the cursors
// yields every tool once.
func TestToolsListPages(t *testing.T) {
	g := perfBench(t, 200)
	srv, c := g.Server, g.Connect()
	seen := map[string]bool{}
	var req mcp.ListToolsRequest
	pages := 0
	for {
		res, err := c.ListToolsByPage(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if len(res.Tools) > server.ToolsPageSize {
			t.Fatalf("page %d holds %d tools, over %d", pages, len(res.Tools), server.ToolsPageSize)
		}
		for _, tool := range res.Tools {
			if seen[tool.Name] {
				t.Fatalf("%s listed twice", tool.Name)
			}
			seen[tool.Name] = true
		}
		if res.NextCursor == "" {
			break
		}
		req.Params.Cursor = res.NextCursor
	}
	if want := len(srv.Tools()); len(seen) != want || pages != (want+server.ToolsPageSize-1)/server.ToolsPageSize {
		t.Fatalf("listed %d tools in %d pages, want %d tools in pages of %d", len(seen), pages, want, server.ToolsPageSize)
	}
}

// BenchmarkCanDoFirst: the first can_do with a broad intent (400 actions
// match) on a gateway of 1,000 capabilities just served, and a second one
// after the clock has moved past every reading's TTL, so that it too reads
// every sensor anew: the difference is what the first call pays beyond the
// bus (nothing, when the first call is warm).
//
//	go test ./gateway -run '^$' -bench CanDoFirst -benchtime 3x
func BenchmarkCanDoFirst(b *testing.B) {
	skipLarge(b, 1000)
	args := map[string]any{"intent": map[string]any{"semantic_tags": []any{"temperature"}}}
	var first, again time.Duration
	for b.Loop() {
		b.StopTimer()
		clk := clock.NewManual(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
		m := manifesttest.Parse(b, "perf.yml", perf.Manifest(1000))
		c := gatewaytest.Serve(b, m, gatewaytest.Options{Clock: clk}).Connect()
		b.StartTimer()
		t0 := time.Now()
		call(b, c, "can_do", args)
		first += time.Since(t0)
		b.StopTimer()
		clk.Advance(time.Hour)
		t0 = time.Now()
		call(b, c, "can_do", args)
		again += time.Since(t0)
		b.StartTimer()
	}
	b.ReportMetric(float64(first)/float64(b.N)/1e6, "first-ms")
	b.ReportMetric(float64(again)/float64(b.N)/1e6, "cold-readings-ms")
}
