//go:build !nofleet

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/promcp/promcp-device/fleet"
	"github.com/promcp/promcp-device/fleet/shared"
	"github.com/promcp/promcp-device/fleet/trust"
	"github.com/promcp/promcp-device/idempotency"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/policy"
	"github.com/promcp/promcp-device/server"
)

// leftOutFleet is empty: this binary has the feature (the -tags build names it, features.go).
const leftOutFleet = ""

// embedded runs the NATS servers a node embeds; without the natsserver
// build tag it refuses (see fleet_embed.go and fleet_noembed.go).
type embedded interface {
	// hub starts a hub member and returns a client of it.
	hub(f *manifests.Fleet, log *slog.Logger) (nc *nats.Conn, stop func(), err error)
	// leaf starts an edge gateway's leaf server and returns an in-process
	// client of it, and its link to the hub.
	leaf(f *manifests.Fleet, log *slog.Logger) (nc *nats.Conn, link leafLink, stop func(), err error)
}

// leafLink is a gateway's link to the hub: whether it is up, and (an
// edge's leaf server) how to restart it (nil: cannot).
type leafLink struct {
	up   func() bool
	kick func() (string, error)
}

// fleetNode is this process in the fleet: its connection, its view of the
// fleet, its membership (a gateway) and the fleet endpoint it serves.
type fleetNode struct {
	file   *manifests.Fleet
	nc     *nats.Conn
	view   *fleet.View
	member *fleet.Member
	http   *http.Server
	linkUp func() bool                // the link to the hub is up (nil on a hub)
	peers  atomic.Pointer[fleet.View] // the view peerCount asks, once there is one
	shared *shared.State
	// equipment are the owners of the shared equipment this gateway's
	// policy claims fleet-wide (equipment-NAME), registered for the hubs.
	equipment []string
	stops     []func()
}

// Close leaves the fleet and stops what the node started, newest first.
func (n *fleetNode) Close() {
	if n.http != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		n.http.Shutdown(ctx)
		cancel()
	}
	if n.member != nil {
		n.member.Close()
	}
	if n.view != nil {
		n.view.Close()
	}
	for _, s := range slices.Backward(n.stops) { // the forwarder, the connection, the server, its store
		s()
	}
}

// connect joins the NATS side as the fleet file's role says.
func connectFleet(f *manifests.Fleet, log *slog.Logger) (*fleetNode, leafLink, error) {
	n := &fleetNode{file: f}
	if f.Store == "" && f.Role != manifests.RoleThinEdge {
		dir, err := os.MkdirTemp("", "promcp-fleet-"+f.Gateway+"-")
		if err != nil {
			return nil, leafLink{}, err
		}
		f.Store = dir
		n.stops = append(n.stops, func() { os.RemoveAll(dir) })
		log.Warn("fleet file names no store: JetStream keeps its data in a temporary directory, removed at exit", "dir", dir)
	}
	if f.Insecure {
		log.Warn("fleet: INSECURE: insecure: true in the fleet file: no TLS and no authentication on any fleet link; anyone on the network can read the fleet's traffic and act as any node (run promcp-device fleet init)", "fleet", f.File)
	}
	var link leafLink
	switch f.Role {
	case manifests.RoleHub:
		nc, stop, err := embeddedServers.hub(f, log)
		if err != nil {
			return nil, link, err
		}
		n.nc, n.stops = nc, append(n.stops, stop)
	case manifests.RoleEdge:
		nc, l, stop, err := embeddedServers.leaf(f, log)
		if err != nil {
			return nil, link, err
		}
		n.nc, n.stops, link = nc, append(n.stops, stop), l
	case manifests.RoleThinEdge:
		opts := []nats.Option{nats.Name(f.Gateway), nats.MaxReconnects(-1),
			nats.ReconnectWait(time.Second), nats.RetryOnFailedConnect(true),
			nats.PingInterval(f.LeafPing.Interval), nats.MaxPingsOutstanding(f.LeafPing.MaxMissed)}
		if t := f.Trust; t != nil {
			opts = append(opts, trust.ClientOptions(f.Gateway, t.Key, t.CA)...)
		}
		opts = append(opts, refusalHandlers(f, log)...)
		nc, err := nats.Connect(strings.Join(f.Hubs, ","), opts...)
		if err != nil {
			return nil, link, fmt.Errorf("connect to the hub: %w", err)
		}
		n.nc, link.up = nc, nc.IsConnected
	}
	n.stops = append(n.stops, n.nc.Close)
	return n, link, nil
}

