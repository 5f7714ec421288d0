// Package natsembed runs the NATS servers a fleet node embeds: a member of
// the hub cluster (JetStream domain "hub", leaf listener for the gateways)
// or an edge gateway's leaf server (its own JetStream domain, named after
// the gateway, dialling the hub). It is the only package that links
// nats-server (about +10 MB); the plain gateway binary leaves it out.
package natsembed

import (
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/promcp/promcp-device/fleet/trust"
	"github.com/promcp/promcp-device/internal/positive"
	"github.com/promcp/promcp-device/manifests"
)

// HubDomain is the JetStream domain of the hub cluster.
const HubDomain = "hub"

// HubConfig is one member of the hub cluster.
type HubConfig struct {
	// Name is the server's name, unique in the cluster.
	Name string
	// Client, Cluster and Leaf are host:port listen addresses; a port of
	// 0 picks a free one (see the server's addresses once started).
	Client, Cluster, Leaf string
	// ClusterName names the cluster ("hub" by default).
	ClusterName string
	// Routes are the other members' cluster URLs (nats://host:port);
	// members gossip the rest, so one seed is enough.
	Routes []string
	// ClusterAdvertise is the cluster address (host:port) a member gossips
	// to the others; "" is its listen address. Tests that put every route
	// through a proxy set it so that no member dials another around it.
	ClusterAdvertise string
	// StoreDir is the JetStream store; "" means a temporary directory.
	StoreDir string
	// Ping is the liveness check of every link (leaf links included).
	Ping manifests.FleetPing
	// NoAdvertise stops the members from telling leaf gateways about each
	// other's leaf URLs. Keep it false in production (it is how an edge
	// fails over to another member); tests that cut one path set it.
	NoAdvertise bool
	// Trust puts TLS on the client, leaf and cluster ports and lets in
	// only the nodes of its identities file, each with its permissions;
	// nil: no TLS and no authentication (an insecure fleet, on a trusted
	// network only).
	Trust *HubTrust
}

// LeafConfig is an edge gateway's leaf server.
type LeafConfig struct {
	// Name is the server's name and its JetStream domain: the gateway id.
	Name string
	// Hubs are the hub members' leaf URLs.
	Hubs []string
	// Client is a host:port for local clients; "" accepts in-process
	// connections only.
	Client string
	// StoreDir is the local JetStream store; "" means a temporary directory.
	StoreDir string
	// Ping is the leaf link's liveness check.
	Ping manifests.FleetPing
	// Reconnect is how long the leaf waits before dialling the hub again
	// after its link dropped (1 s when 0).
	Reconnect time.Duration
	// Trust authenticates the leaf link to the hub with the gateway's nkey
	// over TLS (the hub's certificate checked against the fleet CA); the
	// same key is the only one the leaf server accepts (its local clients
	// and in-process connection). nil: no TLS and no authentication.
	Trust *NodeTrust
}

// HubFromFleet is the hub member a fleet file describes.
func HubFromFleet(f *manifests.Fleet) HubConfig {
	cfg := HubConfig{Name: f.Gateway, Client: f.Listen.Client, Cluster: f.Listen.Cluster, Leaf: f.Listen.Leaf,
		ClusterName: f.Cluster.Name, Routes: f.Cluster.Peers, StoreDir: f.Store, Ping: f.LeafPing}
	if t := f.Trust; t != nil {
		cfg.Trust = &HubTrust{Cert: t.Cert, CA: t.CA, Key: t.Key, IdentitiesFile: t.IdentitiesFile}
	}
	return cfg
}

// LeafFromFleet is the edge leaf server a fleet file describes.
func LeafFromFleet(f *manifests.Fleet) LeafConfig {
	cfg := LeafConfig{Name: f.Gateway, Hubs: f.Hubs, Client: f.Listen.Client, StoreDir: f.Store, Ping: f.LeafPing}
	if t := f.Trust; t != nil {
		cfg.Trust = &NodeTrust{Key: t.Key, CA: t.CA}
	}
	return cfg
}

// StartHub starts a hub member and waits until it accepts connections.
// JetStream becomes usable once the cluster has elected its leaders (1 to
// 6 s after the members start).
func StartHub(cfg HubConfig, log *slog.Logger) (*server.Server, error) {
	opts := &server.Options{ServerName: cfg.Name, JetStream: true, JetStreamDomain: HubDomain, StoreDir: cfg.StoreDir,
		NoSigs: true, NoLog: log == nil}
	if err := hostPort(cfg.Client, &opts.Host, &opts.Port); err != nil {
		return nil, fmt.Errorf("hub %s: client address: %w", cfg.Name, err)
	}
	if err := cluster(opts, cfg); err != nil {
		return nil, err
	}
	if err := hostPort(cfg.Leaf, &opts.LeafNode.Host, &opts.LeafNode.Port); err != nil {
		return nil, fmt.Errorf("hub %s: leaf address: %w", cfg.Name, err)
	}
	opts.LeafNode.NoAdvertise = cfg.NoAdvertise
	ping(opts, cfg.Ping)
	if cfg.Trust == nil {
		return start(opts, log, nil)
	}
	names := &nodeNames{}
	if err := hubTrust(opts, cfg.Trust, names); err != nil { // leaf connections fall back to the same users
		return nil, fmt.Errorf("hub %s: %w", cfg.Name, err)
	}
	ns, err := start(opts, log, names) // the server keeps opts as its options
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	go watchIdentities(ns, opts, cfg.Trust, names, log)
	return ns, nil
}

