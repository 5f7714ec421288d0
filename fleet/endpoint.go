package fleet

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/promcp/promcp-device/promcp"
	"github.com/promcp/promcp-device/server"
)

// EndpointConfig configures the fleet MCP endpoint.
type EndpointConfig struct {
	// Version is the server version the endpoint reports.
	Version string
	// CallTimeout bounds a routed tool call; 0 means 10 s. A do_* whose
	// answer does not come in time is reported partial.
	CallTimeout time.Duration
	// Tokens, when set, are required (Authorization: Bearer); the
	// token's role travels with each call to the gateway, whose own
	// policy decides. Without tokens every call is made as Caller.
	Tokens *server.Tokens
	Caller server.Caller
	Log    *slog.Logger
	// HTTP holds the protections of a gateway's own /mcp that the
	// endpoint serves behind (server.HTTPConfig): AllowedOrigins (a
	// foreign browser Origin gets 403), Sessions (the caps, counted over
	// /mcp and every /mcp/<group>, with the least recently used idle
	// session ended at a cap, and idle expiry), the body limits and Now.
	// Its Path, Caller, Tokens, Groups and GroupFunc are the endpoint's.
	HTTP server.HTTPConfig
}

// Endpoint is the fleet MCP endpoint a node serves: at /mcp a can_do over
// the whole fleet, and at /mcp/<group> each gateway's tools, namespaced
// (read_<gateway>_x, do_<gateway>_y), in groups within the density limits
// with a can_do over that gateway. It follows the registry: tools appear
// and vanish as gateways join, leave or change, and every session is sent
// notifications/tools/list_changed.
type Endpoint struct {
	v    *View
	cfg  EndpointConfig
	root *server.Server

	mu     sync.Mutex
	groups map[string]*groupServer
}

type groupServer struct {
	gw    string
	srv   *server.Server
	tools map[string]string // routed name → hash of the tool served
}

// NewEndpoint makes the fleet endpoint over v.
func NewEndpoint(v *View, cfg EndpointConfig) (*Endpoint, error) {
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = 10 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Caller.Role == "" {
		cfg.Caller = server.Caller{Name: "fleet", Role: "operator"}
	}
	e := &Endpoint{v: v, cfg: cfg, groups: map[string]*groupServer{}}
	root, err := server.New("promcp-fleet/"+v.cfg.Node, cfg.Version, server.WithToolsListChanged(), server.WithLogger(cfg.Log),
		server.WithInstructions("The fleet endpoint of node "+v.cfg.Node+": can_do asks every gateway of the fleet at once. "+
			"Each gateway's read_* and do_* are served at /mcp/<gateway> (read_<gateway>_x, do_<gateway>_y); a can_do answer says where."))
	if err != nil {
		return nil, err
	}
	if err := root.CanDo(e.rootDescription(), func(ctx context.Context, req promcp.CanDoRequest) (promcp.CapabilityReport, error) {
		return v.CanDo(ctx, req, ""), nil
	}); err != nil {
		return nil, err
	}
	root.SetMesh(Mesh{View: v}) // physmcp/* on /mcp and every /mcp/<group>
	e.root = root
	v.OnChange(e.sync)
	e.sync()
	return e, nil
}

// rootDescription is the fleet can_do's description, naming the gateways
// and their group endpoints (so that it changes, and clients re-list, as
// gateways join and leave).
func (e *Endpoint) rootDescription() string {
	var gws []string
	for _, in := range e.v.Gateways() {
		var names []string
		for _, g := range groupTools(in) {
			names = append(names, "/mcp/"+g.name)
		}
		zone := ""
		if in.Zone != "" {
			zone = " zone " + in.Zone
		}
		gws = append(gws, in.GatewayID+zone+" at "+strings.Join(names, ", "))
	}
	list := "none registered yet"
	if len(gws) > 0 {
		list = strings.Join(gws, "; ")
	}
	return "Ask before you act, across the whole fleet: every gateway whose zone and tags can match the intent is asked at once, " +
		"within " + e.v.cfg.Budget.String() + "; candidates name their tool as served on the gateway's group endpoint (do_<gateway>_x) " +
		"and their source as <gateway>/<device>; a gateway that does not answer in time is blocked as source_unreachable. " +
		"Touches no actuator. Give intent.semantic_tags, intent.action, intent.target, intent.value and/or intent.location. Gateways: " + list + "."
}