// refusalHandlers log a thin-edge's refusals by the hub: a refused
// identity would otherwise only show as "cannot register yet", so it is
// said (once, until a connection succeeds), and the gateway keeps trying
// as for an unreachable hub, serving its own endpoint; a permission
// violation is logged with the subject NATS names.
func refusalHandlers(f *manifests.Fleet, log *slog.Logger) []nats.Option {
	identity := ""
	if f.Trust != nil {
		identity = f.Trust.IdentityFile
	}
	var refused atomic.Bool
	authErr := func(err error) {
		if errors.Is(err, nats.ErrAuthorization) && !refused.Swap(true) {
			log.Error("fleet: the hub refused this gateway's identity (unknown to it, revoked, or of another fleet); retrying", "fleet", f.File, "identity", identity, "err", err)
		}
	}
	return []nats.Option{nats.IgnoreAuthErrorAbort(),
		nats.ReconnectErrHandler(func(_ *nats.Conn, err error) { authErr(err) }),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			switch {
			case errors.Is(err, nats.ErrAuthorization):
				authErr(err)
			case errors.Is(err, nats.ErrPermissionViolation):
				log.Error("fleet: NATS refused this gateway a subject (its permissions do not allow it)", "err", err)
			default:
				log.Warn("fleet: NATS", "err", err)
			}
		}),
		nats.ConnectHandler(func(*nats.Conn) { refused.Store(false) }),
		nats.ReconnectHandler(func(*nats.Conn) { refused.Store(false) })}
}

// serveFleetEndpoint serves the fleet MCP endpoint on the fleet file's
// http address, when it has one.
// It is served behind a gateway's HTTP protections (hc: the Origin check,
// session caps and idle expiry, body limits).
func (n *fleetNode) serveFleetEndpoint(tokens *server.Tokens, caller server.Caller, hc server.HTTPConfig, stdout io.Writer, log *slog.Logger) error {
	if n.file.HTTP == "" {
		return nil
	}
	e, err := fleet.NewEndpoint(n.view, fleet.EndpointConfig{Version: version, Tokens: tokens, Caller: caller, Log: log, HTTP: hc})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", bindAddr(n.file.HTTP))
	if err != nil {
		return fmt.Errorf("fleet endpoint %s: %w", n.file.HTTP, err)
	}
	n.http = e.HTTPServer() // a gateway's timeouts and limits
	go n.http.Serve(server.LimitListener(ln, server.DefaultMaxConns))
	fmt.Fprintf(stdout, "promcp-device: fleet endpoint of %s (%s) on http://%s/mcp: can_do over the fleet; each gateway's tools at /mcp/<gateway>\n",
		n.file.Gateway, n.file.Role, ln.Addr())
	return nil
}

