// Package sharedtest starts a fleet on loopback for tests: a three-node
// hub cluster (JetStream domain "hub") and leaf servers for gateways, each
// with its own JetStream domain. Every link between two nodes (routes,
// leaf links, clients of a hub member) passes through a Proxy that a test
// can cut, delay, make lose replies or freeze (Hub.Freeze: a node stopped
// as by SIGSTOP); a History records what concurrent clients did, for
// checks against the fleet's invariants. Everything listens on 127.0.0.1
// and stops with the test.
package sharedtest

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/promcp/promcp-device/fleet/natsembed"
	"github.com/promcp/promcp-device/fleet/shared"
	"github.com/promcp/promcp-device/fleet/trust"
	"github.com/promcp/promcp-device/internal/testnet"
)

// Hub is a clustered nats-server of three nodes, every link on TLS with
// per-node nkeys from a fleet directory of its own (trust.Init: hub-0 to
// hub-2, gateways GatewayIDs), as a real fleet runs.
type Hub struct {
	t     testing.TB
	dir   string
	mu    sync.Mutex
	nodes []*server.Server
	cfgs  []natsembed.HubConfig
	links links // every proxy between two nodes of the fleet
}

// GatewayIDs are the gateways a test hub has credentials for.
var GatewayIDs = []string{"gw1", "gw2", "gw3", "gw4", "gw5", "gw6", "gw7", "gw8", "gw9"}

// Shares is the hubs' shared-state service's check in tests: every
// gateway shares every owner's equipment (the tests' gateways share
// gw1's), except owners named private-*, shared by none.
func Shares(gw, owner string) bool { return !strings.HasPrefix(owner, "private-") }

// refusingAddr is a loopback address where nothing listens (port 1,
// tcpmux): a dial to it is refused at once.
const refusingAddr = "127.0.0.1:1"

// StartHub starts three clustered servers with JetStream (domain "hub")
// and a leaf listener each, and waits until JetStream answers. Its
// members route to each other directly; leaf links and clients pass
// through proxies.
func StartHub(t testing.TB) *Hub {
	t.Helper()
	return startHub(t, false)
}

// StartProxiedHub is StartHub with every route between members through a
// proxy too, so that a test can freeze or cut a member (Hub.Freeze). A
// fleet started so is slower to become usable: about one start in six
// left a leaf with "no responders" from the hub's JetStream for minutes
// (not seen with direct routes), so only the fault harness uses it.
func StartProxiedHub(t testing.TB) *Hub {
	t.Helper()
	return startHub(t, true)
}

func startHub(t testing.TB, proxiedRoutes bool) *Hub {
	t.Helper()
	h := &Hub{t: t, dir: filepath.Join(t.TempDir(), "fleet")}
	const n = 3
	var names []string
	for i := range n {
		names = append(names, fmt.Sprintf("hub-%d", i))
	}
	if _, err := trust.Init(h.dir, trust.InitOptions{Hubs: names, Gateways: GatewayIDs}); err != nil {
		t.Fatal(err)
	}
	var clusters []string
	for range n {
		clusters = append(clusters, fmt.Sprintf("127.0.0.1:%d", testnet.FreePort(t)))
	}
	// Every route goes through a proxy of its own (member i dials member
	// j through i->j), and members gossip an address where nothing
	// listens, so that no member dials another around the proxies. Its
	// dial must fail (connection refused): an address that accepts and
	// closes (a cut proxy) lets the implicit route's TCP connect succeed,
	// its TLS handshake fail, and the route be dialled again at once,
	// for ever: measured, about 35 failed route handshakes a second in
	// every proxied fleet, faults or none, a load of its own.
	advertise := refusingAddr
	if !proxiedRoutes {
		advertise = ""
	}
	for i, name := range names {
		var routes []string
		for j := range n {
			switch {
			case j == i:
			case proxiedRoutes:
				p := h.link(name, names[j], clusters[j])
				routes = append(routes, "nats://"+p.Addr())
			default:
				routes = append(routes, "nats://"+clusters[j])
			}
		}
		h.cfgs = append(h.cfgs, natsembed.HubConfig{Name: name, ClusterName: "hub",
			Client:  fmt.Sprintf("127.0.0.1:%d", testnet.FreePort(t)),
			Cluster: clusters[i], Routes: routes, ClusterAdvertise: advertise,
			Leaf: fmt.Sprintf("127.0.0.1:%d", testnet.FreePort(t)), NoAdvertise: true, StoreDir: t.TempDir(),
			Trust: h.hubTrust(name)})
		h.nodes = append(h.nodes, nil)
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { h.start(i) }) // a member waits for its peers before it is ready
	}
	wg.Wait()
	t.Cleanup(func() {
		for i := range n {
			h.Stop(i)
		}
	})
	h.WaitReady(30 * time.Second)
	for i := range n {
		h.serve(i)
	}
	return h
}

