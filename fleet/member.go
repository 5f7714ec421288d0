package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"

	"github.com/promcp/promcp-device/audit"
	"github.com/promcp/promcp-device/internal/mcpread"
	"github.com/promcp/promcp-device/promcp"
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
	return &mcpLocal{c: c, standing: map[string][]byte{}}, nil
}

type mcpLocal struct {
	c *client.Client
	// standing are the texts of the gateway's standing parts by URI
	// (resources/read), for expand.
	mu       sync.Mutex
	standing map[string][]byte
}

func (l *mcpLocal) Tools(ctx context.Context) ([]mcp.Tool, error) {
	res, err := l.c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		return nil, err
	}
	return res.Tools, nil
}

func (l *mcpLocal) Call(ctx context.Context, caller server.Caller, tool string, args json.RawMessage) (*mcp.CallToolResult, error) {
	// A routed call's context ends at its deadline: checked here again,
	// last thing before the gateway's server (which, once a do_* has
	// begun, finishes it whatever the caller does).
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) { // real time: a context's deadline is
		return nil, fmt.Errorf("%s not run: its deadline %s has passed: %w", tool, dl.UTC().Format(time.RFC3339Nano), context.DeadlineExceeded)
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	if len(args) > 0 {
		req.Params.Arguments = args
	}
	res, err := l.c.CallTool(server.WithCaller(ctx, caller), req)
	if err == nil {
		l.expand(ctx, res)
	}
	return res, err
}

// expand resolves the references of a result's envelope in its _meta
// stamp (the warrant and the standing rebuttal, published by the gateway
// as resources the fleet endpoint does not serve), so that the result
// the fleet relays is whole where its caller reads it. An envelope inline
// in the body is left as it is (its text and digest are the body's); one
// that does not resolve too.
func (l *mcpLocal) expand(ctx context.Context, res *mcp.CallToolResult) {
	if res == nil || res.Meta == nil {
		return
	}
	stamp, ok := res.Meta.AdditionalFields[server.ProvenanceKey].(map[string]any)
	if !ok || stamp[promcp.EnvelopeToulmin] == nil {
		return
	}
	if _, err := promcp.ResolveEnvelope(stamp, func(uri string) ([]byte, error) { return l.readStanding(ctx, uri) }, nil); err != nil {
		l.mu.Lock()
		clear(l.standing) // read them again
		l.mu.Unlock()
	}
}

// readStanding reads a standing part once; after a reference did not
// resolve (a text no longer hashing to its digest), expand forgets them.
func (l *mcpLocal) readStanding(ctx context.Context, uri string) ([]byte, error) {
	l.mu.Lock()
	b, ok := l.standing[uri]
	l.mu.Unlock()
	if ok {
		return b, nil
	}
	b, err := mcpread.Text(ctx, l.c, uri)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	if len(l.standing) < 4096 {
		l.standing[uri] = b
	}
	l.mu.Unlock()
	return b, nil
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
	// Shared are the owners of the shared equipment the gateway's rules
	// claim fleet-wide (equipment-NAME): registered, so that the hubs let
	// it write those records (and its own) and no others.
	Shared []string
	// Routes caps, per entry node (the node a routed call or can_do came
	// through, bound by NATS), the role a caller through it may carry:
	// the caller's role when it is no higher, else the cap. RouteRole caps
	// every node not listed; "" is viewer. A caller without a role (the
	// entry node itself) acts as the cap. A role the gateway does not
	// rank (viewer < operator < supervisor < admin) passes only a route
	// capped at admin or at that very role; otherwise it acts as viewer.
	Routes    map[string]string
	RouteRole string
	// Credentials verify the caller credential (a bearer JWT) a routed
	// call or can_do carries: with JWT providers here (Credentials.HasJWT),
	// the gateway takes the caller's name and role from the JWT it
	// verified itself, still capped by the route, and refuses a call whose
	// credential does not verify. Nil, or without JWT providers: the
	// entry node's claim, capped by the route.
	Credentials *server.Tokens
	// RequireCredential refuses routed calls and can_do that carry no
	// credential this gateway verifies (fleet file
	// require_caller_credential: true).
	RequireCredential bool
	// Audit records a routed do_* refused for its caller credential (the
	// gateway's audit log; nil: logged only).
	Audit func(context.Context, audit.Record) error
	// Now is the gateway's clock (default time.Now): a routed call or
	// can_do is dropped, never run, once its deadline has passed on it.
	Now func() time.Time
	Log *slog.Logger
}

