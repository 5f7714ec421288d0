//go:build natsserver && !nofleet

package main

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/promcp/promcp-device/fleet/fleetsim"
)

// fleetSim runs the fleet simulator at each size asked and prints a
// line of figures per size.
func fleetSim(c *cli) int {
	sizes := c.String("gateways", "10,100", "simulated gateways per run (`SIZES`, comma-separated; at least 10 each)")
	hubs := c.Int("hubs", 1, "hub members (`N`, 1 to 5)")
	queries := c.Int("queries", 50, "fleet can_do's per intent and size (`N`)")
	budget := c.Duration("budget", 500*time.Millisecond, "the coordinator's can_do budget (`DURATION`)")
	if !c.parse() {
		return 2
	}
	if c.NArg() > 0 {
		return c.usage("takes flags only")
	}
	var ns []int
	for _, f := range commaList(*sizes) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 10 {
			return c.usage("--gateways %q: want numbers of at least 10", f)
		}
		ns = append(ns, n)
	}
	fmt.Fprintf(c.stdout, "gateways  hubs  all p50/p99 (ms)  10 p50/p99 (ms)  short  heap/gw (KB)  RSS before->after (MB)  startup  one gw heap own/all (KB)  registry held own/all (KB)  peers first/later\n")
	for _, n := range ns {
		dir, err := os.MkdirTemp("", "promcp-fleet-sim-")
		if err != nil {
			return c.fail(err)
		}
		res, err := fleetsim.Run(c.ctx, fleetsim.Config{Dir: dir, Gateways: n, Hubs: *hubs, Queries: *queries, Budget: *budget})
		os.RemoveAll(dir)
		if err != nil {
			return c.fail(err)
		}
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		fmt.Fprintf(c.stdout, "%8d  %4d  %7.1f/%-8.1f  %6.1f/%-7.1f  %2d/%-2d  %12.0f  %9.1f->%-9.1f  %s  %.0f/%.0f  %.1f/%.1f  %d/%d\n",
			n, *hubs, ms(res.All.P50), ms(res.All.P99), ms(res.Narrow.P50), ms(res.Narrow.P99),
			res.All.Short, res.Narrow.Short, float64(res.HeapPerGateway)/1e3,
			float64(res.RSSBefore)/1e6, float64(res.RSSAfter)/1e6, res.Startup.Round(time.Millisecond),
			float64(res.GatewayHeap)/1e3, float64(res.GatewayHeapFull)/1e3,
			float64(res.GatewayState)/1e3, float64(res.GatewayStateFull)/1e3, res.PeerCountFirst, res.PeerCount)
		if res.All.Consulted != n || res.Narrow.Consulted != 10 {
			fmt.Fprintf(c.stderr, "promcp-device: fan-out asked %d and %d gateways, want %d and 10\n", res.All.Consulted, res.Narrow.Consulted, n)
		}
	}
	return 0
}
