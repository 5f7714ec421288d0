package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"

	"github.com/promcp/promcp-device/server"
)

// Local is the gateway a Member serves to the fleet: its tools, its
// can_do and its tool calls, each answered by the gateway's own policy.
type Local interface {
	// Tools lists the gateway's tools.
	Tools(ctx context.Context) ([]mcp.Tool, error)
	// Call runs one tool as caller.
	Call(ctx context.Context, caller server.Caller, tool string, args json.RawMessage) (*mcp.CallToolResult, error)
}

// MCPLocal is the Local of a gateway's MCP server, called in process
// through an MCP client: the fleet goes through the same contract,
// policy, idempotency store and audit log as any other client.
func MCPLocal(ctx context.Context, srv *mcpserver.MCPServer) (Local, error) {
	c, err := client.NewInProcessClient(srv)
	if err != nil {
		return nil, err
	}
	if err := c.Start(ctx); err != nil {
		return nil, fmt.Errorf("fleet: start the in-process client: %w", err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "promcp-fleet", Version: ServiceVersion}
	if _, err := c.Initialize(ctx, init); err != nil {
		return nil, fmt.Errorf("fleet: initialize the in-process client: %w", err)
	}
	return &mcpLocal{c: c}, nil
}

type mcpLocal struct{ c *client.Client }

func (l *mcpLocal) Tools(ctx context.Context) ([]mcp.Tool, error) {
	res, err := l.c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		return nil, err
	}
	return res.Tools, nil
}

func (l *mcpLocal) Call(ctx context.Context, caller server.Caller, tool string, args json.RawMessage) (*mcp.CallToolResult, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	if len(args) > 0 {
		req.Params.Arguments = args
	}
	return l.c.CallTool(server.WithCaller(ctx, caller), req)
}

// MemberConfig describes a gateway joining the fleet.
type MemberConfig struct {
	GatewayID string
	Zone      string
	Tags      []string
	Profile   string
	// Locations and Vocabulary (capability locations, names and tags)
	// let a coordinator skip this gateway when an intent cannot match it.
	Locations, Vocabulary []string
	// Upkeep is the heartbeat: how often the gateway's key in the alive
	// bucket is rewritten and its registry entry checked and restored
	// (after the hub lost it, or the gateway was cut off); 0 means
	// HeartbeatInterval. It is shortened to a third of the alive bucket's
	// TTL when longer.
	Upkeep time.Duration
	Log    *slog.Logger
}

// Member is a gateway in the fleet: it answers the fan-out and routed
// calls, and keeps its registry entry.
type Member struct {
	cfg   MemberConfig
	nc    *nats.Conn
	local Local
	svc   micro.Service
	sem   chan struct{} // bounds the requests served at once

	mu   sync.Mutex
	info Info

	// The registry and alive buckets, once opened (upkeep's goroutine only).
	reg, alive jetstream.KeyValue
	refresh    chan struct{}
	stop       context.CancelFunc
	done       chan struct{}
}

// maxInFlight bounds the fleet requests one gateway serves at once; more
// wait in NATS (and time out at their caller).
const maxInFlight = 64

// Join registers the gateway: the micro service (at once, so routed calls
// work as soon as the hub sees the gateway) and its registry entry (in
// the background, retried while the hub is unreachable).
func Join(ctx context.Context, nc *nats.Conn, cfg MemberConfig, local Local) (*Member, error) {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Upkeep <= 0 {
		cfg.Upkeep = HeartbeatInterval
	}
	m := &Member{cfg: cfg, nc: nc, local: local, sem: make(chan struct{}, maxInFlight),
		refresh: make(chan struct{}, 1), done: make(chan struct{})}
	if err := m.load(ctx); err != nil {
		return nil, err
	}
	svc, err := micro.AddService(nc, micro.Config{Name: ServiceName, Version: ServiceVersion,
		Description: "a promcp-device gateway", Metadata: m.metadata()})
	if err != nil {
		return nil, fmt.Errorf("fleet: register service: %w", err)
	}
	m.svc = svc
	if err := svc.AddEndpoint("cando", micro.HandlerFunc(m.serveCanDo), micro.WithEndpointSubject(CanDoSubject),
		micro.WithEndpointQueueGroupDisabled()); err != nil {
		svc.Stop()
		return nil, fmt.Errorf("fleet: can_do endpoint: %w", err)
	}
	if err := svc.AddEndpoint("call", micro.HandlerFunc(m.serveCall), micro.WithEndpointSubject(CallSubject(cfg.GatewayID))); err != nil {
		svc.Stop()
		return nil, fmt.Errorf("fleet: call endpoint: %w", err)
	}
	uctx, cancel := context.WithCancel(context.Background())
	m.stop = cancel
	go m.upkeep(uctx)
	return m, nil
}

