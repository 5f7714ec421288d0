package manifests

import (
	"net"
	"net/url"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/goccy/go-yaml/ast"
)

// FleetRole is what a node does in a fleet.
type FleetRole string

// The fleet roles.
const (
	// RoleEdge is a gateway that embeds a NATS leaf server and connects out
	// to the hub; it keeps serving its own MCP endpoint without the hub.
	RoleEdge FleetRole = "edge"
	// RoleThinEdge is a gateway with a NATS client only, for the smallest
	// boards: it connects to a hub (or a site leaf) directly.
	RoleThinEdge FleetRole = "thin-edge"
	// RoleHub is one member of the clustered NATS server with JetStream
	// that owns the replicated buckets and serves the fleet endpoint.
	RoleHub FleetRole = "hub"
)

// Fleet defaults.
const (
	DefaultLeafPingInterval = time.Second
	DefaultLeafPingMaxOut   = 2
	DefaultCanDoBudget      = 500 * time.Millisecond
	DefaultClusterName      = "hub"
	// The hub's store limits (limits: in a hub's fleet file).
	DefaultAuditMaxAge     = 30 * 24 * time.Hour
	DefaultAuditMaxBytes   = 1 << 30
	DefaultRecordsMaxBytes = 256 << 20
)

// Fleet is a fleet file: the role of this node and how it reaches the rest.
type Fleet struct {
	File    string
	Version int
	Role    FleetRole
	// Gateway is the node's id, lower_snake_case: the gateway id that
	// namespaces its tools on the fleet endpoint, or a hub member's name.
	Gateway string
	// Zone and Tags place the gateway; fleet can_do fans out to the
	// gateways whose zone matches the intent's location.
	Zone string
	Tags []string
	// Profile is PhysMCP's device profile: full, lite, proxy or aggregator
	// (default: full for edge and thin-edge, aggregator for hub).
	Profile string
	// Hubs are the hub URLs this node dials: leaf URLs for an edge, client
	// URLs for a thin-edge. A hub lists none.
	Hubs []string
	// Listen is where a hub listens (client, cluster and leaf ports); an
	// edge may set Client to let local clients in.
	Listen FleetListen
	// Cluster names the hub cluster and its other members' route URLs.
	Cluster FleetCluster
	// Store is the directory of the node's JetStream store; "" keeps it
	// in a temporary directory removed at exit.
	Store string
	// LeafPing is how often the leaf link is pinged and how many missed
	// pings declare it dead (1 s × 2 by default: a silent link is found
	// within about 3 s; NATS's own default is minutes).
	LeafPing FleetPing
	// CanDoBudget bounds a fleet can_do's fan-out (500 ms by default).
	CanDoBudget time.Duration
	// HTTP is where the node serves the fleet MCP endpoint ("" for none
	// on a gateway; a hub needs one).
	HTTP string
	// Routes caps, on a gateway, the role a routed call or can_do may
	// carry by the node it came through (hub member or gateway, bound by
	// NATS): routes: {hub1: {max_role: supervisor}}. A node not listed
	// carries at most the gateway's own --role.
	Routes map[string]FleetRoute
	// RequireCallerCredential makes a gateway refuse routed calls and
	// can_do that carry no caller JWT it verifies itself (its policy's
	// jwt identity providers): require_caller_credential: true.
	RequireCallerCredential bool
	// Trust is the node's identity (its nkey), the fleet CA, and on a hub
	// its TLS certificate and the identities file of the fleet's nodes;
	// written by promcp-device fleet init. Nil only when Insecure.
	Trust *FleetTrust
	// Insecure says the fleet runs without TLS and authentication (a
	// trusted network only; logged as a warning on every start); without
	// it a file lacking identity and ca is refused.
	Insecure bool
	// Limits bound what a hub keeps (limits: on a hub only; the defaults
	// otherwise).
	Limits FleetLimits
}

// FleetLimits bound the hub's audit stream (FLEET_AUDIT: by age and size,
// oldest first) and its lease and idempotency buckets (by size each; a
// new record is refused when full).
type FleetLimits struct {
	AuditMaxAge     time.Duration
	AuditMaxBytes   int64
	RecordsMaxBytes int64
}

// FleetRoute is what calls through one entry node may carry.
type FleetRoute struct {
	// MaxRole is the highest role a caller through the node acts as.
	MaxRole string
}

// FleetListen are a node's listen addresses, host:port.
type FleetListen struct {
	Client, Cluster, Leaf string
}

// FleetCluster is the hub cluster.
type FleetCluster struct {
	Name  string
	Peers []string
}

// FleetPing is the leaf link's liveness check.
type FleetPing struct {
	Interval  time.Duration
	MaxMissed int
}