// Dir is the hub's fleet directory (trust.Init's layout: DIR/<node>/<node>.nk,
// DIR/ca.crt, DIR/identities).
func (h *Hub) Dir() string { return h.dir }

// hubTrust is hub member name's TLS certificate, nkey and identities.
func (h *Hub) hubTrust(name string) *natsembed.HubTrust {
	h.t.Helper()
	nt := h.NodeTrust(name)
	cert, err := trust.ReadKeyPair(filepath.Join(h.dir, name, name+".crt"), filepath.Join(h.dir, name, name+".key"), nt.CA, time.Now())
	if err != nil {
		h.t.Fatal(err)
	}
	return &natsembed.HubTrust{Cert: cert, CA: nt.CA, Key: nt.Key, IdentitiesFile: filepath.Join(h.dir, trust.IdentitiesFile),
		Watch: 100 * time.Millisecond}
}

// NodeTrust is node's nkey and the fleet CA, from the fleet directory.
func (h *Hub) NodeTrust(node string) *natsembed.NodeTrust {
	h.t.Helper()
	ca, err := trust.ReadCA(filepath.Join(h.dir, trust.CACertFile), time.Now())
	if err != nil {
		h.t.Fatal(err)
	}
	key, err := trust.ReadSeed(filepath.Join(h.dir, node, node+".nk"))
	if err != nil {
		h.t.Fatal(err)
	}
	return &natsembed.NodeTrust{Key: key, CA: ca}
}

// ConnectAs connects node (a hub member or a gateway of the fleet
// directory) to hub node i as a client, with its own credentials,
// through a proxy of its own (frozen with either node).
func (h *Hub) ConnectAs(i int, node string) *nats.Conn {
	h.t.Helper()
	p := h.link(node, h.cfgs[i].Name, h.cfgs[i].Client)
	nc, err := nats.Connect("nats://"+p.Addr(), append(natsembed.ClientOptions(node, h.NodeTrust(node)),
		nats.ReconnectWait(50*time.Millisecond), nats.MaxReconnects(-1))...)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(nc.Close)
	return nc
}

// serve runs the hubs' shared-state service on node i, through a
// connection to that node only (it answers again once the node restarts).
func (h *Hub) serve(i int) {
	h.t.Helper()
	nc := h.ConnectAs(i, h.cfgs[i].Name)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	svc, err := shared.Serve(ctx, nc, shared.ServiceConfig{Node: h.cfgs[i].Name, Shares: Shares})
	if svc == nil {
		h.t.Fatalf("shared-state service on hub node %d: %v", i, err)
	}
	h.t.Cleanup(func() { svc.Close() })
}

// start starts node i, up to three times: under load a member may take
// longer than natsembed's wait to be ready (its JetStream store recovered).
func (h *Hub) start(i int) {
	var ns *server.Server
	var err error
	for try := 0; try < 3; try++ {
		if ns, err = natsembed.StartHub(h.cfgs[i], diagLog()); err == nil {
			break
		}
		h.t.Logf("hub node %d, try %d: %v", i, try+1, err)
	}
	if err != nil {
		h.t.Errorf("hub node %d: %v", i, err)
		return
	}
	h.mu.Lock()
	h.nodes[i] = ns
	h.mu.Unlock()
}

// Stop shuts node i down (a lost hub node); Restart starts it again on
// the same ports and store.
func (h *Hub) Stop(i int) {
	h.mu.Lock()
	ns := h.nodes[i]
	h.nodes[i] = nil
	h.mu.Unlock()
	if ns != nil {
		ns.Shutdown()
		ns.WaitForShutdown()
	}
}

// Restart starts a stopped node again.
func (h *Hub) Restart(i int) {
	h.t.Helper()
	h.start(i)
	if h.Node(i) == nil {
		h.t.FailNow()
	}
}

// Node returns node i, nil when stopped.
func (h *Hub) Node(i int) *server.Server {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.nodes[i]
}

// ClientURL is node i's client URL (TLS and an nkey required), with no
// proxy in between: a connection to it sees no fault but the node's own.
func (h *Hub) ClientURL(i int) string {
	return "nats://" + h.cfgs[i].Client
}

