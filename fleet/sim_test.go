package fleet_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/promcp/promcp-device/fleet"
	"github.com/promcp/promcp-device/fleet/natsembed"
	"github.com/promcp/promcp-device/fleet/trust"
	"github.com/promcp/promcp-device/internal/testnet"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/promcp"
)

// simMatching is how many simulated gateways the narrow intent matches.
const simMatching = 10

// simFleet is a simulated fleet in one process: hubs real embedded NATS
// servers on TLS, each gateway its own connection with its own nkey (a
// fleet made by trust.Init) and its own fleet member serving a small
// simulated gateway (simLocal). The first simMatching gateways are in
// zone "lab", the rest in "hall".
type simFleet struct {
	hubs []*natsserver.Server
	view *fleet.View // hub1's view, the coordinator
	gws  int
}

// startSimFleet starts hubs hub members and n gateways, and returns once
// the coordinator sees every gateway.
func startSimFleet(t testing.TB, hubs, n int) *simFleet {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "fleet")
	var hubIDs, gwIDs []string
	for i := range hubs {
		hubIDs = append(hubIDs, fmt.Sprint("hub", i+1))
	}
	for i := range n {
		gwIDs = append(gwIDs, fmt.Sprintf("gw%04d", i))
	}
	if _, err := trust.Init(dir, trust.InitOptions{Hubs: hubIDs, Gateways: gwIDs}); err != nil {
		t.Fatal(err)
	}
	s := &simFleet{gws: n}
	var routes, clusters []string
	if hubs > 1 {
		for range hubs {
			a := testnet.FreeAddr(t)
			clusters = append(clusters, a)
			routes = append(routes, "nats://"+a)
		}
	}
	s.hubs = startSimHubs(t, dir, hubIDs, clusters, routes)
	nc := simConnect(t, s.hubs[0].ClientURL(), "hub1", dir)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := fleet.SetupHub(ctx, nc, hubs); err != nil {
		t.Fatal(err)
	}
	for i, id := range gwIDs {
		gnc := simConnect(t, s.hubs[i%hubs].ClientURL(), id, dir)
		zone := "hall"
		if i < simMatching {
			zone = "lab"
		}
		m, err := fleet.Join(ctx, gnc, fleet.MemberConfig{GatewayID: id, Zone: zone, Profile: "full"}, newSimLocal())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
	}
	s.view = fleet.Watch(nc, fleet.ViewConfig{Node: "hub1", Role: manifests.RoleHub, Budget: testBudget})
	t.Cleanup(s.view.Close)
	eventually(t, time.Duration(60+n/5)*time.Second, "every simulated gateway registered", func() bool { return len(s.view.Gateways()) == n })
	return s
}

// startSimHubs starts the hub members, each on its own goroutine (a
// cluster's members wait for each other), in name order.
func startSimHubs(t testing.TB, dir string, names, clusters, routes []string) []*natsserver.Server {
	t.Helper()
	started := make(chan *natsserver.Server, len(names))
	errs := make(chan error, len(names))
	for i, name := range names {
		cfg := natsembed.HubConfig{Name: name, Client: "127.0.0.1:0", Leaf: "127.0.0.1:0", Routes: routes,
			StoreDir: t.TempDir(), Ping: testPing, Trust: testTrust(t, dir, name)}
		if len(clusters) > 0 {
			cfg.Cluster = clusters[i]
		}
		go func() {
			ns, err := natsembed.StartHub(cfg, nil)
			if err != nil {
				errs <- err
				return
			}
			started <- ns
		}()
	}
	var out []*natsserver.Server
	for range names {
		select {
		case err := <-errs:
			t.Fatal(err)
		case ns := <-started:
			t.Cleanup(ns.Shutdown)
			out = append(out, ns)
		}
	}
	slices.SortFunc(out, func(a, b *natsserver.Server) int { return strings.Compare(a.Name(), b.Name()) })
	return out
}

// simConnect is node's own connection to a hub's client port: TLS, its
// nkey, its inbox.
func simConnect(t testing.TB, url, node, dir string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url, append(natsembed.ClientOptions(node, nodeTrust(t, dir, node)),
		nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// simFigures are one intent's latencies over a run.
type simFigures struct {
	p50, p99, max time.Duration
	consulted     int
	short         int // queries with fewer answers than gateways consulted
}

// measure runs queries fleet can_do's of intent and returns its figures.
func (s *simFleet) measure(t testing.TB, intent promcp.Intent, queries int) simFigures {
	t.Helper()
	var lat []time.Duration
	var f simFigures
	for range queries {
		start := time.Now()
		rep := s.view.CanDo(t.Context(), promcp.CanDoRequest{Intent: intent}, "")
		lat = append(lat, time.Since(start))
		mm := rep.Metadata.MeshMetadata
		f.consulted = mm.PeersConsulted
		if mm.ResponsesReceived < mm.PeersConsulted {
			f.short++
		}
	}
	slices.Sort(lat)
	f.p50, f.p99, f.max = lat[len(lat)/2], lat[int(0.99*float64(len(lat)-1))], lat[len(lat)-1]
	return f
}

// rss is the process's resident set, from /proc (0 where there is none).
func rss() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// heap is the live heap after a collection.
func heap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestFleetSim runs the fleet simulator: by default (CI) 12 gateways on
// one hub, each answering, nothing timed asserted. PROMCP_FLEET_SIM sets
// the sizes to measure (e.g. "10,100,1000"), PROMCP_FLEET_SIM_HUBS the
// hub members (1 or 3) and PROMCP_FLEET_SIM_QUERIES the queries per
// intent; the figures are logged (go test -v).
func TestFleetSim(t *testing.T) {
	sizes, hubs, queries := []int{12}, 1, 10
	if env := os.Getenv("PROMCP_FLEET_SIM"); env != "" {
		sizes = nil
		for _, f := range strings.Split(env, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < simMatching {
				t.Fatalf("PROMCP_FLEET_SIM: %q: want sizes of at least %d", f, simMatching)
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
			heap0, rss0 := heap(), rss()
			s := startSimFleet(t, hubs, n)
			heap1, rss1 := heap(), rss()
			all := s.measure(t, promcp.Intent{Action: "fan"}, queries)
			ten := s.measure(t, promcp.Intent{Action: "fan", Location: "lab"}, queries)
			if all.consulted != n || ten.consulted != simMatching {
				t.Errorf("consulted %d (all-matching) and %d (lab), want %d and %d: fan-out is not by interest", all.consulted, ten.consulted, n, simMatching)
			}
			if all.short+ten.short > 0 && n <= 20 {
				t.Errorf("%d of %d queries short of answers at %d gateways", all.short+ten.short, 2*queries, n)
			}
			t.Logf("sim %d gateways, %d hub(s), %d queries per intent, budget %s", n, hubs, queries, testBudget)
			t.Logf("  all-matching: consulted %d, p50 %s p99 %s max %s, %d queries short of answers", all.consulted, all.p50, all.p99, all.max, all.short)
			t.Logf("  10-matching:  consulted %d, p50 %s p99 %s max %s, %d queries short of answers", ten.consulted, ten.p50, ten.p99, ten.max, ten.short)
			t.Logf("  heap +%.1f MB (%.1f KB per gateway, gateway and hub side), process RSS %.1f -> %.1f MB (+%.1f MB per 100 gateways)",
				float64(heap1-heap0)/1e6, float64(heap1-heap0)/1e3/float64(n), float64(rss0)/1e6, float64(rss1)/1e6,
				float64(rss1-rss0)/1e6*100/float64(n))
		})
	}
}