var (
	fleetKeys   = []string{"version", "role", "gateway", "zone", "tags", "profile", "hubs", "listen", "cluster", "store", "leaf_ping", "can_do_budget", "http", "routes", "identity", "ca", "cert", "key", "identities", "credentials", "users", "insecure", "require_caller_credential", "limits"}
	limitKeys   = []string{"audit_max_age", "audit_max_bytes", "records_max_bytes"}
	listenKeys  = []string{"client", "cluster", "leaf"}
	clusterKeys = []string{"name", "peers"}
	pingKeys    = []string{"interval", "max_missed"}
	routeKeys   = []string{"max_role"}
	fleetRoles  = words(RoleEdge, RoleThinEdge, RoleHub)
	fleetProfs  = []string{"full", "lite", "proxy", "aggregator"}
)

// LoadFleet reads and validates the fleet file at path.
func LoadFleet(path string) (*Fleet, error) {
	return loadFile(path, "fleet file", ParseFleet)
}

// ParseFleet decodes and validates a fleet file held in data, with the
// defaults filled in. Problems are *Error values (file:line:col field),
// all of them joined, as Parse reports a manifest's; it never panics.
func ParseFleet(file string, data []byte) (*Fleet, error) {
	return parse(file, data, func(d *decoder, root ast.Node) *Fleet {
		f := &Fleet{File: file}
		o, ok := d.document(root, fleetKeys, "role and gateway")
		if !ok {
			return f
		}
		f.Version = o.version()
		enum(o, "role", &f.Role, fleetRoles, true)
		if s, ok := d.name(o.f["gateway"], o.at("gateway")); ok {
			f.Gateway = s
			if len(s) > 32 {
				o.add("gateway", ErrRange, "%q is %d characters (want at most 32)", s, len(s))
			}
		}
		o.require("gateway", "the gateway id, lower_snake_case")
		if s, ok := d.name(o.f["zone"], o.at("zone")); ok {
			f.Zone = s
		}
		for i, t := range o.strs("tags") {
			if t != "" && !nameRE().MatchString(t) {
				d.add(index(o.at("tags"), i), ErrBadName, "%q (want lower_snake_case)", t)
			}
			f.Tags = append(f.Tags, t)
		}
		enum(o, "profile", &f.Profile, fleetProfs, false)
		f.Hubs = o.strs("hubs")
		for i, h := range f.Hubs {
			if h != "" && !validNATSURL(h) {
				d.add(index(o.at("hubs"), i), ErrUnknownValue, "%q (want nats://host:port)", h)
			}
		}
		if l, ok := o.sub("listen", listenKeys); ok {
			f.Listen = FleetListen{Client: hostPort(l, "client"), Cluster: hostPort(l, "cluster"), Leaf: hostPort(l, "leaf")}
		}
		if c, ok := o.sub("cluster", clusterKeys); ok {
			f.Cluster.Name = c.str("name")
			f.Cluster.Peers = c.strs("peers")
			for i, p := range f.Cluster.Peers {
				if p != "" && !validNATSURL(p) {
					d.add(index(c.at("peers"), i), ErrUnknownValue, "%q (want nats://host:port)", p)
				}
			}
		}
		f.Store = o.str("store")
		f.LeafPing = FleetPing{Interval: DefaultLeafPingInterval, MaxMissed: DefaultLeafPingMaxOut}
		if p, ok := o.sub("leaf_ping", pingKeys); ok {
			if p.has("interval") {
				f.LeafPing.Interval = p.dur("interval")
				if f.LeafPing.Interval < 100*time.Millisecond || f.LeafPing.Interval > time.Minute {
					p.add("interval", ErrRange, "%s (want 100ms to 1m)", f.LeafPing.Interval)
				}
			}
			intIn(p, "max_missed", &f.LeafPing.MaxMissed, 1, 10, "%d (want 1 to 10)")
		}
		f.CanDoBudget = DefaultCanDoBudget
		if o.has("can_do_budget") {
			f.CanDoBudget = o.dur("can_do_budget")
			if f.CanDoBudget < 10*time.Millisecond || f.CanDoBudget > 10*time.Second {
				o.add("can_do_budget", ErrRange, "%s (want 10ms to 10s; PhysMCP's budget is 500ms)", f.CanDoBudget)
			}
		}
		f.HTTP = hostPort(o, "http")
		fleetRoutes(f, o)
		f.RequireCallerCredential = o.boolean("require_caller_credential")
		fleetLimits(f, o)
		fleetCredentials(f, o, time.Now())
		if !d.aborted {
			checkFleet(f, o)
			checkFleetAuth(f, o)
		}
		return f
	})
}

