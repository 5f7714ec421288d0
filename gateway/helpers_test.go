package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	pi2c "periph.io/x/conn/v3/i2c"

	"github.com/promcp/promcp-device/capabilities"
	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/gateway/gatewaytest"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/promcp"
	"github.com/promcp/promcp-device/sim"
	"github.com/promcp/promcp-device/simtest"
)

var epoch = time.Date(2026, 3, 1, 6, 0, 0, 0, time.UTC)

const ttl = 2 * time.Second

// Monday 2026-11-30 10:00 UTC: inside the policy bench fan's weekday window.
var monday10 = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

// bench is a gateway served on the simulator (gatewaytest.Serve) with an
// in-process MCP client; clk is its manual clock, nil when it runs in
// real time.
type bench struct {
	*gatewaytest.Bench
	t   *testing.T
	w   *sim.World
	clk *clock.Manual
	c   *client.Client
}

// newBench serves m's gateway on a manual clock at epoch. Run it inside a
// synctest bubble, so that the drivers' real-time waits (measurement time,
// bus timeouts, slow answers) take no time and nothing sleeps.
func newBench(t *testing.T, m *manifests.Manifest) *bench {
	t.Helper()
	return serveAt(t, m, epoch, gatewaytest.Options{})
}

// serveAt serves m's gateway as o says, on a manual clock reading start
// (o's Clock), with a client made with copts.
func serveAt(t *testing.T, m *manifests.Manifest, start time.Time, o gatewaytest.Options, copts ...client.ClientOption) *bench {
	t.Helper()
	clk := clock.NewManual(start)
	o.Clock = clk
	b := serveReal(t, m, o, copts...)
	b.clk = clk
	return b
}

// serveReal serves m's gateway as o says, with a client made with copts.
func serveReal(t *testing.T, m *manifests.Manifest, o gatewaytest.Options, copts ...client.ClientOption) *bench {
	t.Helper()
	g := gatewaytest.Serve(t, m, o)
	return &bench{Bench: g, t: t, w: g.World, c: g.Connect(copts...)}
}

// call calls tool with args and decodes its structured content into out;
// a failed call fails the test.
func (b *bench) call(tool string, args map[string]any, out any) {
	b.t.Helper()
	if err := callInto(b.t.Context(), b.c, tool, args, out); err != nil {
		b.t.Fatal(err)
	}
}

// read calls the read_* tool with args.
func (b *bench) read(tool string, args map[string]any) promcp.ReadResult {
	b.t.Helper()
	var r promcp.ReadResult
	b.call(tool, args, &r)
	return r
}

// body is tool's structured content as JSON decodes it; a failed call, or
// one without a body, fails the test.
func (b *bench) body(tool string, args map[string]any) map[string]any {
	b.t.Helper()
	return bodyOf(b.t, b.c, tool, args)
}

// callAs is body for the caller in ctx, from any goroutine: a failed call
// is reported to t (t.Error) and gives a nil body.
func (b *bench) callAs(ctx context.Context, t *testing.T, tool string, args map[string]any) map[string]any {
	t.Helper()
	var body map[string]any
	if err := callInto(ctx, b.c, tool, args, &body); err != nil {
		t.Error(err)
	}
	return body
}

// bodyOf is tool's structured content on c as JSON decodes it; a failed
// call, or one without a body, fails the test.
func bodyOf(t *testing.T, c *client.Client, tool string, args map[string]any) map[string]any {
	t.Helper()
	var body map[string]any
	if err := callInto(t.Context(), c, tool, args, &body); err != nil || body == nil {
		t.Fatalf("%s(%v): no structured body: %v", tool, args, err)
	}
	return body
}

// kernelFiles is the hardware of pi-outdoor.yml: the world's I²C, GPIO
// and SPI, and its kernel files (1-Wire, PWM) under dir.
func kernelFiles(dir string) func(*sim.World) capabilities.HardwareFuncs {
	return func(w *sim.World) capabilities.HardwareFuncs {
		return simtest.SPI(w, simtest.Sysfs(w, simtest.Hardware(w), dir))
	}
}

// lines is the world's Modbus slaves and serial lines on loopback only.
func lines(t *testing.T) func(*sim.World) capabilities.HardwareFuncs {
	return func(w *sim.World) capabilities.HardwareFuncs {
		return simtest.Lines(t, w, capabilities.HardwareFuncs{})
	}
}

// wrapI2C is hw with every I²C bus it opens wrapped by wrap (to count or
// change what goes on the bus).
func wrapI2C(hw capabilities.HardwareFuncs, wrap func(pi2c.BusCloser) pi2c.BusCloser) capabilities.HardwareFuncs {
	open := hw.I2C
	hw.I2C = func(ctx context.Context, b manifests.Bus) (pi2c.BusCloser, error) {
		bus, err := open(ctx, b)
		return wrap(bus), err
	}
	return hw
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

// runFaultCases runs each case in a subtest on a new bench from open,
// inside a synctest bubble when bubble is set, with runFaultCase.
func runFaultCases(t *testing.T, cases []faultCase, ttl time.Duration, bubble bool, open func(*testing.T) *bench) {
	for _, tc := range cases {
		t.Run(tc.tool+"/"+string(tc.fault.Kind), func(t *testing.T) {
			if !bubble {
				runFaultCase(t, tc, open(t), ttl)
				return
			}
			synctest.Test(t, func(t *testing.T) { runFaultCase(t, tc, open(t), ttl) })
		})
	}
}

// runFaultCase reads tc.tool (good), injects the fault one TTL later,
// reads it tc.samples times a TTL apart and checks the quality and reason,
// then clears the fault and checks the tool reads good again, sampled now,
// one TTL later. The bench's clock drives the simulator and the server.
func runFaultCase(t *testing.T, tc faultCase, b *bench, ttl time.Duration) {
	t.Helper()
	clk, w := b.clk, b.w
	read := func(tool string) promcp.ReadResult { return b.read(tool, nil) }
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