// sync brings the served tools in line with the registry.
func (e *Endpoint) sync() {
	e.mu.Lock()
	defer e.mu.Unlock()
	want := map[string]bool{}
	for _, in := range e.v.Gateways() {
		for _, g := range groupTools(in) {
			want[g.name] = true
			if err := e.syncGroup(in, g); err != nil {
				e.cfg.Log.Error("fleet endpoint: cannot serve a gateway's group", "group", g.name, "err", err)
			}
		}
	}
	for name, gs := range e.groups {
		if !want[name] {
			gs.srv.MCP().DeleteTools(slices.Collect(maps.Keys(gs.tools))...)
			delete(e.groups, name)
		}
	}
	if st := e.root.MCP().GetTool("can_do"); st != nil {
		t := *st
		t.Tool.Description = e.rootDescription()
		e.root.MCP().AddTools(t) // replaces it, and tells every session
	}
}

// syncGroup serves group g of gateway in: new tools added, changed ones
// replaced, gone ones removed.
func (e *Endpoint) syncGroup(in Info, g group) error {
	gs, ok := e.groups[g.name]
	if !ok {
		srv, err := server.New("promcp-fleet/"+e.v.cfg.Node+"/"+g.name, e.cfg.Version, server.WithToolsListChanged(), server.WithLogger(e.cfg.Log),
			server.WithInstructions("Gateway "+in.GatewayID+"'s tools, served through the fleet (node "+e.v.cfg.Node+"); its own policy decides every call."))
		if err != nil {
			return err
		}
		gw := in.GatewayID
		if err := srv.CanDo(fmt.Sprintf("Ask gateway %s before you act: which of its actions match an intent and whether each is allowed now. Touches no actuator.", gw),
			func(ctx context.Context, req promcp.CanDoRequest) (promcp.CapabilityReport, error) {
				return e.v.CanDo(ctx, req, gw), nil
			}); err != nil {
			return err
		}
		srv.SetMesh(Mesh{View: e.v})
		gs = &groupServer{gw: gw, srv: srv, tools: map[string]string{}}
		e.groups[g.name] = gs
	}
	var add []mcpserver.ServerTool
	keep := map[string]bool{}
	for _, t := range in.Tools {
		name := routedName(in.GatewayID, t.Name)
		if !slices.Contains(g.tools, name) {
			continue
		}
		keep[name] = true
		h := Hash([]mcp.Tool{t})
		if gs.tools[name] == h {
			continue
		}
		gs.tools[name] = h
		rt := t
		rt.Name = name
		rt.Description = "[gateway " + in.GatewayID + "] " + t.Description
		handler := e.routedRead(in.GatewayID, t.Name, unitOf(t))
		if strings.HasPrefix(t.Name, "do_") {
			handler = e.routedDo(in.GatewayID, t.Name)
		}
		add = append(add, mcpserver.ServerTool{Tool: rt, Handler: handler})
	}
	var gone []string
	for name := range gs.tools {
		if !keep[name] {
			gone = append(gone, name)
			delete(gs.tools, name)
		}
	}
	if len(gone) > 0 {
		gs.srv.MCP().DeleteTools(gone...)
	}
	if len(add) > 0 {
		gs.srv.MCP().AddTools(add...)
	}
	return nil
}

// Handler serves the endpoint through a gateway's own HTTP transport
// (server.Server.HTTPHandler): /mcp and /mcp/<group> (groups coming and
// going with the registry), PhysMCP's mesh methods (physmcp/list_peers,
// physmcp/mesh_status, physmcp/manifest) on each, behind the Origin
// check, bearer tokens when configured, the body limits and the session
// caps and idle expiry of EndpointConfig.HTTP.
func (e *Endpoint) Handler() http.Handler { return e.root.HTTPHandler(e.httpConfig()) }

// HTTPServer is an http.Server for Handler with a gateway's timeouts and
// limits (server.Server.HTTPServer); serve it on a server.LimitListener.
func (e *Endpoint) HTTPServer() *http.Server { return e.root.HTTPServer(e.httpConfig()) }

func (e *Endpoint) httpConfig() server.HTTPConfig {
	cfg := e.cfg.HTTP
	cfg.Path, cfg.Caller, cfg.Tokens, cfg.Groups = "/mcp", e.cfg.Caller, e.cfg.Tokens, nil
	cfg.GroupFunc = e.group
	return cfg
}

// group is the server of group name, nil when no gateway serves it now.
func (e *Endpoint) group(name string) *server.Server {
	e.mu.Lock()
	defer e.mu.Unlock()
	if gs, ok := e.groups[name]; ok {
		return gs.srv
	}
	return nil
}