// ConnectSelf opens a hub member's own connection, which reconnects for
// ever: in-process without Trust; with Trust through its client port on
// loopback, over TLS (the member's certificate, which names it, checked
// against the fleet CA) with its nkey and inbox prefix. (In-process
// connections to a server with TLS configured stall on nats-server's
// TLS sniffing over the in-process pipe, then fall back to the socket.)
func ConnectSelf(ns *server.Server, cfg HubConfig) (*nats.Conn, error) {
	if cfg.Trust == nil {
		return Connect(ns, cfg.Name)
	}
	addr, ok := ns.Addr().(*net.TCPAddr)
	if !ok {
		return nil, fmt.Errorf("hub %s: no client listener", cfg.Name)
	}
	host := addr.IP.String()
	if addr.IP.IsUnspecified() {
		host = "127.0.0.1"
	}
	tc := trust.ClientTLS(cfg.Trust.CA)
	tc.ServerName = cfg.Name // every hub certificate names its member
	nc, err := nats.Connect("tls://"+net.JoinHostPort(host, strconv.Itoa(addr.Port)), nats.Name(cfg.Name), nats.MaxReconnects(-1),
		nats.Secure(tc), NkeyOption(cfg.Trust.Key), InboxOption(cfg.Name))
	if err != nil {
		return nil, fmt.Errorf("hub %s: its own connection: %w", cfg.Name, err)
	}
	return nc, nil
}

// LeafSelfOptions are the options of an edge gateway's in-process
// connection to its own leaf server: its nkey and inbox prefix.
func LeafSelfOptions(cfg LeafConfig) []nats.Option {
	if cfg.Trust == nil {
		return nil
	}
	return []nats.Option{NkeyOption(cfg.Trust.Key), InboxOption(cfg.Name)}
}

// cluster sets the cluster options: none for a lone hub server (no
// cluster address and no routes: JetStream R1, for a bench or a trial),
// else the cluster listener and the routes to the other members (a
// clustered JetStream needs them configured, itself included or not).
func cluster(opts *server.Options, cfg HubConfig) error {
	if cfg.Cluster == "" && len(cfg.Routes) == 0 {
		return nil
	}
	opts.Cluster.Name = cfg.ClusterName
	if opts.Cluster.Name == "" {
		opts.Cluster.Name = manifests.DefaultClusterName
	}
	if err := hostPort(cfg.Cluster, &opts.Cluster.Host, &opts.Cluster.Port); err != nil {
		return fmt.Errorf("hub %s: cluster address: %w", cfg.Name, err)
	}
	routes, err := urls(cfg.Routes)
	if err != nil {
		return fmt.Errorf("hub %s: cluster peers: %w", cfg.Name, err)
	}
	// Sorted as a reload sorts them: ReloadOptions (an identities
	// reload) sorts the running server's routes in place, which is a
	// data race with the route dialler unless already in order.
	slices.SortFunc(routes, func(a, b *url.URL) int { return strings.Compare(a.String(), b.String()) })
	opts.Routes = routes
	opts.Cluster.Advertise = cfg.ClusterAdvertise
	return nil
}

// StartLeaf starts an edge gateway's leaf server: JetStream domain
// cfg.Name, dialling the hub members' leaf URLs, reconnecting every
// cfg.Reconnect (1 s by default).
func StartLeaf(cfg LeafConfig, log *slog.Logger) (*server.Server, error) {
	opts := &server.Options{ServerName: cfg.Name, JetStream: true, JetStreamDomain: cfg.Name, StoreDir: cfg.StoreDir,
		NoSigs: true, NoLog: log == nil, DontListen: cfg.Client == ""}
	if cfg.Client != "" {
		if err := hostPort(cfg.Client, &opts.Host, &opts.Port); err != nil {
			return nil, fmt.Errorf("leaf %s: client address: %w", cfg.Name, err)
		}
	}
	hubs, err := urls(cfg.Hubs)
	if err != nil {
		return nil, fmt.Errorf("leaf %s: hubs: %w", cfg.Name, err)
	}
	if len(hubs) == 0 {
		return nil, fmt.Errorf("leaf %s: no hub URL", cfg.Name)
	}
	remote := &server.RemoteLeafOpts{URLs: hubs}
	if t := cfg.Trust; t != nil {
		seed, err := t.Key.Seed()
		if err != nil {
			return nil, fmt.Errorf("leaf %s: %w", cfg.Name, err)
		}
		pub, _ := t.Key.PublicKey()
		remote.Nkey, remote.TLS, remote.TLSConfig, remote.TLSTimeout = string(seed), true, trust.ClientTLS(t.CA), 5
		opts.Nkeys = []*server.NkeyUser{{Nkey: pub}}
	}
	opts.LeafNode.Remotes = []*server.RemoteLeafOpts{remote}
	opts.LeafNode.ReconnectInterval = positive.Or(cfg.Reconnect, time.Second)
	ping(opts, cfg.Ping)
	return start(opts, log, nil)
}