// Member is a gateway in the fleet: it answers the fan-out and routed
// calls, and keeps its registry entry.
type Member struct {
	cfg   MemberConfig
	nc    *nats.Conn
	local Local
	svc   micro.Service
	sem   chan struct{} // bounds the requests served at once

	stale atomic.Int64           // requests dropped after their deadline
	slow  atomic.Int64           // can_do answered without its result (SlowAnswers)
	pause atomic.Pointer[func()] // tests: runs before a request's deadline check

	mu   sync.Mutex
	info Info

	// The registry and alive buckets, once opened (upkeep's goroutine only).
	reg, alive jetstream.KeyValue
	refresh    chan struct{}
	stop       context.CancelFunc
	done       chan struct{}

	// regRev and regEntry are the revision and the bytes of the registry
	// entry last written or found current (upkeep's goroutine only).
	regRev   uint64
	regEntry []byte
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
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.RouteRole == "" {
		cfg.RouteRole = server.RoleViewer
	}
	if !nodeRE.MatchString(cfg.GatewayID) {
		return nil, fmt.Errorf("fleet: gateway id %q: want letters, digits, '-' or '_'", cfg.GatewayID)
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
	if err := svc.AddEndpoint("cando", micro.HandlerFunc(m.serveCanDo), micro.WithEndpointSubject(CanDoSubject(cfg.GatewayID, "*")),
		micro.WithEndpointQueueGroupDisabled()); err != nil {
		svc.Stop()
		return nil, fmt.Errorf("fleet: can_do endpoint: %w", err)
	}
	if err := svc.AddEndpoint("call", micro.HandlerFunc(m.serveCall), micro.WithEndpointSubject(CallSubject(cfg.GatewayID, "*")),
		micro.WithEndpointQueueGroupDisabled()); err != nil {
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
		Locations: m.cfg.Locations, Vocabulary: m.cfg.Vocabulary, Shared: m.cfg.Shared, Tools: tools, Registered: m.cfg.Now().UTC()}
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
	t := time.NewTicker(every) // real time: heartbeats expire on the hub's timers
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
	e, err := m.reg.Get(ctx, key)
	switch {
	case err == nil && e.Revision() == m.regRev && bytes.Equal(b, m.regEntry):
		// The entry this gateway wrote (or found current) last, unchanged
		// since: no decoding and encoding it again every beat.
	case err == nil && sameEntry(e.Value(), info):
		m.regRev, m.regEntry = e.Revision(), b
	default:
		rev, err := m.reg.Put(ctx, key, b)
		if err != nil {
			return err
		}
		m.regRev, m.regEntry = rev, b
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

// canDoRequest is a fleet can_do asked of one gateway. Who asks, and
// through which node, is not in it: the gateway takes the entry node
// from the subject and caps the caller's role by its route policy.
type canDoRequest struct {
	QueryID string `json:"query_id"`
	// Ping asks only whether the gateway answers (View.Alive): nothing
	// runs.
	Ping bool `json:"ping,omitempty"`
	// Arguments are can_do's arguments, for the gateway's own can_do.
	Arguments json.RawMessage `json:"arguments"`
	Caller    wireCaller      `json:"caller"`
	// Credential is the caller's bearer JWT as the entry node received
	// it, for the owning gateway to verify itself ("" when the caller
	// proved itself otherwise).
	Credential string `json:"credential,omitempty"`
	// Deadline is when the coordinator stops waiting: the gateway does
	// not start on the question after it.
	Deadline time.Time `json:"deadline"`
}

// canDoReply is one gateway's answer. The coordinator takes whose answer
// it is from the request it answers, not from GatewayID.
type canDoReply struct {
	GatewayID string          `json:"gateway_id"`
	Report    json.RawMessage `json:"report"`
	Error     string          `json:"error,omitempty"`
}

// encode is r as JSON, its report (valid JSON, from structured) copied
// in as it is rather than checked and compacted again by json.Marshal:
// the gateway's answer to a fleet can_do is encoded once.
func (r canDoReply) encode() []byte {
	if len(r.Report) == 0 {
		b, _ := json.Marshal(r) // strings only
		return b
	}
	id, _ := json.Marshal(r.GatewayID)
	b := make([]byte, 0, len(id)+len(r.Report)+32)
	b = append(append(append(b, `{"gateway_id":`...), id...), `,"report":`...)
	return append(append(b, r.Report...), '}')
}

// wireCaller is the caller as the entry node authenticated it: a claim
// the owning gateway caps by the route's policy.
type wireCaller struct {
	Name string `json:"name"`
	Role string `json:"role"`
}

func (m *Member) serveCanDo(req micro.Request) {
	entry := entryOf(req.Subject(), m.cfg.GatewayID)
	var q canDoRequest
	if err := json.Unmarshal(req.Data(), &q); err != nil || entry == "" || q.Deadline.IsZero() {
		_ = req.Error("400", fmt.Sprintf("bad can_do request on %s: want a JSON body with a deadline (%v)", req.Subject(), err), nil)
		return
	}
	if q.Ping {
		b, _ := json.Marshal(canDoReply{GatewayID: m.cfg.GatewayID})
		_ = req.Respond(b)
		return
	}
	caller, err := m.routeCaller(entry, q.Caller, q.Credential, "can_do")
	if err != nil {
		b, _ := json.Marshal(canDoReply{GatewayID: m.cfg.GatewayID, Error: err.Error()})
		_ = req.Respond(b)
		return
	}
	m.async(func() {
		ctx, cancel, ok := m.inTime(req, entry, "can_do", q.Deadline)
		if !ok {
			return
		}
		defer cancel()
		_ = req.Respond(m.localCanDo(ctx, caller, q.Arguments, q.Deadline).encode())
	}, req)
}

// answerShare is the share of the time left to a can_do's deadline within
// which the gateway answers: the rest is the margin for the answer's way
// back to the coordinator.
const answerShare = 0.8

// localCanDo is the gateway's part of a fleet can_do: its own can_do,
// answered by answerShare of the time left before deadline. When its
// can_do has not finished by then (a slow bus, a hub read that waits),
// the gateway answers anyway, with an error saying so, so that the
// coordinator hears from it within its budget and never takes it for
// unreachable.
func (m *Member) localCanDo(ctx context.Context, caller server.Caller, args json.RawMessage, deadline time.Time) canDoReply {
	by := time.Duration(float64(deadline.Sub(m.cfg.Now())) * answerShare)
	ctx, cancel := context.WithTimeout(ctx, by)
	defer cancel()
	done := make(chan canDoReply, 1)
	go func() {
		reply := canDoReply{GatewayID: m.cfg.GatewayID}
		res, err := m.local.Call(ctx, caller, "can_do", args)
		if err == nil {
			reply.Report, err = structured(res)
		}
		if err != nil {
			reply.Error = err.Error()
		}
		done <- reply
	}()
	select {
	case r := <-done:
		return r
	case <-ctx.Done():
		m.slow.Add(1)
		return canDoReply{GatewayID: m.cfg.GatewayID, Error: fmt.Sprintf("gateway %s's can_do did not finish within its share (%s) of the coordinator's budget", m.cfg.GatewayID, by.Round(time.Millisecond))}
	}
}

// SlowAnswers is how many can_do requests the gateway answered without its
// own can_do's result, because it had not finished within the share of
// the coordinator's budget.
func (m *Member) SlowAnswers() int64 { return m.slow.Load() }

// callRequest is a routed tool call. As for can_do, the entry node comes
// from the subject and the caller's role is capped by the route.
type callRequest struct {
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Caller    wireCaller      `json:"caller"`
	// Credential is the caller's bearer JWT, as in canDoRequest.
	Credential string `json:"credential,omitempty"`
	// Deadline is when the entry node stops waiting: the gateway never
	// starts the call after it.
	Deadline time.Time `json:"deadline"`
}

// maxRouted bounds how long a routed call may run on the gateway: a do_*
// that has begun finishes whatever the caller does (the gateway's server
// keeps it going); this bounds a stuck bus.
const maxRouted = time.Minute

func (m *Member) serveCall(req micro.Request) {
	entry := entryOf(req.Subject(), m.cfg.GatewayID)
	var c callRequest
	if err := json.Unmarshal(req.Data(), &c); err != nil || entry == "" || c.Deadline.IsZero() {
		_ = req.Error("400", fmt.Sprintf("bad call on %s: want a JSON body with a deadline (%v)", req.Subject(), err), nil)
		return
	}
	caller, err := m.routeCaller(entry, c.Caller, c.Credential, c.Tool)
	if err != nil {
		m.refuseCall(req, entry, c, err)
		return
	}
	m.async(func() {
		ctx, cancel, ok := m.inTime(req, entry, c.Tool, c.Deadline)
		if !ok {
			return
		}
		defer cancel()
		res, err := m.local.Call(ctx, caller, c.Tool, c.Arguments)
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

// refuseCall answers a routed call whose caller this gateway refused
// (its credential did not verify, or none came where one is required):
// a tool result with the error, nothing run; a do_* is audited as
// refused, by the caller the entry node claimed, via the entry node.
func (m *Member) refuseCall(req micro.Request, entry string, c callRequest, err error) {
	perr, _ := errors.AsType[*promcp.Error](err)
	if perr == nil {
		perr = &promcp.Error{Code: promcp.CodeRefused, Message: err.Error()}
	}
	body := map[string]any{"error": perr}
	if strings.HasPrefix(c.Tool, "do_") {
		var a struct {
			Key   string `json:"idempotency_key"`
			Value any    `json:"value"`
		}
		_ = json.Unmarshal(c.Arguments, &a)
		body = map[string]any{"status": promcp.StatusFailed, "permission": promcp.PermissionInsufficient, "reason": perr.Message,
			"error": perr, "idempotency_key": a.Key, "applied_value": nil, "previous_value": nil, "requested_value": a.Value,
			"side_effects": []string{}, "compensable": false, "compensation_hint": nil, "timestamp": m.cfg.Now().UTC()}
		if m.cfg.Audit != nil {
			_ = m.cfg.Audit(context.Background(), audit.Record{Event: audit.EventRefused, Caller: c.Caller.Name, Role: c.Caller.Role,
				Via: entry + ", caller credential refused", Tool: c.Tool, Key: audit.BoundKey(a.Key), Arguments: audit.Args(c.Arguments, false),
				Permission: string(promcp.PermissionInsufficient), Status: string(promcp.StatusFailed), Reason: perr.Message})
		}
	}
	b, _ := json.Marshal(resultOf(body, true))
	_ = req.Respond(b)
}

// inTime checks a request's deadline on the gateway's clock just before
// it runs: one whose deadline has passed (the gateway was frozen, or the
// request sat in a queue) is dropped, answered 504 and logged, and ok is
// false. Otherwise ctx ends at the deadline (at most maxRouted away).
func (m *Member) inTime(req micro.Request, entry, tool string, deadline time.Time) (ctx context.Context, cancel context.CancelFunc, ok bool) {
	if p := m.pause.Load(); p != nil {
		(*p)()
	}
	left := deadline.Sub(m.cfg.Now())
	if left <= 0 {
		m.stale.Add(1)
		m.cfg.Log.Warn("fleet: dropped a routed request after its deadline (not run)", "entry", entry, "tool", tool,
			"deadline", deadline, "late", -left)
		_ = req.Error("504", fmt.Sprintf("deadline %s passed %s before gateway %s could start %s: not run", deadline.Format(time.RFC3339Nano), -left, m.cfg.GatewayID, tool), nil)
		return nil, nil, false
	}
	ctx, cancel = context.WithTimeout(context.Background(), min(left, maxRouted))
	return ctx, cancel, true
}

// Stale is how many routed calls and can_do requests the gateway dropped,
// unrun, because their deadline had passed when it came to them.
func (m *Member) Stale() int64 { return m.stale.Load() }

// roleRank orders the roles a route cap compares.
var roleRank = map[string]int{server.RoleViewer: 0, server.RoleOperator: 1, server.RoleSupervisor: 2, server.RoleAdmin: 3}

// capRole is role as a route capped at max may carry it. A caller with
// no role is the entry node itself: it acts as max.
func capRole(role, max string) string {
	if role == max || role == "" {
		return max
	}
	r, rok := roleRank[role]
	m, mok := roleRank[max]
	switch {
	case !mok:
		return server.RoleViewer // a custom cap passes only itself
	case !rok && max == server.RoleAdmin:
		return role
	case !rok:
		return server.RoleViewer
	case r <= m:
		return role
	}
	return max
}

// routeCaller is who a request through entry acts as, and the route
// (Via) for the audit. With a credential and JWT providers here, the
// caller is the one the JWT names, verified by this gateway ("verified
// jwt" in Via); a credential that does not verify refuses the request,
// and so does a missing one under RequireCredential. Otherwise it is the
// caller the entry node names. Either way the role is capped by this
// gateway's route policy.
func (m *Member) routeCaller(entry string, c wireCaller, credential, tool string) (server.Caller, error) {
	max, ok := m.cfg.Routes[entry]
	if !ok {
		max = m.cfg.RouteRole
	}
	via := entry
	switch {
	case credential != "" && m.cfg.Credentials.HasJWT():
		v, err := m.cfg.Credentials.CheckJWT(context.Background(), credential)
		if err != nil {
			reason := err.Error()
			if ae, ok := errors.AsType[*server.AuthError](err); ok {
				reason = ae.Reason
			}
			m.cfg.Log.Warn("fleet: refused a routed call: the caller's credential does not verify", "entry", entry, "claimed", c.Name,
				"tool", tool, "why", err.Error())
			return server.Caller{}, &promcp.Error{Code: promcp.CodeRefused, Message: fmt.Sprintf(
				"gateway %s refused %s through %s: the caller's credential does not verify: %s", m.cfg.GatewayID, tool, entry, reason)}
		}
		if v.Name != c.Name || v.Role != c.Role {
			m.cfg.Log.Info("fleet: routed caller taken from its verified credential, not the entry node's claim", "entry", entry,
				"claimed", c.Name, "claimed_role", c.Role, "caller", v.Name, "role", v.Role, "tool", tool)
		}
		c, via = wireCaller{Name: v.Name, Role: v.Role}, entry+", verified jwt"
	case m.cfg.RequireCredential:
		m.cfg.Log.Warn("fleet: refused a routed call without a verifiable caller credential", "entry", entry, "claimed", c.Name, "tool", tool)
		return server.Caller{}, &promcp.Error{Code: promcp.CodeRefused, Message: fmt.Sprintf(
			"gateway %s refused %s through %s: it requires a caller credential (a JWT of its identity providers) with every routed call", m.cfg.GatewayID, tool, entry)}
	}
	role := capRole(c.Role, max)
	if role != c.Role {
		m.cfg.Log.Warn("fleet: routed caller's role capped by the route", "entry", entry, "caller", c.Name, "claimed", c.Role,
			"acts_as", role, "tool", tool)
	}
	return server.Caller{Name: c.Name, Role: role, Via: via}, nil
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

// structured is a tool result's structured content, as JSON: as it
// came when it is JSON already; else the text content that carries it
// (MCP asks a tool to send its structured content serialized in a text
// content too, and a gateway's server sends the very same bytes: the
// in-process client hands the structured content back decoded, as maps,
// which would cost a sorted encoding per answer); else encoded.
func structured(res *mcp.CallToolResult) (json.RawMessage, error) {
	if res == nil {
		return nil, errors.New("no result")
	}
	switch sc := res.StructuredContent.(type) {
	case json.RawMessage:
		if json.Valid(sc) {
			return sc, nil
		}
		return nil, errors.New("structured content is not valid JSON")
	case nil:
		if t, ok := jsonText(res, false); ok {
			return t, nil
		}
		return nil, errors.New("result has no content")
	default:
		if t, ok := jsonText(res, true); ok {
			return t, nil
		}
		return json.Marshal(sc)
	}
}

// jsonText is res's first text content that is valid JSON (an object,
// when object).
func jsonText(res *mcp.CallToolResult, object bool) (json.RawMessage, bool) {
	for _, c := range res.Content {
		t, ok := c.(mcp.TextContent)
		if !ok {
			continue
		}
		b := []byte(t.Text)
		if object && !bytes.HasPrefix(bytes.TrimSpace(b), []byte("{")) {
			continue
		}
		if json.Valid(b) {
			return b, true
		}
	}
	return nil, false
}
