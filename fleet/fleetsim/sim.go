// Package fleetsim runs a simulated fleet in one process, to measure the
// fleet at sizes one machine cannot run as processes: real hub members
// (embedded NATS servers with the fleet's TLS and per-node nkeys) and
// simulated gateways, each with its own NATS connection, its own nkey and
// its own fleet member serving a small simulated gateway.
package fleetsim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/promcp/promcp-device/fleet"
	"github.com/promcp/promcp-device/fleet/natsembed"
	"github.com/promcp/promcp-device/fleet/trust"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/promcp"
	"github.com/promcp/promcp-device/server"
)

// Config is one simulated fleet and what to measure on it.
type Config struct {
	// Dir is an empty or missing directory for the fleet's credentials
	// and the hubs' stores.
	Dir string
	// Gateways is the number of simulated gateways; the first Matching
	// (default 10) are in zone "lab", the rest in "hall".
	Gateways, Matching int
	// Hubs is the number of hub members (1 to 5; default 1).
	Hubs int
	// Queries is the number of fleet can_do's per intent (default 50).
	Queries int
	// Budget is the coordinator's can_do budget (default 500 ms).
	Budget time.Duration
	// CPUProfile and MemProfile, when set, are files that receive a CPU
	// profile of the measured fleet can_do's (the queries only, not the
	// fleet's start) and an allocation profile taken after them.
	CPUProfile, MemProfile string
}

// Figures are one intent's measured fleet can_do.
type Figures struct {
	Consulted     int
	P50, P99, Max time.Duration
	Short         int // queries with fewer answers than gateways consulted
}

// Result is what a run measured.
type Result struct {
	All, Narrow Figures // an intent every gateway matches; one only the Matching "lab" gateways match
	// HeapPerGateway is the growth of the live heap (after a GC) while the
	// gateways joined, per gateway: gateway and hub side of its
	// connection together.
	HeapPerGateway uint64
	// RSSBefore and RSSAfter are the process's resident set before the
	// gateways joined and once all had.
	RSSBefore, RSSAfter uint64
	Startup             time.Duration // from the first gateway's connection to the coordinator seeing all
	// GatewayHeap is the live heap one more gateway (its connection, its
	// member and its registry view, following itself only as a gateway
	// does) added once the fleet was up; GatewayHeapFull the same for a
	// gateway whose view holds the whole registry (a coordinator's, or
	// every gateway's before views followed only what they need).
	GatewayHeap, GatewayHeapFull uint64
	// GatewayState and GatewayStateFull are the registry entries those
	// two views hold, in bytes of JSON: the fleet state a gateway keeps,
	// without the heap's noise.
	GatewayState, GatewayStateFull int
	// PeerCount is the peer count (quorum.min_peers) of the gateway that
	// follows only itself, joined last but one: every live gateway
	// answering its pings (Gateways + 1, itself included), read from
	// the heartbeats' keys, which page past nats-server's 1,024 keys per
	// batched read. PeerCountFirst is its first round's (a ping round
	// that ran into the budget counts fewer), PeerCount its fifth's.
	PeerCount, PeerCountFirst int
}

// Probe gateways: joined after the measured queries, to measure one
// gateway's heap.
const (
	probeScoped = "probe_scoped"
	probeFull   = "probe_full"
)

// fleetRun holds what a run started, to stop it.
type fleetRun struct{ stops []func() }

// onClose runs f when the run closes (last added, first run).
func (r *fleetRun) onClose(f func()) { r.stops = append(r.stops, f) }

func (r *fleetRun) close() {
	for _, f := range slices.Backward(r.stops) {
		f()
	}
}

