package server

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// PhysMCP (§13.2) adds three methods outside MCP, in the physmcp/
// namespace: physmcp/list_peers (the peer table), physmcp/mesh_status
// (mesh health and partition state) and physmcp/manifest (the node's
// manifest). A Server answers them over stdio and over HTTP, behind the
// same Origin check, authentication and body limits as MCP's own methods.
// A standalone gateway answers them as a mesh of one (itself the only
// peer, partition state healthy, quorum counted over itself); a gateway
// in a fleet, and the fleet endpoint, answer with the fleet's Mesh (set
// with SetMesh), in the same shapes.

// Mesh methods.
const (
	MethodListPeers  = "physmcp/list_peers"
	MethodMeshStatus = "physmcp/mesh_status"
	MethodManifest   = "physmcp/manifest"
)

// Roles and states a mesh reports.
const (
	// MeshRoleStandalone is the role of a gateway in no fleet.
	MeshRoleStandalone = "standalone"
	// MeshHealthy is the partition state of a node that reaches every
	// peer it knows (a standalone gateway always does: it knows itself).
	MeshHealthy = "healthy"
	// PeerAlive is the status of a peer that answers now.
	PeerAlive = "alive"
)

// Mesh answers the mesh methods for a node in a fleet (fleet.Mesh).
type Mesh interface {
	ListPeers(ctx context.Context) MeshPeers
	Status(ctx context.Context) MeshStatus
	// Manifest is the node's manifest: on a gateway, its own registry
	// entry (the shape of MeshManifest); on a node that is not a gateway,
	// every gateway's.
	Manifest() any
}

// ManifestPager is a Mesh whose physmcp/manifest comes in pages (a
// fleet's, listing every gateway): ManifestPage answers the page after
// cursor ("" for the first) of at most limit entries, with the cursor of
// the next page in the answer while there is one. An error is the
// caller's: a cursor this node did not issue (named params.cursor).
type ManifestPager interface {
	ManifestPage(cursor string, limit int) (any, error)
}

// physmcp/manifest page sizes (params.limit): the default and the most.
const (
	DefaultManifestPage = 50
	MaxManifestPage     = 500
)

// MeshPeer is one entry of physmcp/list_peers.
type MeshPeer struct {
	DeviceID       string   `json:"device_id"`
	Zone           string   `json:"zone,omitempty"`
	Tags           []string `json:"tags,omitempty"`
	Profile        string   `json:"profile"`
	ManifestHash   string   `json:"capabilities_hash"`
	PhysMCPVersion string   `json:"physmcp_version"`
	PromcpVersion  string   `json:"promcp_version"`
	// Status is alive (it answered a ping just now) or unreachable.
	Status string   `json:"status"`
	Tools  []string `json:"tools"`
}

// MeshPeers is physmcp/list_peers.
type MeshPeers struct {
	Peers     []MeshPeer `json:"peers"`
	Timestamp time.Time  `json:"timestamp"`
}

// MeshStatus is physmcp/mesh_status.
type MeshStatus struct {
	Node string `json:"node"`
	// Role is the node's role in the fleet (hub, edge, thin-edge), or
	// standalone.
	Role string `json:"role"`
	// PartitionState is healthy, suspected_partition or isolated.
	PartitionState string `json:"partition_state"`
	// HubReachable says the fleet's hub answers; always false standalone
	// (there is no hub).
	HubReachable bool `json:"hub_reachable"`
	// MeshSize is how many gateways are registered; Reachable how many
	// answered a ping.
	MeshSize  int        `json:"mesh_size"`
	Reachable int        `json:"reachable"`
	Quorum    MeshQuorum `json:"quorum"`
	Peers     []MeshPeer `json:"peers"`
	// LateAnswersDropped counts can_do answers this node dropped for
	// coming after their budget.
	LateAnswersDropped int64     `json:"late_answers_dropped"`
	Timestamp          time.Time `json:"timestamp"`
}

// MeshQuorum says what a policy's quorum (PhysMCP's quorum_size,
// quorum.min_peers) is held against on this node.
type MeshQuorum struct {
	// AlivePeers is the count a quorum is held against now: the gateways
	// answering, this one included (at least 1).
	AlivePeers int `json:"alive_peers"`
	// Basis says how it is counted, and what follows for an action that
	// needs more.
	Basis string `json:"basis"`
}

