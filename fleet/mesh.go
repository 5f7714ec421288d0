package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"
)

// Mesh answers PhysMCP's mesh methods for one node: the fleet seen from
// View, and, on a gateway, its own entry (Member).
type Mesh struct {
	View   *View
	Member *Member
	// Authorize, when set, must accept a request before a mesh method is
	// answered; a refused one goes on to the endpoint (which refuses it).
	Authorize func(*http.Request) bool
}

// Peer is one entry of physmcp/list_peers.
type Peer struct {
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

// MeshStatus is physmcp/mesh_status.
type MeshStatus struct {
	Node string `json:"node"`
	Role string `json:"role"`
	// PartitionState is healthy, suspected_partition or isolated.
	PartitionState string `json:"partition_state"`
	HubReachable   bool   `json:"hub_reachable"`
	// MeshSize is how many gateways are registered; Reachable how many
	// answered a ping.
	MeshSize  int    `json:"mesh_size"`
	Reachable int    `json:"reachable"`
	Peers     []Peer `json:"peers"`
	// LateAnswersDropped counts can_do answers this node dropped for
	// coming after their budget.
	LateAnswersDropped int64     `json:"late_answers_dropped"`
	Timestamp          time.Time `json:"timestamp"`
}

// ListPeers is physmcp/list_peers: every registered gateway and whether
// it answers now.
func (m Mesh) ListPeers(ctx context.Context) map[string]any {
	return map[string]any{"peers": m.peers(ctx), "timestamp": time.Now().UTC()}
}

func (m Mesh) peers(ctx context.Context) []Peer {
	alive := m.View.Alive(ctx, m.View.cfg.Budget)
	peers := []Peer{}
	for _, in := range m.View.Gateways() {
		p := Peer{DeviceID: in.GatewayID, Zone: in.Zone, Tags: in.Tags, Profile: in.Profile, ManifestHash: in.ManifestHash,
			PhysMCPVersion: in.PhysMCPVersion, PromcpVersion: in.PromcpVersion, Status: "unreachable", Tools: []string{}}
		if alive[in.GatewayID] {
			p.Status = "alive"
		}
		for _, t := range in.Tools {
			p.Tools = append(p.Tools, t.Name)
		}
		peers = append(peers, p)
	}
	return peers
}

// Status is physmcp/mesh_status.
func (m Mesh) Status(ctx context.Context) MeshStatus {
	peers := m.peers(ctx)
	reach := 0
	for _, p := range peers {
		if p.Status == "alive" {
			reach++
		}
	}
	hub := m.View.HubReachable(ctx)
	state := StateHealthy
	switch {
	case !hub:
		state = StateIsolated
	case reach < len(peers):
		state = StateSuspected
	}
	return MeshStatus{Node: m.View.cfg.Node, Role: string(m.View.cfg.Role), PartitionState: state, HubReachable: hub,
		MeshSize: len(peers), Reachable: reach, Peers: peers, LateAnswersDropped: m.View.LateAnswers(), Timestamp: time.Now().UTC()}
}

// Manifest is physmcp/manifest: on a gateway its own registry entry, on
// another node the entries of every gateway.
func (m Mesh) Manifest() any {
	if m.Member != nil {
		return m.Member.Info()
	}
	return map[string]any{"gateways": m.View.Gateways()}
}

// MeshMethods answers the JSON-RPC methods physmcp/list_peers,
// physmcp/mesh_status and physmcp/manifest POSTed to any endpoint of next,
// and passes every other request on unchanged. mcp-go has no hook for
// methods outside MCP, so they are answered here, in front of it.
func MeshMethods(next http.Handler, m Mesh) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err != nil {
			http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
			return
		}
		var req struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Method  string          `json:"method"`
		}
		if json.Unmarshal(body, &req) != nil || !strings.HasPrefix(req.Method, "physmcp/") || len(req.ID) == 0 ||
			m.Authorize != nil && !m.Authorize(r) {
			r.Body = io.NopCloser(bytes.NewReader(body))
			next.ServeHTTP(w, r)
			return
		}
		var result any
		switch req.Method {
		case "physmcp/list_peers":
			result = m.ListPeers(r.Context())
		case "physmcp/mesh_status":
			result = m.Status(r.Context())
		case "physmcp/manifest":
			result = m.Manifest()
		default:
			writeRPC(w, map[string]any{"jsonrpc": "2.0", "id": req.ID,
				"error": map[string]any{"code": -32601, "message": "method " + req.Method + " not found (physmcp/list_peers, physmcp/mesh_status, physmcp/manifest are served)"}})
			return
		}
		writeRPC(w, map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result})
	})
}

func writeRPC(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