// Run starts the fleet, measures it, stops it.
func Run(ctx context.Context, cfg Config) (Result, error) {
	cfg = defaults(cfg)
	if cfg.Gateways < cfg.Matching {
		return Result{}, fmt.Errorf("fleetsim: %d gateways: want at least %d (the narrow intent's)", cfg.Gateways, cfg.Matching)
	}
	if cfg.Hubs < 1 || cfg.Hubs > 5 {
		return Result{}, fmt.Errorf("fleetsim: %d hubs: want 1 to 5", cfg.Hubs)
	}
	r := &fleetRun{}
	defer r.close()
	var hubIDs, gwIDs []string
	for i := range cfg.Hubs {
		hubIDs = append(hubIDs, fmt.Sprint("hub", i+1))
	}
	for i := range cfg.Gateways {
		gwIDs = append(gwIDs, fmt.Sprintf("gw%04d", i))
	}
	fdir := filepath.Join(cfg.Dir, "fleet")
	if _, err := trust.Init(fdir, trust.InitOptions{Hubs: hubIDs, Gateways: append(slices.Clone(gwIDs), probeScoped, probeFull)}); err != nil {
		return Result{}, fmt.Errorf("fleetsim: %w", err)
	}
	hubs, err := startHubs(r, cfg.Dir, fdir, hubIDs)
	if err != nil {
		return Result{}, err
	}
	nc, err := connect(r, hubs[0].ClientURL(), "hub1", fdir)
	if err != nil {
		return Result{}, err
	}
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := fleet.SetupHub(sctx, nc, cfg.Hubs); err != nil {
		return Result{}, fmt.Errorf("fleetsim: set up the hub: %w", err)
	}
	var res Result
	heap0 := liveHeap()
	res.RSSBefore = rss()
	start := time.Now()
	for i, id := range gwIDs {
		if err := join(ctx, r, hubs[i%len(hubs)].ClientURL(), id, fdir, i < cfg.Matching); err != nil {
			return Result{}, err
		}
	}
	v := fleet.Watch(nc, fleet.ViewConfig{Node: "hub1", Role: manifests.RoleHub, Budget: cfg.Budget})
	r.onClose(v.Close)
	if err := waitFor(ctx, time.Minute+time.Duration(cfg.Gateways)*100*time.Millisecond, func() bool { return len(v.Gateways()) == cfg.Gateways }); err != nil {
		return Result{}, fmt.Errorf("fleetsim: %d of %d gateways registered: %w", len(v.Gateways()), cfg.Gateways, err)
	}
	res.Startup = time.Since(start)
	if heap1 := liveHeap(); heap1 > heap0 {
		res.HeapPerGateway = (heap1 - heap0) / uint64(cfg.Gateways)
	}
	res.RSSAfter = rss()
	stopProfile, err := startProfile(cfg)
	if err != nil {
		return Result{}, err
	}
	res.All = measure(ctx, v, promcp.Intent{Action: "fan"}, cfg.Queries)
	res.Narrow = measure(ctx, v, promcp.Intent{Action: "fan", Location: "lab"}, cfg.Queries)
	if err := stopProfile(); err != nil {
		return Result{}, err
	}
	url := hubs[len(hubs)-1].ClientURL()
	var scoped *fleet.View
	if res.GatewayHeap, res.GatewayState, scoped, err = probe(ctx, r, url, fdir, probeScoped, cfg, []string{probeScoped}); err != nil {
		return Result{}, err
	}
	if res.PeerCountFirst, res.PeerCount, err = peerRounds(ctx, scoped); err != nil {
		return Result{}, err
	}
	if res.GatewayHeapFull, res.GatewayStateFull, _, err = probe(ctx, r, url, fdir, probeFull, cfg, nil); err != nil {
		return Result{}, err
	}
	return res, nil
}

// probe joins one more gateway, id, with a registry view following
// follow (nil: the whole registry), and returns the live heap it added
// once its view has read the registry and a few polls more (the median
// of five collections before and after), the size of the registry
// entries its view holds, and the view.
func probe(ctx context.Context, r *fleetRun, url, dir, id string, cfg Config, follow []string) (heap uint64, state int, v *fleet.View, err error) {
	heap0 := medianHeap()
	nc, err := connect(r, url, id, dir)
	if err != nil {
		return 0, 0, nil, err
	}
	m, err := fleet.Join(ctx, nc, fleet.MemberConfig{GatewayID: id, Zone: "probe", Profile: "full"}, NewLocal())
	if err != nil {
		return 0, 0, nil, fmt.Errorf("fleetsim: join %s: %w", id, err)
	}
	r.onClose(func() { m.Close() })
	v = fleet.Watch(nc, fleet.ViewConfig{Node: id, Role: manifests.RoleThinEdge, Budget: cfg.Budget, Follow: follow})
	r.onClose(v.Close)
	want := 1
	if follow == nil {
		want = cfg.Gateways + 1
	}
	if err := waitFor(ctx, time.Minute+time.Duration(cfg.Gateways)*10*time.Millisecond, func() bool {
		_, self := v.Gateway(id)
		return self && len(v.Gateways()) >= want
	}); err != nil {
		return 0, 0, nil, fmt.Errorf("fleetsim: %s's view holds %d gateways: %w", id, len(v.Gateways()), err)
	}
	select { // a few more polls: what the view holds in its steady state
	case <-ctx.Done():
		return 0, 0, nil, ctx.Err()
	case <-time.After(3 * time.Second):
	}
	for _, in := range v.Gateways() {
		b, _ := json.Marshal(in)
		state += len(b)
	}
	if heap1 := medianHeap(); heap1 > heap0 {
		heap = heap1 - heap0
	}
	return heap, state, v, nil
}

