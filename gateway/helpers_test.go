package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/promcp/promcp-device/capabilities"
	"github.com/promcp/promcp-device/gateway"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/promcp"
	"github.com/promcp/promcp-device/server"
	"github.com/promcp/promcp-device/sim"
)

// serveInProcess serves set on a new server made with sopts (and the
// gateway options gopts) and returns an initialised in-process MCP client
// made with copts. Everything is closed when the test ends.
func serveInProcess(t testing.TB, set *capabilities.Set, sopts []server.Option, gopts gateway.GatewayOptions, copts ...client.ClientOption) (*server.Server, *client.Client) {
	t.Helper()
	srv, err := server.New("bench", "test", sopts...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gateway.Serve(srv, set, gopts); err != nil {
		t.Fatal(err)
	}
	c, err := client.NewInProcessClientWithOptions(srv.MCP(), copts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(t.Context(), mcp.InitializeRequest{Params: mcp.InitializeParams{
		ClientInfo: mcp.Implementation{Name: "test", Version: "1"}}}); err != nil {
		t.Fatal(err)
	}
	return srv, c
}

// callInto calls tool with args on c and decodes its structured content
// into out.
func callInto(ctx context.Context, c *client.Client, tool string, args map[string]any, out any) error {
	res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: args}})
	if err != nil {
		return fmt.Errorf("%s(%v): %w", tool, args, err)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s(%v): structured content %s: %w", tool, args, raw, err)
	}
	return nil
}

// faultCase is one fault injected on one device, and what a read tool
// must say about it.
type faultCase struct {
	tool    string
	device  string
	fault   manifests.Fault
	samples int // reads, one TTL apart, from the fault's start
	quality promcp.Quality
	reason  string // a prefix of quality_reason; "" for none
}

// runFaultCase reads tc.tool (good), injects the fault one TTL later,
// reads it tc.samples times a TTL apart and checks the quality and reason,
// then clears the fault and checks the tool reads good again, sampled now,
// one TTL later. The clock drives the simulator and the server.
func runFaultCase(t *testing.T, tc faultCase, clk *sim.ManualClock, w *sim.World, ttl time.Duration, read func(tool string) promcp.ReadResult) {
	t.Helper()
	if r := read(tc.tool); r.Quality != promcp.QualityGood {
		t.Fatalf("before the fault: %s = %+v, want good", tc.tool, r)
	}
	clk.Advance(ttl)
	if err := w.Inject(tc.device, tc.fault); err != nil {
		t.Fatal(err)
	}
	var r promcp.ReadResult
	for i := range tc.samples {
		if i > 0 {
			clk.Advance(ttl)
		}
		r = read(tc.tool)
	}
	if r.Quality != tc.quality || !strings.HasPrefix(r.QualityReason, tc.reason) || (tc.reason == "") != (r.QualityReason == "") {
		t.Errorf("under %s: %s = %v %s %q, want %s %q", tc.fault.Kind, tc.tool, r.Value, r.Quality, r.QualityReason, tc.quality, tc.reason)
	}
	if r.Quality == promcp.QualityError && (r.Value != nil || r.Error == nil || r.Error.Code != promcp.CodeSourceUnreachable) {
		t.Errorf("error read = %+v, want a null value and error.code source_unreachable", r)
	}
	w.Clear(tc.device)
	clk.Advance(ttl)
	if r := read(tc.tool); r.Quality != promcp.QualityGood || !r.Timestamp.Equal(clk.Now()) {
		t.Errorf("one TTL after the fault cleared: %s = %+v, want good, sampled now (%v)", tc.tool, r, clk.Now())
	}
}