// MeshManifest is physmcp/manifest on a gateway: its registry entry (the
// same fields as a fleet registry entry).
type MeshManifest struct {
	GatewayID      string     `json:"gateway_id"`
	Zone           string     `json:"zone,omitempty"`
	Tags           []string   `json:"tags,omitempty"`
	Profile        string     `json:"profile"`
	ManifestHash   string     `json:"manifest_hash"`
	PromcpVersion  string     `json:"promcp_version"`
	PhysMCPVersion string     `json:"physmcp_version"`
	Locations      []string   `json:"locations,omitempty"`
	Vocabulary     []string   `json:"vocabulary,omitempty"`
	Tools          []mcp.Tool `json:"tools"`
	// Registered is when the entry was made: for a standalone gateway,
	// when it started serving.
	Registered time.Time `json:"registered"`
}

// MeshSelf is what a standalone gateway says of itself in the mesh
// methods; its tools and their hash are read from the server.
type MeshSelf struct {
	// ID is the gateway's id (the manifest's gateway:); "" means the
	// server's name.
	ID        string
	Zone      string
	Tags      []string
	Locations []string
	// Vocabulary are the words of the capabilities' names, locations and
	// tags, as a registry entry holds them.
	Vocabulary []string
	// Profile is PhysMCP's device profile; "" means full.
	Profile string
	// PhysMCPVersion and PromcpVersion are the protocol versions the
	// gateway reports (fleet.PhysMCPVersion, fleet.PromcpVersion).
	PhysMCPVersion, PromcpVersion string
}

// WithMeshSelf says who the server is in the mesh methods while it stands
// alone.
func WithMeshSelf(me MeshSelf) Option {
	return func(s *Server) { s.mesh.self = me }
}

// SetMesh makes the server (and every Surface made from it) answer the
// mesh methods with m, a fleet's, from now on; nil goes back to the mesh
// of one.
func (s *Server) SetMesh(m Mesh) {
	if m == nil {
		s.mesh.fleet.Store(nil)
		return
	}
	s.mesh.fleet.Store(&m)
}

// meshHolder is the mesh a server and its surfaces answer with.
type meshHolder struct {
	self    MeshSelf
	srv     *Server // the server whose tools a standalone gateway lists
	started time.Time
	fleet   atomic.Pointer[Mesh]
}

func (h *meshHolder) current() Mesh {
	if m := h.fleet.Load(); m != nil {
		return *m
	}
	return standalone{h}
}

// standalone is the mesh of one: a gateway in no fleet.
type standalone struct{ h *meshHolder }

func (m standalone) manifest() MeshManifest {
	s, me := m.h.srv, m.h.self
	tools := make([]mcp.Tool, 0)
	for _, t := range s.mcp.ListTools() {
		tools = append(tools, t.Tool)
	}
	slices.SortFunc(tools, func(a, b mcp.Tool) int { return strings.Compare(a.Name, b.Name) })
	b, _ := json.Marshal(tools)
	sum := sha256.Sum256(b)
	return MeshManifest{GatewayID: cmp.Or(me.ID, s.name), Zone: me.Zone, Tags: me.Tags, Profile: cmp.Or(me.Profile, "full"),
		ManifestHash: hex.EncodeToString(sum[:8]), PromcpVersion: me.PromcpVersion, PhysMCPVersion: me.PhysMCPVersion,
		Locations: me.Locations, Vocabulary: me.Vocabulary, Tools: tools, Registered: m.h.started}
}

func (m standalone) peer() MeshPeer {
	in := m.manifest()
	p := MeshPeer{DeviceID: in.GatewayID, Zone: in.Zone, Tags: in.Tags, Profile: in.Profile, ManifestHash: in.ManifestHash,
		PhysMCPVersion: in.PhysMCPVersion, PromcpVersion: in.PromcpVersion, Status: PeerAlive, Tools: []string{}}
	for _, t := range in.Tools {
		p.Tools = append(p.Tools, t.Name)
	}
	return p
}

func (m standalone) ListPeers(context.Context) MeshPeers {
	return MeshPeers{Peers: []MeshPeer{m.peer()}, Timestamp: m.h.srv.clock.Now().UTC()}
}