// load reads the local tools into the registry entry.
func (m *Member) load(ctx context.Context) error {
	tools, err := m.local.Tools(ctx)
	if err != nil {
		return fmt.Errorf("fleet: list the gateway's tools: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.info = Info{GatewayID: m.cfg.GatewayID, Zone: m.cfg.Zone, Tags: m.cfg.Tags, Profile: m.cfg.Profile,
		ManifestHash: Hash(tools), PromcpVersion: PromcpVersion, PhysMCPVersion: PhysMCPVersion,
		Locations: m.cfg.Locations, Vocabulary: m.cfg.Vocabulary, Tools: tools, Registered: time.Now().UTC()}
	return nil
}

func (m *Member) metadata() map[string]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return map[string]string{"gateway_id": m.info.GatewayID, "zone": m.info.Zone, "profile": m.info.Profile,
		"manifest_hash": m.info.ManifestHash, "promcp_version": PromcpVersion, "physmcp_version": PhysMCPVersion}
}

// Info returns the gateway's registry entry.
func (m *Member) Info() Info {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.info
}

// Refresh re-reads the gateway's tools and updates its registry entry:
// every node then sends tools/list_changed.
func (m *Member) Refresh(ctx context.Context) error {
	if err := m.load(ctx); err != nil {
		return err
	}
	select {
	case m.refresh <- struct{}{}:
	default:
	}
	return nil
}

// upkeep keeps the registry entry in the hub's bucket (written at start,
// on Refresh, and restored whenever it is found missing or outdated) and
// beats the gateway's heartbeat in the alive bucket, so that the gateway
// stays in the fleet while it lives and comes back on its own after the
// hub lost it.
func (m *Member) upkeep(ctx context.Context) {
	defer close(m.done)
	every := m.cfg.Upkeep
	t := time.NewTicker(every)
	defer t.Stop()
	logged := false
	for {
		ttl, err := m.register(ctx)
		switch {
		case err == nil:
			logged = false
			if ttl > 0 && every > ttl/3 {
				every = ttl / 3
				t.Reset(every)
				m.cfg.Log.Info("fleet: heartbeat shortened to a third of the registry's TTL", "every", every, "ttl", ttl)
			}
		case ctx.Err() == nil && !logged:
			m.cfg.Log.Warn("fleet: cannot register with the hub yet (this gateway keeps serving its own endpoint)", "err", err)
			logged = true
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-m.refresh:
		}
	}
}

// register keeps the manifest in the registry (written when missing or
// outdated) and beats the heartbeat in the alive bucket. It returns the
// alive bucket's TTL when it has just opened the buckets.
func (m *Member) register(ctx context.Context) (ttl time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if m.reg == nil {
		if m.reg, err = registry(ctx, m.nc); err != nil {
			return 0, err
		}
		if m.alive, ttl, err = aliveBucket(ctx, m.nc); err != nil {
			m.reg = nil
			return 0, err
		}
	}
	if err := m.beat(ctx); err != nil {
		m.reg = nil // reopen: the buckets may have been recreated
		return 0, err
	}
	return ttl, nil
}

func (m *Member) beat(ctx context.Context) error {
	info := m.Info()
	b, err := json.Marshal(info)
	if err != nil {
		return err
	}
	key := registryKey(info.GatewayID)
	if e, err := m.reg.Get(ctx, key); err != nil || !sameEntry(e.Value(), info) {
		if _, err := m.reg.Put(ctx, key, b); err != nil {
			return err
		}
	}
	_, err = m.alive.Put(ctx, key, []byte(info.ManifestHash))
	return err
}

// sameEntry reports whether a stored entry is this gateway's current one
// (the registration time aside).
func sameEntry(stored []byte, info Info) bool {
	var old Info
	if json.Unmarshal(stored, &old) != nil {
		return false
	}
	old.Registered = info.Registered
	a, _ := json.Marshal(old)
	b, _ := json.Marshal(info)
	return bytes.Equal(a, b)
}

// registry opens the hub's registry bucket through conn.
func registry(ctx context.Context, nc *nats.Conn) (jetstream.KeyValue, error) {
	js, err := jetstream.NewWithDomain(nc, HubDomain)
	if err != nil {
		return nil, err
	}
	return js.KeyValue(ctx, RegistryBucket)
}