// fleetLimits decodes limits: {audit_max_age, audit_max_bytes,
// records_max_bytes}, each within a range that keeps a hub working.
func fleetLimits(f *Fleet, o obj) {
	f.Limits = FleetLimits{AuditMaxAge: DefaultAuditMaxAge, AuditMaxBytes: DefaultAuditMaxBytes, RecordsMaxBytes: DefaultRecordsMaxBytes}
	l, ok := o.sub("limits", limitKeys)
	if !ok {
		return
	}
	if l.has("audit_max_age") {
		f.Limits.AuditMaxAge = l.dur("audit_max_age")
		if f.Limits.AuditMaxAge < time.Hour || f.Limits.AuditMaxAge > 10*365*24*time.Hour {
			l.add("audit_max_age", ErrRange, "%s (want 1h to 87600h; the default is 720h, 30 days)", f.Limits.AuditMaxAge)
		}
	}
	for _, b := range []struct {
		key     string
		dst     *int64
		lo, def int64
	}{
		{"audit_max_bytes", &f.Limits.AuditMaxBytes, 1 << 20, DefaultAuditMaxBytes},
		{"records_max_bytes", &f.Limits.RecordsMaxBytes, 1 << 20, DefaultRecordsMaxBytes},
	} {
		if !l.has(b.key) {
			continue
		}
		if n, ok := l.integer(b.key); ok {
			*b.dst = n
			if n < b.lo || n > 1<<40 {
				l.add(b.key, ErrRange, "%d (want %d to %d bytes; the default is %d)", n, b.lo, int64(1)<<40, b.def)
			}
		}
	}
}

// fleetRoutes decodes routes: a mapping of node ids to {max_role: ROLE}.
func fleetRoutes(f *Fleet, o obj) {
	p := o.at("routes")
	for _, mv := range o.d.entries(o.f["routes"], p) {
		node := keyString(mv.Key)
		rp := join(p, node)
		if !nodeIDRE().MatchString(node) {
			o.d.add(rp, ErrBadName, "%q (want a node id: letters, digits, '-' or '_')", node)
			continue
		}
		r, ok := o.d.obj(mv.Value, rp, routeKeys)
		if !ok {
			continue
		}
		role, _ := o.d.name(r.f["max_role"], r.at("max_role"))
		r.require("max_role", "the highest role a caller through "+node+" acts as, such as operator")
		if f.Routes == nil {
			f.Routes = map[string]FleetRoute{}
		}
		f.Routes[node] = FleetRoute{MaxRole: role}
	}
}

var nodeIDRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]+$`) })

// checkFleet checks what each role needs.
func checkFleet(f *Fleet, o obj) {
	if f.Profile == "" {
		f.Profile = "full"
		if f.Role == RoleHub {
			f.Profile = "aggregator"
		}
	}
	switch f.Role {
	case RoleEdge, RoleThinEdge:
		if len(f.Hubs) == 0 && o.f != nil {
			o.add("hubs", ErrMissing, "hubs (want the hub URLs this %s dials, such as [nats://hub1:7422])", f.Role)
		}
		if f.Listen.Cluster != "" || f.Listen.Leaf != "" || len(f.Cluster.Peers) > 0 {
			o.add("listen", ErrNotAllowed, ": a %s listens for no cluster or leaf links (only a hub does)", f.Role)
		}
		if o.has("limits") {
			o.add("limits", ErrNotAllowed, ": a gateway (role %s) keeps none of the fleet's records (the hub's fleet file sets their limits)", f.Role)
		}
	case RoleHub:
		if len(f.Hubs) > 0 {
			o.add("hubs", ErrNotAllowed, ": a hub dials no hub (list the other members in cluster.peers)")
		}
		for _, k := range []struct{ key, v string }{{"client", f.Listen.Client}, {"cluster", f.Listen.Cluster}, {"leaf", f.Listen.Leaf}} {
			if k.v == "" && o.f != nil {
				o.add("listen", ErrMissing, "listen.%s (want host:port; a hub listens for clients, its cluster and leaf gateways)", k.key)
			}
		}
		if f.HTTP == "" && o.f != nil {
			o.add("http", ErrMissing, "http (want host:port: a hub serves the fleet endpoint)")
		}
		if f.Cluster.Name == "" {
			f.Cluster.Name = DefaultClusterName
		}
	}
}

// hostPort decodes a host:port with a port in 0..65535.
func hostPort(o obj, k string) string {
	s := o.str(k)
	if s == "" {
		return ""
	}
	if _, p, err := net.SplitHostPort(s); err != nil || !validPortNumber(p) {
		o.add(k, ErrUnknownValue, "%q (want host:port, such as 127.0.0.1:4222)", s)
	}
	return s
}

func validPortNumber(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n >= 0 && n <= 65535
}

// validNATSURL accepts nats://host:port, tls://host:port and host:port.
func validNATSURL(s string) bool {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		_, p, err := net.SplitHostPort(s)
		return err == nil && validPortNumber(p)
	}
	switch u.Scheme {
	case "nats", "tls", "nats-leaf":
	default:
		return false
	}
	_, p, err := net.SplitHostPort(u.Host)
	return err == nil && validPortNumber(p)
}