// peerRounds is v's peer count after its first ping round and after
// its fifth (they run every second in the background).
func peerRounds(ctx context.Context, v *fleet.View) (first, last int, err error) {
	first = v.PeerCount(ctx)
	for range 4 {
		select {
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		case <-time.After(1500 * time.Millisecond):
		}
		last = v.PeerCount(ctx)
	}
	return first, last, nil
}

// startProfile starts the CPU profile cfg asks for, if any; the function
// it returns stops it and writes the allocation profile.
func startProfile(cfg Config) (stop func() error, err error) {
	var cpu *os.File
	if cfg.CPUProfile != "" {
		if cpu, err = os.Create(cfg.CPUProfile); err != nil {
			return nil, fmt.Errorf("fleetsim: cpu profile: %w", err)
		}
		if err := pprof.StartCPUProfile(cpu); err != nil {
			cpu.Close()
			return nil, fmt.Errorf("fleetsim: cpu profile: %w", err)
		}
	}
	return func() error {
		if cpu != nil {
			pprof.StopCPUProfile()
			if err := cpu.Close(); err != nil {
				return fmt.Errorf("fleetsim: cpu profile: %w", err)
			}
		}
		if cfg.MemProfile == "" {
			return nil
		}
		f, err := os.Create(cfg.MemProfile)
		if err != nil {
			return fmt.Errorf("fleetsim: allocation profile: %w", err)
		}
		defer f.Close()
		if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
			return fmt.Errorf("fleetsim: allocation profile: %w", err)
		}
		return nil
	}, nil
}

// medianHeap is the median of five live heaps, each after a collection.
func medianHeap() uint64 {
	var hs []uint64
	for range 5 {
		hs = append(hs, liveHeap())
	}
	slices.Sort(hs)
	return hs[2]
}

func defaults(cfg Config) Config {
	if cfg.Matching <= 0 {
		cfg.Matching = 10
	}
	if cfg.Hubs == 0 {
		cfg.Hubs = 1
	}
	if cfg.Queries <= 0 {
		cfg.Queries = 50
	}
	if cfg.Budget <= 0 {
		cfg.Budget = manifests.DefaultCanDoBudget
	}
	return cfg
}

// startHubs starts the hub members, each on its own goroutine (a
// cluster's members wait for each other), in name order.
func startHubs(r *fleetRun, dir, fdir string, names []string) ([]*natsserver.Server, error) {
	var routes, clusters []string
	if len(names) > 1 {
		for range names {
			a, err := freeAddr()
			if err != nil {
				return nil, err
			}
			clusters, routes = append(clusters, a), append(routes, "nats://"+a)
		}
	}
	type started struct {
		ns  *natsserver.Server
		err error
	}
	ch := make(chan started, len(names))
	for i, name := range names {
		t, err := hubTrust(fdir, name)
		if err != nil {
			return nil, err
		}
		cfg := natsembed.HubConfig{Name: name, Client: "127.0.0.1:0", Leaf: "127.0.0.1:0", Routes: routes,
			StoreDir: filepath.Join(dir, "store-"+name), Ping: manifests.FleetPing{Interval: time.Second, MaxMissed: 2}, Trust: t}
		if len(clusters) > 0 {
			cfg.Cluster = clusters[i]
		}
		go func() {
			ns, err := natsembed.StartHub(cfg, nil)
			ch <- started{ns, err}
		}()
	}
	var out []*natsserver.Server
	var errs []error
	for range names {
		s := <-ch
		if s.err != nil {
			errs = append(errs, s.err)
			continue
		}
		r.onClose(s.ns.Shutdown)
		out = append(out, s.ns)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("fleetsim: start the hubs: %w", err)
	}
	slices.SortFunc(out, func(a, b *natsserver.Server) int { return strings.Compare(a.Name(), b.Name()) })
	return out, nil
}

// hubTrust is hub member name's trust in fleet directory dir.
func hubTrust(dir, name string) (*natsembed.HubTrust, error) {
	now := time.Now()
	ca, err := trust.ReadCA(filepath.Join(dir, trust.CACertFile), now)
	if err != nil {
		return nil, err
	}
	cert, err := trust.ReadKeyPair(filepath.Join(dir, name, name+".crt"), filepath.Join(dir, name, name+".key"), ca, now)
	if err != nil {
		return nil, err
	}
	key, err := trust.ReadSeed(filepath.Join(dir, name, name+".nk"))
	if err != nil {
		return nil, err
	}
	return &natsembed.HubTrust{Cert: cert, CA: ca, Key: key, IdentitiesFile: filepath.Join(dir, trust.IdentitiesFile)}, nil
}

