package fleet_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/promcp/promcp-device/audit"
	"github.com/promcp/promcp-device/fleet"
	"github.com/promcp/promcp-device/fleet/natsembed"
	"github.com/promcp/promcp-device/fleet/shared/sharedtest"
	"github.com/promcp/promcp-device/fleet/trust"
	"github.com/promcp/promcp-device/gateway/gatewaytest"
	"github.com/promcp/promcp-device/internal/testnet"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/promcp"
	"github.com/promcp/promcp-device/server"
	"github.com/promcp/promcp-device/simtest"
)

var testPing = manifests.FleetPing{Interval: time.Second, MaxMissed: 2}

// testHub is a three-member hub cluster on loopback, every link on TLS
// with per-node nkeys (fleet directory dir: hub1 to hub3, gw1 to gw9).
type testHub struct {
	servers  []*natsserver.Server
	leafURLs []string
	nc       *nats.Conn // a client of the hub (as hub1), reconnecting to any member
	dir      string
}

// testFleets maps a test hub member's leaf URL to its fleet directory, so
// that startGateway finds the credentials of the gateway it starts (test
// harness state, not the product's).
var testFleets sync.Map

// testGatewayIDs are the gateways every test fleet has credentials for.
var testGatewayIDs = []string{"gw1", "gw2", "gw3", "gw4", "gw5", "gw6", "gw7", "gw8", "gw9"}

// testTrust is hub member name's trust in fleet directory dir.
func testTrust(t testing.TB, dir, name string) *natsembed.HubTrust {
	t.Helper()
	ca, err := trust.ReadCA(filepath.Join(dir, trust.CACertFile), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cert, err := trust.ReadKeyPair(filepath.Join(dir, name, name+".crt"), filepath.Join(dir, name, name+".key"), ca, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	key, err := trust.ReadSeed(filepath.Join(dir, name, name+".nk"))
	if err != nil {
		t.Fatal(err)
	}
	return &natsembed.HubTrust{Cert: cert, CA: ca, Key: key, IdentitiesFile: filepath.Join(dir, trust.IdentitiesFile),
		Watch: 100 * time.Millisecond}
}

// nodeTrust is node's credentials in fleet directory dir.
func nodeTrust(t testing.TB, dir, node string) *natsembed.NodeTrust {
	t.Helper()
	ca, err := trust.ReadCA(filepath.Join(dir, node, trust.CACertFile), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	key, err := trust.ReadSeed(filepath.Join(dir, node, node+".nk"))
	if err != nil {
		t.Fatal(err)
	}
	return &natsembed.NodeTrust{Key: key, CA: ca}
}

func startHub(t testing.TB, noAdvertise bool) *testHub {
	t.Helper()
	h := &testHub{dir: filepath.Join(t.TempDir(), "fleet")}
	if _, err := trust.Init(h.dir, trust.InitOptions{Hubs: []string{"hub1", "hub2", "hub3"}, Gateways: testGatewayIDs}); err != nil {
		t.Fatal(err)
	}
	var clientURLs, routes, clusters []string
	for range 3 {
		a := testnet.FreeAddr(t)
		clusters = append(clusters, a)
		routes = append(routes, "nats://"+a)
	}
	started := make(chan *natsserver.Server, 3)
	errs := make(chan error, 3)
	for i, name := range []string{"hub1", "hub2", "hub3"} {
		cfg := natsembed.HubConfig{Name: name, Client: "127.0.0.1:0", Cluster: clusters[i], Leaf: "127.0.0.1:0",
			Routes: routes, StoreDir: t.TempDir(), Ping: testPing, NoAdvertise: noAdvertise, Trust: testTrust(t, h.dir, name)}
		go func() {
			ns, err := natsembed.StartHub(cfg, nil)
			if err != nil {
				errs <- err
				return
			}
			started <- ns
		}()
	}
	for range 3 {
		select {
		case err := <-errs:
			t.Fatal(err)
		case ns := <-started:
			t.Cleanup(ns.Shutdown)
			h.servers = append(h.servers, ns)
		}
	}
	slices.SortFunc(h.servers, func(a, b *natsserver.Server) int { return strings.Compare(a.Name(), b.Name()) })
	for _, ns := range h.servers {
		h.leafURLs = append(h.leafURLs, natsembed.LeafURL(ns))
		testFleets.Store(natsembed.LeafURL(ns), h.dir)
		t.Cleanup(func() { testFleets.Delete(natsembed.LeafURL(ns)) })
		clientURLs = append(clientURLs, ns.ClientURL())
	}
	nc, err := nats.Connect(strings.Join(clientURLs, ","), append(natsembed.ClientOptions("hub1", nodeTrust(t, h.dir, "hub1")),
		nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	h.nc = nc
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // the hub elects its leaders
	defer cancel()
	if err := fleet.SetupHub(ctx, nc, 3); err != nil {
		t.Fatal(err)
	}
	return h
}

// testGateway is an edge gateway: the i2c bench on the simulator, its own
// MCP server, an embedded leaf server dialling the hub, a fleet member.
type testGateway struct {
	id     string
	leaf   *natsserver.Server
	nc     *nats.Conn
	srv    *server.Server
	local  *gate
	member *fleet.Member
	proxy  *sharedtest.Proxy // nil unless dialled through one
	audit  *memAudit         // the gateway's audit records
}

// memAudit keeps a gateway's audit records in memory.
type memAudit struct {
	mu   sync.Mutex
	recs []audit.Record
}

func (a *memAudit) Append(_ context.Context, r audit.Record) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.recs = append(a.recs, r)
	return nil
}

// Records returns the records so far.
func (a *memAudit) Records() []audit.Record {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.recs)
}

// gate wraps a Local: a tool named in hold waits until its channel is
// closed, like a gateway stuck on a slow bus.
type gate struct {
	fleet.Local
	mu      sync.Mutex
	hold    map[string]chan struct{}
	callers []server.Caller // who each call ran as, in order
	done    atomic.Int64    // calls that returned
}

// Callers returns who each call so far ran as.
func (g *gate) Callers() []server.Caller {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.callers)
}

func (g *gate) Hold(tool string) (release func()) {
	ch := make(chan struct{})
	g.mu.Lock()
	g.hold[tool] = ch
	g.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			delete(g.hold, tool)
			g.mu.Unlock()
			close(ch)
		})
	}
}