func (m standalone) Status(context.Context) MeshStatus {
	p := m.peer()
	return MeshStatus{Node: p.DeviceID, Role: MeshRoleStandalone, PartitionState: MeshHealthy, MeshSize: 1, Reachable: 1,
		Quorum: MeshQuorum{AlivePeers: 1, Basis: "standalone: this gateway is in no fleet and counts only itself; " +
			"an action whose policy requires a quorum of more than 1 is refused as partition_no_quorum"},
		Peers: []MeshPeer{p}, Timestamp: m.h.srv.clock.Now().UTC()}
}

func (m standalone) Manifest() any { return m.manifest() }

// meshCall is a JSON-RPC request in the physmcp/ namespace.
type meshCall struct {
	ID     json.RawMessage
	Method string
	Params json.RawMessage
}

// parseMeshCall tells a request for a physmcp/ method (with an id) from
// anything else, which goes on to MCP. Most messages do not name the
// namespace and are not decoded.
func parseMeshCall(msg []byte) (meshCall, bool) {
	if !bytes.Contains(msg, []byte("physmcp/")) && bytes.IndexByte(msg, '\\') < 0 {
		return meshCall{}, false
	}
	var req struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params"`
	}
	if json.Unmarshal(msg, &req) != nil || req.JSONRPC != "2.0" || !strings.HasPrefix(req.Method, "physmcp/") ||
		len(req.ID) == 0 || string(req.ID) == "null" {
		return meshCall{}, false
	}
	return meshCall{ID: req.ID, Method: req.Method, Params: req.Params}, true
}

// answerMesh is the JSON-RPC response to c.
func (s *Server) answerMesh(ctx context.Context, c meshCall) []byte {
	m := s.mesh.current()
	var result any
	switch c.Method {
	case MethodListPeers:
		result = m.ListPeers(ctx)
	case MethodMeshStatus:
		result = m.Status(ctx)
	case MethodManifest:
		var err error
		if result, err = manifestPage(m, c.Params); err != nil {
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.ID, "error": map[string]any{"code": mcp.INVALID_PARAMS,
				"message": c.Method + ": " + err.Error()}})
			return b
		}
	default:
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.ID, "error": map[string]any{"code": mcp.METHOD_NOT_FOUND,
			"message": "method " + c.Method + " not found (" + MethodListPeers + ", " + MethodMeshStatus + " and " + MethodManifest + " are served)"}})
		return b
	}
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.ID, "result": result})
	if err != nil {
		b, _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.ID, "error": map[string]any{"code": mcp.INTERNAL_ERROR,
			"message": "encoding the " + c.Method + " answer: " + err.Error()}})
	}
	return b
}

// manifestPage answers physmcp/manifest with params: {"cursor": the
// nextCursor of the previous page, "limit": entries per page, 1 to
// MaxManifestPage, DefaultManifestPage when left out}. A node whose
// manifest is one entry (a gateway) has no pages: it takes no cursor.
func manifestPage(m Mesh, params json.RawMessage) (any, error) {
	var p struct {
		Cursor *string         `json:"cursor"`
		Limit  *int            `json:"limit"`
		Meta   json.RawMessage `json:"_meta"` // MCP's request metadata, allowed and unused
	}
	if len(params) > 0 && string(params) != "null" {
		dec := json.NewDecoder(bytes.NewReader(params))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil {
			return nil, fmt.Errorf("params: %w (want {\"cursor\": string, \"limit\": number})", err)
		}
	}
	limit := DefaultManifestPage
	if p.Limit != nil {
		if *p.Limit < 1 || *p.Limit > MaxManifestPage {
			return nil, fmt.Errorf("params.limit: %d: want 1 to %d", *p.Limit, MaxManifestPage)
		}
		limit = *p.Limit
	}
	cursor := ""
	if p.Cursor != nil {
		cursor = *p.Cursor
	}
	if pager, ok := m.(ManifestPager); ok {
		return pager.ManifestPage(cursor, limit)
	}
	if cursor != "" {
		return nil, fmt.Errorf("params.cursor: %q: this node's manifest is one entry and has no further pages", cursor)
	}
	return m.Manifest(), nil
}

// meshFront answers the mesh methods POSTed to next's endpoint (the body
// read by the gate already), and passes every other request on.
func (s *Server) meshFront(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hb, ok := r.Body.(*heldBody); ok && r.Method == http.MethodPost {
			if c, ok := parseMeshCall(hb.b); ok {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write(append(s.answerMesh(r.Context(), c), '\n'))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// lineWriter writes whole lines, one Write each, from mcp-go and from the
// mesh methods answered beside it.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