// connect is node's own connection to a hub's client port: TLS, its nkey,
// its inbox.
func connect(r *fleetRun, url, node, dir string) (*nats.Conn, error) {
	ca, err := trust.ReadCA(filepath.Join(dir, node, trust.CACertFile), time.Now())
	if err != nil {
		return nil, err
	}
	key, err := trust.ReadSeed(filepath.Join(dir, node, node+".nk"))
	if err != nil {
		return nil, err
	}
	nc, err := nats.Connect(url, append(natsembed.ClientOptions(node, &natsembed.NodeTrust{Key: key, CA: ca}),
		nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))...)
	if err != nil {
		return nil, fmt.Errorf("fleetsim: connect %s: %w", node, err)
	}
	r.onClose(nc.Close)
	return nc, nil
}

// join starts simulated gateway id: its connection and its member.
func join(ctx context.Context, r *fleetRun, url, id, dir string, lab bool) error {
	nc, err := connect(r, url, id, dir)
	if err != nil {
		return err
	}
	zone := "hall"
	if lab {
		zone = "lab"
	}
	m, err := fleet.Join(ctx, nc, fleet.MemberConfig{GatewayID: id, Zone: zone, Profile: "full"}, NewLocal())
	if err != nil {
		return fmt.Errorf("fleetsim: join %s: %w", id, err)
	}
	r.onClose(func() { m.Close() })
	return nil
}

// measure runs queries fleet can_do's of intent on v.
func measure(ctx context.Context, v *fleet.View, intent promcp.Intent, queries int) Figures {
	var lat []time.Duration
	var f Figures
	for range queries {
		start := time.Now()
		rep := v.CanDo(ctx, promcp.CanDoRequest{Intent: intent}, "")
		lat = append(lat, time.Since(start))
		mm := rep.Metadata.MeshMetadata
		f.Consulted = mm.PeersConsulted
		if mm.ResponsesReceived < mm.PeersConsulted {
			f.Short++
		}
	}
	slices.Sort(lat)
	f.P50, f.P99, f.Max = lat[len(lat)/2], lat[int(0.99*float64(len(lat)-1))], lat[len(lat)-1]
	return f
}

// Local is a simulated gateway: three tools and a can_do that answers
// one allowed candidate at once.
type Local struct{ report json.RawMessage }

// NewLocal returns a simulated gateway.
func NewLocal() *Local {
	rep := promcp.CapabilityReport{QueryID: "q", Feasible: true, Candidates: []promcp.Candidate{{
		Capability: "do_set_fan", Source: "sim/fan", Confidence: 1, Permission: promcp.Allowed,
		Constraints: promcp.Constraints{EnumValues: []string{"true", "false"}}, SideEffects: []string{},
		ValidUntil: time.Now().Add(time.Hour).UTC(), EstimatedLatencyMS: 5}},
		Blocked: []promcp.Blocked{}, Context: promcp.ReportContext{RelatedReads: []string{"read_fan"}, CurrentObservations: map[string]promcp.Observation{}},
		Metadata: promcp.ReportMetadata{Timestamp: time.Now().UTC()}}
	b, _ := json.Marshal(rep)
	return &Local{report: b}
}

// Tools lists the simulated gateway's tools.
func (s *Local) Tools(context.Context) ([]mcp.Tool, error) {
	return []mcp.Tool{{Name: "read_fan"}, {Name: "do_set_fan"}, {Name: "can_do"}}, nil
}

// Call answers every tool with the same report.
func (s *Local) Call(context.Context, server.Caller, string, json.RawMessage) (*mcp.CallToolResult, error) {
	var sc any
	_ = json.Unmarshal(s.report, &sc)
	return &mcp.CallToolResult{StructuredContent: sc, Content: []mcp.Content{mcp.NewTextContent(string(s.report))}}, nil
}

// waitFor polls cond every 50 ms until it holds or within passes.
func waitFor(ctx context.Context, within time.Duration, cond func() bool) error {
	t := time.NewTimer(within)
	defer t.Stop()
	for !cond() {
		select {
		case <-t.C:
			return fmt.Errorf("not within %s", within)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// liveHeap is the live heap after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
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

// freeAddr is a loopback address free now (for a cluster port).
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("fleetsim: listen on loopback: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