func (g *gate) Call(ctx context.Context, c server.Caller, tool string, args json.RawMessage) (*mcp.CallToolResult, error) {
	g.mu.Lock()
	ch := g.hold[tool]
	g.callers = append(g.callers, c)
	g.mu.Unlock()
	if ch != nil {
		<-ch
	}
	defer g.done.Add(1)
	return g.Local.Call(ctx, c, tool, args)
}

// startGateway starts gateway id in zone, its leaf dialling hubURL
// (through a cuttable proxy when cut is true).
func startGateway(t testing.TB, id, zone, hubURL string, cut bool, opts ...func(*fleet.MemberConfig)) *testGateway {
	t.Helper()
	g := &testGateway{id: id, audit: &memAudit{}}
	if cut {
		g.proxy = sharedtest.StartProxy(t, strings.TrimPrefix(hubURL, "nats://"))
	}
	g.leaf, g.nc = startLeaf(t, id, hubURL, g.proxy)
	var err error
	g.srv = gatewaytest.Serve(t, simtest.Manifest(t, "i2c-bench.yml"), gatewaytest.Options{Server: []server.Option{server.WithAuditor(g.audit)}}).Server
	l, err := fleet.MCPLocal(t.Context(), g.srv.MCP())
	if err != nil {
		t.Fatal(err)
	}
	g.local = &gate{Local: l, hold: map[string]chan struct{}{}}
	cfg := fleet.MemberConfig{GatewayID: id, Zone: zone, Profile: "full",
		Locations: []string{""}, Upkeep: 500 * time.Millisecond, RouteRole: server.RoleOperator, Audit: g.srv.Audit}
	for _, o := range opts {
		o(&cfg)
	}
	g.member, err = fleet.Join(t.Context(), g.nc, cfg, g.local)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.member.Close() })
	return g
}