// connectFleet connects a gateway to the fleet --fleet names, before the
// gateway opens: its actions then reserve through the fleet's shared
// state (cooldowns, leases and rate limits by compare-and-set on the hub;
// requires_quorum refused as partition_no_quorum when the write cannot
// commit), wrapped around the local reserver.
func (f *serveFlags) connectFleet(ctx context.Context, m *manifests.Manifest, opts *gatewayOptions, log *slog.Logger) (*fleetNode, error) {
	fl, err := manifests.LoadFleet(f.fleetFile)
	if err != nil {
		return nil, failErr(err, true)
	}
	if fl.Role == manifests.RoleHub {
		return nil, usageErr("--fleet %s: role hub runs with promcp-device hub --fleet FILE; a gateway's role is edge or thin-edge", f.fleetFile)
	}
	n, link, err := connectFleet(fl, log)
	if err != nil {
		return nil, failErr(err, false)
	}
	n.linkUp = link.up
	// One clock: the fleet's ages are mapped onto the gateway's clock, on
	// which its policy history and reports run (the simulation's, with
	// --sim).
	cfg := shared.Config{Gateway: fl.Gateway, Linked: link.up, Kick: link.kick, Log: log, Clock: opts.gatewayClock(m)}
	if fl.Role == manifests.RoleEdge {
		cfg.LocalDomain = fl.Gateway
	}
	octx, cancel := context.WithTimeout(ctx, 5*time.Second)
	st, err := shared.Open(octx, n.nc, cfg)
	cancel()
	switch {
	case errors.Is(err, shared.ErrUnreachable):
		log.Warn("fleet: the hub is not reachable yet; shared actions are refused (partition_no_quorum) until it is", "err", err)
	case err != nil:
		n.Close()
		return nil, failErr(err, false)
	}
	if fl.Role == manifests.RoleEdge && f.stateDir != "" {
		// Audit records go to the leaf's AUDIT_<gateway> stream as they
		// are written, and on to the hub's FLEET_AUDIT (buffered while cut).
		fwd, err := st.Forwarder(ctx)
		if err != nil {
			n.Close()
			return nil, failErr(err, false)
		}
		f.audit.onWrite = fwd.OnWrite
		n.stops = append(n.stops, func() {
			cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			fwd.Close(cctx)
		})
	}
	safe := map[string]any{}
	for _, c := range m.Capabilities {
		if c.Do != nil && c.Do.SafeValue != nil {
			safe[c.Do.Tool] = c.Do.SafeValue
		}
	}
	n.shared = st
	opts.peers = n.peerCount
	pol := opts.policy
	if pol != nil {
		for _, ap := range pol.Actions {
			if ap != nil && ap.Equipment != "" {
				n.equipment = append(n.equipment, "equipment-"+ap.Equipment)
			}
		}
		slices.Sort(n.equipment)
		n.equipment = slices.Compact(n.equipment)
	}
	opts.reserver = func(local policy.Reserver) policy.Reserver {
		return st.Reserver(local, shared.RulesFromPolicy(fl.Gateway, pol, safe))
	}
	return n, nil
}