// Connect opens an in-process client connection to ns (no socket), which
// reconnects for ever; opts add to it (UserInfo where ns requires a user).
func Connect(ns *server.Server, name string, opts ...nats.Option) (*nats.Conn, error) {
	opts = append([]nats.Option{nats.InProcessServer(ns), nats.Name(name), nats.MaxReconnects(-1)}, opts...)
	nc, err := nats.Connect(ns.ClientURL(), opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to the embedded server: %w", err)
	}
	return nc, nil
}

// LeafURL is the URL gateways dial to reach hub member ns as a leaf.
func LeafURL(ns *server.Server) string {
	return "nats://" + leafAddr(ns)
}

// RouteURL is the URL other hub members use to reach ns.
func RouteURL(ns *server.Server) string {
	return "nats://" + ns.ClusterAddr().String()
}

func leafAddr(ns *server.Server) string {
	// The leaf listener's address is not exported; Varz has it.
	v, err := ns.Varz(nil)
	if err != nil || v == nil {
		return ""
	}
	return net.JoinHostPort(v.LeafNode.Host, strconv.Itoa(v.LeafNode.Port))
}

func ping(opts *server.Options, p manifests.FleetPing) {
	opts.PingInterval = positive.Or(p.Interval, manifests.DefaultLeafPingInterval)
	opts.MaxPingsOut = positive.Or(p.MaxMissed, manifests.DefaultLeafPingMaxOut)
}

// readyWait is how long a starting server may take to accept connections.
const readyWait = time.Minute

func start(opts *server.Options, log *slog.Logger, names *nodeNames) (*server.Server, error) {
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("nats server %s: %w", opts.ServerName, err)
	}
	if log != nil {
		ns.SetLoggerV2(&slogAdapter{log: log.With("nats", opts.ServerName), names: names}, false, false, false)
	}
	go ns.Start()
	// A member recovering a large JetStream store (a Pi's SD card), or a
	// loaded machine, can take well over 10 s to listen; giving up sooner
	// leaves the fleet a member short for no reason.
	if !ns.ReadyForConnections(readyWait) {
		ns.Shutdown()
		return nil, fmt.Errorf("nats server %s: not ready after %s", opts.ServerName, readyWait)
	}
	return ns, nil
}

// hostPort splits "host:port" into host and port; port 0 becomes -1
// (a random port, in nats-server's options).
func hostPort(s string, host *string, port *int) error {
	if s == "" {
		*host, *port = "127.0.0.1", -1
		return nil
	}
	h, p, err := net.SplitHostPort(s)
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		return err
	}
	if n == 0 {
		n = -1
	}
	*host, *port = h, n
	return nil
}

func urls(ss []string) ([]*url.URL, error) {
	var out []*url.URL
	for _, s := range ss {
		if !strings.Contains(s, "://") {
			s = "nats://" + s
		}
		u, err := url.Parse(s)
		if err != nil {
			return nil, err
		}
		if u.Scheme == "nats-leaf" {
			u.Scheme = "nats"
		}
		out = append(out, u)
	}
	return out, nil
}

// slogAdapter passes the server's log lines to slog: notices as info,
// debug and trace lines dropped. Permission violations and refused
// logins (errors) name the identity (node, role, revoked) and subject.
type slogAdapter struct {
	log   *slog.Logger
	names *nodeNames // nil on a leaf server
}

func (a *slogAdapter) Noticef(format string, v ...any) { a.log.Info(fmt.Sprintf(format, v...)) }
func (a *slogAdapter) Warnf(format string, v ...any)   { a.log.Warn(fmt.Sprintf(format, v...)) }
func (a *slogAdapter) Fatalf(format string, v ...any)  { a.log.Error(fmt.Sprintf(format, v...)) }
func (a *slogAdapter) Errorf(format string, v ...any) {
	line := fmt.Sprintf(format, v...)
	a.log.Error(line, a.names.annotate(line)...)
}
func (a *slogAdapter) Debugf(string, ...any) {}
func (a *slogAdapter) Tracef(string, ...any) {}