// aliveBucket opens the hub's alive bucket through conn and returns its
// TTL.
func aliveBucket(ctx context.Context, nc *nats.Conn) (jetstream.KeyValue, time.Duration, error) {
	js, err := jetstream.NewWithDomain(nc, HubDomain)
	if err != nil {
		return nil, 0, err
	}
	kv, err := js.KeyValue(ctx, AliveBucket)
	if err != nil {
		return nil, 0, fmt.Errorf("open %s: %w", AliveBucket, err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		return nil, 0, err
	}
	return kv, st.TTL(), nil
}

// Close leaves the fleet: the service stops answering and the registry
// entry is removed (best effort, within a second; failing that, the hub
// drops it when its TTL runs out).
func (m *Member) Close() error {
	m.stop()
	<-m.done
	err := m.svc.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if kv, _, kerr := aliveBucket(ctx, m.nc); kerr == nil {
		_ = kv.Delete(ctx, registryKey(m.cfg.GatewayID)) // the registry's delete below says whether the hub heard
	}
	if kv, kerr := registry(ctx, m.nc); kerr == nil {
		if derr := kv.Delete(ctx, registryKey(m.cfg.GatewayID)); derr != nil {
			m.cfg.Log.Warn("fleet: could not remove the registry entry (the fleet reports this gateway unreachable until the entry expires)", "err", derr)
		}
	}
	return err
}

// canDoRequest is the fan-out message of a fleet can_do.
type canDoRequest struct {
	QueryID string `json:"query_id"`
	// Targets are the gateways asked; others stay silent.
	Targets []string `json:"targets"`
	// Arguments are can_do's arguments, for the gateway's own can_do.
	Arguments json.RawMessage `json:"arguments"`
	Caller    server.Caller   `json:"caller"`
}

// canDoReply is one gateway's answer.
type canDoReply struct {
	GatewayID string          `json:"gateway_id"`
	Report    json.RawMessage `json:"report"`
	Error     string          `json:"error,omitempty"`
}

func (m *Member) serveCanDo(req micro.Request) {
	var q canDoRequest
	if err := json.Unmarshal(req.Data(), &q); err != nil {
		_ = req.Error("400", "bad can_do request: "+err.Error(), nil)
		return
	}
	if !contains(q.Targets, m.cfg.GatewayID) {
		return // not asked: silence, so that the coordinator counts only those it asked
	}
	m.async(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		reply := canDoReply{GatewayID: m.cfg.GatewayID}
		res, err := m.local.Call(ctx, q.Caller, "can_do", q.Arguments)
		switch {
		case err != nil:
			reply.Error = err.Error()
		default:
			reply.Report, err = structured(res)
			if err != nil {
				reply.Error = err.Error()
			}
		}
		b, _ := json.Marshal(reply)
		_ = req.Respond(b)
	}, req)
}

// callRequest is a routed tool call.
type callRequest struct {
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Caller    server.Caller   `json:"caller"`
}

func (m *Member) serveCall(req micro.Request) {
	var c callRequest
	if err := json.Unmarshal(req.Data(), &c); err != nil {
		_ = req.Error("400", "bad call: "+err.Error(), nil)
		return
	}
	m.async(func() {
		// A do_* that has begun finishes whatever the caller does (the
		// gateway's server keeps it going); this bounds a stuck bus.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		res, err := m.local.Call(ctx, c.Caller, c.Tool, c.Arguments)
		if err != nil {
			_ = req.Error("500", err.Error(), nil)
			return
		}
		b, err := json.Marshal(res)
		if err != nil {
			_ = req.Error("500", err.Error(), nil)
			return
		}
		_ = req.Respond(b)
	}, req)
}

// async runs f on its own goroutine, at most maxInFlight at once; a
// request over the bound is refused at once (503).
func (m *Member) async(f func(), req micro.Request) {
	select {
	case m.sem <- struct{}{}:
	default:
		_ = req.Error("503", "gateway busy: too many fleet requests in flight", nil)
		return
	}
	go func() {
		defer func() { <-m.sem }()
		f()
	}()
}

// structured is a tool result's structured content, as JSON.
func structured(res *mcp.CallToolResult) (json.RawMessage, error) {
	if res == nil {
		return nil, errors.New("no result")
	}
	if res.StructuredContent != nil {
		return json.Marshal(res.StructuredContent)
	}
	for _, c := range res.Content {
		if t, ok := c.(mcp.TextContent); ok && json.Valid([]byte(t.Text)) {
			return json.RawMessage(t.Text), nil
		}
	}
	return nil, errors.New("result has no content")
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