// startLeaf starts gateway id's leaf server dialling hubURL (through
// proxy when not nil) with id's credentials in the test fleet, and its
// in-process connection.
func startLeaf(t testing.TB, id, hubURL string, proxy *sharedtest.Proxy) (*natsserver.Server, *nats.Conn) {
	t.Helper()
	cfg := natsembed.LeafConfig{Name: id, Hubs: []string{hubURL}, StoreDir: t.TempDir(), Ping: testPing}
	if dir, ok := testFleets.Load(hubURL); ok {
		cfg.Trust = nodeTrust(t, dir.(string), id)
	}
	if proxy != nil {
		cfg.Hubs = []string{"nats://" + proxy.Addr()}
	}
	leaf, err := natsembed.StartLeaf(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(leaf.Shutdown)
	nc, err := natsembed.Connect(leaf, id, natsembed.LeafSelfOptions(cfg)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return leaf, nc
}

// linkUp says whether g's leaf link to the hub is up.
func (g *testGateway) linkUp() bool { return g.leaf.NumLeafNodes() > 0 }

// eventually polls cond every 50 ms until it holds or within passes.
func eventually(t testing.TB, within time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > within {
			t.Fatalf("%s: not within %s", what, within)
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		}
	}
	return time.Since(start)
}

// fleetOf starts the three-member hub and a gateway in each zone named,
// gw1, gw2, … each homed on a different hub member, and node's view of the
// hub with every gateway registered.
func fleetOf(t testing.TB, node string, zones ...string) (*testHub, []*testGateway, *fleet.View) {
	t.Helper()
	h := startHub(t, false)
	var gws []*testGateway
	for i, zone := range zones {
		gws = append(gws, startGateway(t, fmt.Sprint("gw", i+1), zone, h.leafURLs[i%len(h.leafURLs)], false))
	}
	return h, gws, watchAll(t, h.nc, node, manifests.RoleHub, len(zones), nil)
}

// watchAll is node's view of the hub (role role) once n gateways are
// registered.
func watchAll(t testing.TB, nc *nats.Conn, node string, role manifests.FleetRole, n int, linkUp func() bool) *fleet.View {
	t.Helper()
	v := fleet.Watch(nc, fleet.ViewConfig{Node: node, Role: role, LinkUp: linkUp, Budget: testBudget})
	t.Cleanup(v.Close)
	eventually(t, 3*time.Minute, "every gateway registered", func() bool { return len(v.Gateways()) == n })
	return v
}

// endpoint serves v's fleet endpoint on loopback and returns its base URL.
func endpoint(t testing.TB, v *fleet.View, cfg fleet.EndpointConfig) (*fleet.Endpoint, string) {
	t.Helper()
	e, err := fleet.NewEndpoint(v, cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(e.Handler())
	t.Cleanup(hs.Close)
	return e, hs.URL
}

// mcpClient opens an MCP session on url (streamable HTTP), passing every
// notification to notes.
func mcpClient(t testing.TB, url string, notes chan<- mcp.JSONRPCNotification) *client.Client {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(url, transport.WithContinuousListening())
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr)
	t.Cleanup(func() { c.Close() })
	if notes != nil {
		c.OnNotification(func(n mcp.JSONRPCNotification) {
			select {
			case notes <- n:
			default:
			}
		})
	}
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "fleet-test", Version: "1"}
	if _, err := c.Initialize(t.Context(), init); err != nil {
		t.Fatal(err)
	}
	return c
}

// call calls tool and decodes its structured content into out.
func call(t testing.TB, c *client.Client, tool string, args map[string]any, out any) *mcp.CallToolResult {
	t.Helper()
	res, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: args}})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s: %s: %v", tool, b, err)
	}
	return res
}

func canDo(t testing.TB, c *client.Client, intent map[string]any) promcp.CapabilityReport {
	t.Helper()
	var rep promcp.CapabilityReport
	call(t, c, "can_do", map[string]any{"intent": intent}, &rep)
	if rep.Error != nil {
		t.Fatalf("can_do failed: %+v", rep.Error)
	}
	return rep
}

// localCall calls tool on g's own gateway, not through the fleet, as an
// operator, and decodes its structured content into out.
func localCall(t *testing.T, g *testGateway, tool string, args map[string]any, out any) {
	t.Helper()
	b, _ := json.Marshal(args)
	if args == nil {
		b = nil
	}
	res, err := g.local.Call(t.Context(), server.Caller{Role: "operator"}, tool, b)
	if err != nil {
		t.Fatal(err)
	}
	sb, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(sb, out); err != nil {
		t.Fatal(err)
	}
}

// readsAndSetsPump checks that a gateway's read_<prefix>temperature reads
// good and its do_<prefix>set_pump succeeds under key, through call (the
// fleet's routing, or the gateway itself).
func readsAndSetsPump(t *testing.T, what, prefix, key string, call func(tool string, args map[string]any, out any)) {
	t.Helper()
	var read promcp.ReadResult
	call("read_"+prefix+"temperature", nil, &read)
	if read.Quality != promcp.QualityGood {
		t.Errorf("%s read = %+v", what, read)
	}
	var do promcp.DoResult
	call("do_"+prefix+"set_pump", map[string]any{"value": true, "idempotency_key": key}, &do)
	if do.Status != promcp.StatusSuccess || do.IdempotencyKey != key {
		t.Fatalf("%s do = %+v", what, do)
	}
}
