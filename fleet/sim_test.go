package fleet_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/promcp/promcp-device/fleet/fleetsim"
)

// TestFleetSim runs the fleet simulator (fleet/fleetsim, also `promcp-device
// fleet sim`): by default (CI) 12 gateways on one hub; every gateway
// answers and the narrow intent asks only its ten; nothing timed is
// asserted. PROMCP_FLEET_SIM sets the sizes to measure (e.g.
// "10,100,1000"), PROMCP_FLEET_SIM_HUBS the hub members and
// PROMCP_FLEET_SIM_QUERIES the queries per intent; the figures are logged
// (go test -v). PROMCP_FLEET_SIM_CPUPROFILE and PROMCP_FLEET_SIM_MEMPROFILE
// name files (suffixed with the size) for profiles of the queries.
func TestFleetSim(t *testing.T) {
	sizes, hubs, queries := []int{12}, 1, 10
	if env := os.Getenv("PROMCP_FLEET_SIM"); env != "" {
		sizes = nil
		for _, f := range strings.Split(env, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				t.Fatalf("PROMCP_FLEET_SIM: %q: %v", f, err)
			}
			sizes = append(sizes, n)
		}
	}
	if env := os.Getenv("PROMCP_FLEET_SIM_HUBS"); env != "" {
		hubs, _ = strconv.Atoi(env)
	}
	if env := os.Getenv("PROMCP_FLEET_SIM_QUERIES"); env != "" {
		queries, _ = strconv.Atoi(env)
	}
	for _, n := range sizes {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			res, err := fleetsim.Run(t.Context(), fleetsim.Config{Dir: t.TempDir(), Gateways: n, Hubs: hubs, Queries: queries, Budget: testBudget,
				CPUProfile: profile("PROMCP_FLEET_SIM_CPUPROFILE", n), MemProfile: profile("PROMCP_FLEET_SIM_MEMPROFILE", n)})
			if err != nil {
				t.Fatal(err)
			}
			all, ten := res.All, res.Narrow
			if all.Consulted != n || ten.Consulted != 10 {
				t.Errorf("consulted %d (all-matching) and %d (lab), want %d and 10: fan-out is not by interest", all.Consulted, ten.Consulted, n)
			}
			if all.Short+ten.Short > 0 && n <= 20 {
				t.Errorf("%d of %d queries short of answers at %d gateways", all.Short+ten.Short, 2*queries, n)
			}
			t.Logf("sim %d gateways, %d hub(s), %d queries per intent, budget %s, all registered in %s", n, hubs, queries, testBudget, res.Startup)
			t.Logf("  all-matching: p50 %s p99 %s max %s, %d queries short of answers", all.P50, all.P99, all.Max, all.Short)
			t.Logf("  10-matching:  p50 %s p99 %s max %s, %d queries short of answers", ten.P50, ten.P99, ten.Max, ten.Short)
			t.Logf("  heap %.1f KB per gateway (gateway and hub side), process RSS %.1f -> %.1f MB (+%.1f MB per 100 gateways)",
				float64(res.HeapPerGateway)/1e3, float64(res.RSSBefore)/1e6, float64(res.RSSAfter)/1e6,
				(float64(res.RSSAfter)-float64(res.RSSBefore))/1e6*100/float64(n))
			t.Logf("  one more gateway: heap %.1f KB, registry held %d B following itself (as gateways do); heap %.1f KB, registry held %d B holding the whole registry",
				float64(res.GatewayHeap)/1e3, res.GatewayState, float64(res.GatewayHeapFull)/1e3, res.GatewayStateFull)
			t.Logf("  peer count of the gateway following itself: %d after its first ping round, %d after its fifth (want %d, every live gateway)",
				res.PeerCountFirst, res.PeerCount, n+1)
		})
	}
}

// profile is the file named by environment variable env, suffixed with
// size n ("" when env is unset).
func profile(env string, n int) string {
	if p := os.Getenv(env); p != "" {
		return fmt.Sprintf("%s.%d", p, n)
	}
	return ""
}
