package gateway_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/gateway"
	"github.com/promcp/promcp-device/gateway/gatewaytest"
	"github.com/promcp/promcp-device/internal/perf"
	"github.com/promcp/promcp-device/manifests/manifesttest"
	"github.com/promcp/promcp-device/promcp"
)

// TestCanDoRefreshAhead: with RefreshAhead, a can_do answered once its
// readings are half their TTL old has them read again in the background,
// so that the answer after they age out is decided on the readings read
// ahead without a bus transaction in the call; without it, that answer
// reads them in the call. Either way the answer is the one a fresh
// evaluation gives.
func TestCanDoRefreshAhead(t *testing.T) {
	for _, ahead := range []bool{true, false} {
		t.Run(fmt.Sprintf("RefreshAhead=%t", ahead), func(t *testing.T) {
			t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
			clk := clock.NewManual(t0)
			m := manifesttest.Parse(t, "perf.yml", perf.Manifest(20))
			g := gatewaytest.Serve(t, m, gatewaytest.Options{Clock: clk, Gateway: gateway.GatewayOptions{RefreshAhead: ahead}})
			c := g.Connect()
			req := promcp.CanDoRequest{Intent: promcp.Intent{SemanticTags: []string{"temperature"}}, Scope: "local"}
			args := map[string]any{"intent": map[string]any{"semantic_tags": []any{"temperature"}}}
			ask := func() (reused bool, tx uint64) {
				t.Helper()
				hits, before := gateway.CanDoHits(g.Gateway), g.World.Transactions("i2c0")
				if res, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "can_do", Arguments: args}}); err != nil || res.IsError {
					t.Fatalf("can_do: %v %v", err, res)
				}
				return gateway.CanDoHits(g.Gateway) > hits, g.World.Transactions("i2c0") - before
			}
			for again := false; !again; {
				again, _ = ask() // until the answer is kept and given again
				if clk.Now() != t0 {
					t.Fatal("the clock moved")
				}
			}
			clk.Advance(1500 * time.Millisecond) // the readings (TTL 2s) are 1.5 s old
			base := g.World.Transactions("i2c0")
			ask() // the readings are fresh: decided on them; with RefreshAhead, they are read ahead
			gateway.WaitRefreshes(g.Gateway)
			read := g.World.Transactions("i2c0") - base
			// At 2.4 s the first readings have aged out (at 2 s); those
			// read ahead at 1.5 s are not yet half their TTL old, so this
			// call starts no read-ahead of its own.
			clk.Advance(900 * time.Millisecond)
			reused, tx := ask()
			if reused {
				t.Fatal("at 2.4 s: an answer given again after its readings aged out")
			}
			switch {
			case ahead && (read == 0 || tx != 0):
				t.Errorf("read ahead: %d transactions before the call, %d in it; want them before, none in it", read, tx)
			case !ahead && (read != 0 || tx == 0):
				t.Errorf("without RefreshAhead: %d transactions before the call, %d in it; want none before, the readings read in it", read, tx)
			}
			fresh := gateway.CanDoFresh(t.Context(), g.Gateway, req)
			for name, o := range fresh.Context.CurrentObservations {
				// The sensors' TTL is 2 s; the relays' is longer.
				if strings.HasPrefix(name, "read_temperature_") && o.Timestamp.Before(t0.Add(1500*time.Millisecond)) {
					t.Errorf("%s observed at %v, want a reading from 1.5 s on", name, o.Timestamp)
				}
			}
		})
	}
}