// peerCount is how many gateways of the fleet answer now, this one
// included (1 until the gateway has joined): a policy's quorum.min_peers
// is held against it.
func (n *fleetNode) peerCount() int {
	v := n.peers.Load()
	if v == nil {
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return v.PeerCount(ctx)
}

// fleetStore makes the gateway's idempotency store fleet-aware: the key
// of a call routed to this gateway through the fleet is claimed on the
// hub before the action runs, so the same key sent through two entry
// nodes runs once; a call made to this gateway directly is deduplicated
// on the gateway alone (no hub round trip: its own actuators do not wait
// for the hub). Both go through the local store, so one key sent
// directly and routed to this gateway runs once too.
func (n *fleetNode) fleetStore(opts *gatewayOptions, st *state, ttl time.Duration) {
	var local idempotency.Store = idempotency.NewMemory(ttl, nil)
	if st.store != nil {
		local = st.store
	}
	opts.server = append(opts.server, server.WithStore(n.shared.StoreFor(local, ttl, routedCall), ttl))
}

// routedCall reports whether the call in ctx came through the fleet.
func routedCall(ctx context.Context) bool { return server.CallerFrom(ctx).Via != "" }

// joinFleet makes the served gateway a member of the fleet: registered,
// answering the fleet's can_do and routed calls, watching the registry,
// and serving the fleet endpoint where the file says. The mesh methods
// are then answered on the gateway's own endpoint too.
func (f *serveFlags) joinFleet(ctx context.Context, n *fleetNode, gw *openedGateway, tokens *server.Tokens, stdout io.Writer, log *slog.Logger) error {
	fl, linkUp := n.file, n.linkUp
	local, err := fleet.MCPLocal(ctx, gw.srv.MCP())
	if err != nil {
		return failErr(err, false)
	}
	if fl.RequireCallerCredential && !tokens.HasJWT() {
		return usageErr("the fleet file says require_caller_credential: true, but the gateway verifies no JWTs: declare a jwt identity provider in the policy and serve --http, or every routed call would be refused")
	}
	locations, vocab := registryWords(gw.manifest)
	n.member, err = fleet.Join(ctx, n.nc, fleet.MemberConfig{GatewayID: fl.Gateway, Zone: fl.Zone, Tags: fl.Tags, Profile: fl.Profile,
		Locations: locations, Vocabulary: vocab,
		Shared: n.equipment, Routes: routeRoles(fl), RouteRole: f.role,
		Credentials: tokens, RequireCredential: fl.RequireCallerCredential, Audit: gw.srv.Audit, Log: log}, local)
	if err != nil {
		return failErr(err, false)
	}
	// The view stamps its reports on the gateway's clock too. A routed
	// request's deadline (MemberConfig.Now) stays on real time: the
	// coordinator sets it on its own, real, clock.
	vc := fleet.ViewConfig{Node: fl.Gateway, Role: fl.Role, Budget: fl.CanDoBudget, LinkUp: linkUp, Log: log, Clock: gw.srv.Clock()}
	if fl.HTTP == "" {
		// A gateway that coordinates nothing holds its own registry
		// entry only (its peer count reads the heartbeats' keys): its
		// memory does not grow with the fleet.
		vc.Follow = []string{fl.Gateway}
	}
	n.view = fleet.Watch(n.nc, vc)
	n.peers.Store(n.view)
	go n.peerCount() // start keeping the peer count, so that no request waits for the first one
	hc := server.HTTPConfig{AllowedOrigins: f.origins,
		Sessions: server.SessionLimits{Total: f.maxSessions, PerCaller: f.maxTokenSessions, IdleTTL: f.sessionIdle}}
	if err := n.serveFleetEndpoint(tokens, server.Caller{Name: "local", Role: f.role}, hc, stdout, log); err != nil {
		return failErr(err, false)
	}
	// The gateway's own endpoints (stdio or HTTP, groups included) answer
	// the mesh methods with the fleet's view from now on.
	gw.srv.SetMesh(fleet.Mesh{View: n.view, Member: n.member})
	log.Info("joined the fleet", "gateway", fl.Gateway, "role", fl.Role, "zone", fl.Zone, "hubs", strings.Join(fl.Hubs, ","))
	return nil
}

// routeRoles is the fleet file's routes: as the member takes them.
func routeRoles(fl *manifests.Fleet) map[string]string {
	out := map[string]string{}
	for node, r := range fl.Routes {
		out[node] = r.MaxRole
	}
	return out
}

// cmdHub runs one member of the hub cluster: the NATS server with
// JetStream (domain hub) that holds the fleet's replicated buckets, the
// leaf listener the edge gateways dial, and the fleet endpoint.
func cmdHub(c *cli) int {
	file := c.String("fleet", "", "the hub member's fleet `FILE` (role: hub; required)")
	replicas := c.Int("replicas", 3, "copies of the fleet's buckets (`N`): 3 for a three-member hub, 1 for a lone trial hub")
	tokensFile := c.String("tokens", "", "require bearer tokens listed in `FILE` on the fleet endpoint (see promcp-device token add)")
	role := c.String("role", "operator", "without --tokens: the `ROLE` of every call on the fleet endpoint (each gateway's policy decides)")
	policyFile := c.String("policy", "", "honour the jwt identity providers of the policy `FILE` (its identity and roles) on the fleet endpoint; the JWT travels with each routed call for the owning gateway to verify")
	logLevel := c.String("log-level", "info", "log `LEVEL` on stderr: debug, info, warn, error")
	var origins listFlag
	c.Var(&origins, "allow-origin", "a browser `ORIGIN` allowed to call the fleet endpoint (repeatable); loopback origins are always allowed")
	maxSessions := c.Int("max-sessions", server.DefaultMaxSessions, "the most MCP sessions open at once on the fleet endpoint (`N`), all tokens together")
	maxTokenSessions := c.Int("max-sessions-per-token", server.DefaultMaxSessionsPerCaller, "the most MCP sessions one token holds at once (`N`)")
	sessionIdle := c.Duration("session-idle", server.DefaultSessionIdleTTL, "end a session unused for this `DURATION` (its client gets 404 and starts a new one)")
	if !c.parse() {
		return 2
	}
	if *file == "" || c.NArg() > 0 || *replicas < 1 || *replicas > 5 || *maxSessions < 1 || *maxTokenSessions < 1 || *sessionIdle <= 0 {
		return c.usage("--fleet FILE is required (and --replicas is 1 to 5; --max-sessions, --max-sessions-per-token and --session-idle positive)")
	}
	log, err := newLoggerFormat(c.stderr, *logLevel, "text")
	if err != nil {
		fmt.Fprintln(c.stderr, "promcp-device hub:", err)
		return 2
	}
	fl, err := manifests.LoadFleet(*file)
	if err != nil {
		fmt.Fprintln(c.stderr, err)
		return 1
	}
	if fl.Role != manifests.RoleHub {
		fmt.Fprintf(c.stderr, "promcp-device hub: %s has role %s; hub runs role hub (a gateway joins with serve --fleet)\n", *file, fl.Role)
		return 2
	}
	var tokens *server.Tokens
	if *tokensFile != "" {
		if tokens, err = server.LoadTokens(*tokensFile); err != nil {
			return c.fail(err)
		}
	}
	if *policyFile != "" {
		if tokens, err = hubIdentity(log, *policyFile, fl.HTTP, *role, tokens); err != nil {
			fmt.Fprintln(c.stderr, "promcp-device hub:", err)
			return 2
		}
	}
	n, _, err := connectFleet(fl, log)
	if err != nil {
		return c.fail(err)
	}
	defer n.Close()
	sctx, cancel := context.WithTimeout(c.ctx, 60*time.Second)
	err = fleet.SetupHub(sctx, n.nc, *replicas)
	cancel()
	if err != nil {
		fmt.Fprintln(c.stderr, "promcp-device hub: the hub's JetStream did not come up (are the other members running?):", err)
		return 1
	}
	// The shared policy state's buckets and streams, with this hub's
	// replica count (a gateway would create them with 3).
	if err := openHubShared(c.ctx, n.nc, shared.Config{Gateway: fl.Gateway, Replicas: *replicas, Log: log}); err != nil {
		fmt.Fprintln(c.stderr, "promcp-device hub: the fleet's shared state:", err)
		return 1
	}
	// The fleet file's limits on what the hub keeps, set on streams made
	// before (or without) them too.
	if err := applyLimits(c.ctx, n.nc, fl.Limits, log); err != nil {
		fmt.Fprintln(c.stderr, "promcp-device hub: the limits of the fleet's records:", err)
		return 1
	}
	n.view = fleet.Watch(n.nc, fleet.ViewConfig{Node: fl.Gateway, Role: fl.Role, Budget: fl.CanDoBudget, Log: log})
	// Gateways write shared records only through the hubs, which check
	// each against the equipment the gateway registered as shared.
	svc, err := shared.Serve(c.ctx, n.nc, shared.ServiceConfig{Node: fl.Gateway, Shares: n.view.Shares, Replicas: *replicas, Log: log})
	if svc == nil {
		fmt.Fprintln(c.stderr, "promcp-device hub: the fleet's shared-state service:", err)
		return 1
	}
	defer svc.Close()
	hc := server.HTTPConfig{AllowedOrigins: origins,
		Sessions: server.SessionLimits{Total: *maxSessions, PerCaller: *maxTokenSessions, IdleTTL: *sessionIdle}}
	if err := n.serveFleetEndpoint(tokens, server.Caller{Name: "local", Role: *role}, hc, c.stdout, log); err != nil {
		return c.fail(err)
	}
	log.Info("hub member running", "name", fl.Gateway, "client", fl.Listen.Client, "leaf", fl.Listen.Leaf, "cluster", fl.Listen.Cluster)
	<-c.ctx.Done()
	log.Info("hub member stopping")
	return 0
}

// hubIdentity adds the jwt identity providers of the policy file to the
// hub's fleet endpoint tokens. The endpoint serves plain HTTP, so an
// mtls provider is refused rather than ignored.
func hubIdentity(log *slog.Logger, file, httpAddr, role string, tokens *server.Tokens) (*server.Tokens, error) {
	pol, err := manifests.LoadPolicy(file, nil)
	if err != nil {
		return nil, err
	}
	if pol.Identity == nil || len(pol.Identity.Providers) == 0 {
		return nil, fmt.Errorf("--policy %s declares no identity providers for the hub's fleet endpoint", file)
	}
	for _, p := range pol.Identity.Providers {
		if p.Type == manifests.ProviderMTLS {
			return nil, fmt.Errorf("--policy %s: the hub's fleet endpoint serves plain HTTP and takes jwt providers only, not mtls", p.Pos)
		}
	}
	if httpAddr == "" {
		log.Warn("--policy given but the fleet file names no http: endpoint; the identity providers are unused")
		return tokens, nil
	}
	f := &serveFlags{httpAddr: httpAddr, role: role}
	tokens, _, err = f.identity(log, pol, tokens)
	return tokens, err
}

// openHubShared creates the shared state's buckets and streams, trying
// again every 3 s for up to 60 s: three members starting together send
// their JetStream API requests while the cluster's leaders are still being
// elected, and a request the meta leader never answers would otherwise
// hold a single attempt until its deadline (the members then gave up).
func openHubShared(ctx context.Context, nc *nats.Conn, cfg shared.Config) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		actx, acancel := context.WithTimeout(ctx, 3*time.Second)
		_, err := shared.Open(actx, nc, cfg)
		acancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
		cfg.Log.Warn("fleet: the shared state's buckets not ready yet; trying again", "err", err)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// applyLimits sets the fleet file's store limits on the hub's streams,
// trying again every 250 ms for up to 60 s while the cluster elects.
func applyLimits(ctx context.Context, nc *nats.Conn, l manifests.FleetLimits, log *slog.Logger) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	lim := fleet.StoreLimits{AuditMaxAge: l.AuditMaxAge, AuditMaxBytes: l.AuditMaxBytes, RecordsMaxBytes: l.RecordsMaxBytes}
	for {
		actx, acancel := context.WithTimeout(ctx, 3*time.Second)
		err := fleet.ApplyLimits(actx, nc, lim)
		acancel()
		if err == nil {
			return nil
		}
		log.Warn("fleet: the limits of the fleet's records not set yet; trying again", "err", err)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// errNoEmbedded is the refusal of a binary built without nats-server.
var errNoEmbedded = errors.New("this binary was built without the embedded NATS server, which roles hub and edge need " +
	"(rebuild with: go build -tags natsserver ./cmd/promcp-device); a gateway can join with role thin-edge instead")

// meshVersions are the protocol versions the gateway reports in PhysMCP's
// mesh methods (the fleet's; fleet_off.go repeats them without it).
func meshVersions() (physmcp, promcp string) { return fleet.PhysMCPVersion, fleet.PromcpVersion }