// LeafURLs are the hub nodes' leaf listener addresses.
func (h *Hub) LeafURLs() []string {
	var out []string
	for _, c := range h.cfgs {
		out = append(out, c.Leaf)
	}
	return out
}

// Connect connects a client to the first node, as hub member hub-0.
func (h *Hub) Connect() *nats.Conn {
	h.t.Helper()
	return h.ConnectAs(0, h.cfgs[0].Name)
}

// WaitReady polls until the hub's JetStream answers an account info
// request (Raft elections take seconds after a cold start), failing the
// test after timeout.
func (h *Hub) WaitReady(timeout time.Duration) {
	h.t.Helper()
	nc := h.Connect()
	defer nc.Close()
	js, err := jetstream.NewWithDomain(nc, "hub")
	if err != nil {
		h.t.Fatal(err)
	}
	if err := Poll(timeout, func(ctx context.Context) error {
		_, err := js.AccountInfo(ctx)
		return err
	}); err != nil {
		h.t.Fatalf("hub JetStream not ready: %v", err)
	}
}

// Poll calls f until it returns nil or timeout passes (each call bounded
// by a short context); it returns f's last error.
func Poll(timeout time.Duration, f func(ctx context.Context) error) error {
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		err := f(ctx)
		<-ctx.Done()
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
	}
}

// Leaf is a gateway's embedded leaf server: JetStream domain = its name,
// a leaf link to every hub node through a proxy the test can cut.
type Leaf struct {
	Name    string
	Server  *server.Server
	proxies []*Proxy
	trust   *natsembed.NodeTrust
}

// StartLeaf starts gateway name's leaf server linked to the hub (over
// TLS, with the gateway's own nkey) and waits for the link.
func (h *Hub) StartLeaf(name string) *Leaf {
	h.t.Helper()
	l := &Leaf{Name: name, trust: h.NodeTrust(name)}
	var remotes []string
	for i, addr := range h.LeafURLs() {
		p := h.link(name, h.cfgs[i].Name, addr)
		l.proxies = append(l.proxies, p)
		remotes = append(remotes, "nats://"+p.Addr())
	}
	ns, err := natsembed.StartLeaf(natsembed.LeafConfig{Name: name, Hubs: remotes, StoreDir: h.t.TempDir(), Trust: l.trust,
		Reconnect: 100 * time.Millisecond}, diagLog())
	if err != nil {
		h.t.Fatal(err)
	}
	l.Server = ns
	h.t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	l.WaitLinked(h.t, true, 15*time.Second)
	return l
}

// Conn connects an in-process client to the leaf, as the gateway does
// (its nkey and inbox prefix).
func (l *Leaf) Conn(t testing.TB) *nats.Conn {
	t.Helper()
	nc, err := natsembed.Connect(l.Server, l.Name, natsembed.LeafSelfOptions(natsembed.LeafConfig{Name: l.Name, Trust: l.trust})...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// Cut breaks the leaf's link to every hub node (TCP reset) and refuses
// new links until Heal.
func (l *Leaf) Cut(t testing.TB) {
	t.Helper()
	for _, p := range l.proxies {
		p.Cut()
	}
	l.WaitLinked(t, false, 10*time.Second)
}

// Heal lets the leaf link again and waits for it.
func (l *Leaf) Heal(t testing.TB) {
	t.Helper()
	for _, p := range l.proxies {
		p.Heal()
	}
	l.WaitLinked(t, true, 15*time.Second)
}

// Linked reports whether the leaf has a link to the hub.
func (l *Leaf) Linked() bool { return l.Server.NumLeafNodes() > 0 }

// WaitLinked polls until the link is up (or down), failing after timeout.
func (l *Leaf) WaitLinked(t testing.TB, up bool, timeout time.Duration) {
	t.Helper()
	if err := Poll(timeout, func(ctx context.Context) error {
		if l.Linked() == up {
			return nil
		}
		return fmt.Errorf("leaf %s linked=%v, want %v", l.Name, l.Linked(), up)
	}); err != nil {
		t.Fatal(err)
	}
}

// Member is the hub member the leaf's link goes to ("" when unlinked).
func (l *Leaf) Member() string {
	lz, err := l.Server.Leafz(nil)
	if err != nil || lz == nil {
		return ""
	}
	for _, c := range lz.Leafs {
		addr := net.JoinHostPort(c.IP, strconv.Itoa(c.Port))
		for _, p := range l.proxies {
			if p.Addr() == addr {
				return p.To
			}
		}
	}
	return ""
}
