package fleet

import (
	"context"

	"github.com/promcp/promcp-device/server"
)

// Mesh answers PhysMCP's mesh methods for one node: the fleet seen from
// View, and, on a gateway, its own entry (Member). It is a server.Mesh:
// the node's server answers physmcp/list_peers, physmcp/mesh_status and
// physmcp/manifest with it (Server.SetMesh), over stdio and HTTP, in the
// shapes a standalone gateway answers them.
type Mesh struct {
	View   *View
	Member *Member
}

var _ server.Mesh = Mesh{}

// Peer is one entry of physmcp/list_peers.
type Peer = server.MeshPeer

// MeshStatus is physmcp/mesh_status.
type MeshStatus = server.MeshStatus

// ListPeers is physmcp/list_peers: every registered gateway and whether
// it answers now.
func (m Mesh) ListPeers(ctx context.Context) server.MeshPeers {
	return server.MeshPeers{Peers: m.peers(ctx), Timestamp: m.View.cfg.Clock.Now().UTC()}
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
	q := server.MeshQuorum{AlivePeers: reach, Basis: "fleet: the gateways answering a ping now; " +
		"a gateway's action whose policy requires a quorum of more is refused as partition_no_quorum"}
	if m.Member != nil { // a gateway counts itself, as its policy does (View.PeerCount)
		q.AlivePeers = max(reach, 1)
	}
	return MeshStatus{Node: m.View.cfg.Node, Role: string(m.View.cfg.Role), PartitionState: state, HubReachable: hub,
		MeshSize: len(peers), Reachable: reach, Quorum: q, Peers: peers, LateAnswersDropped: m.View.LateAnswers(), Timestamp: m.View.cfg.Clock.Now().UTC()}
}

// Manifest is physmcp/manifest: on a gateway its own registry entry, on
// another node the entries of every gateway.
func (m Mesh) Manifest() any {
	if m.Member != nil {
		return m.Member.Info()
	}
	return map[string]any{"gateways": m.View.Gateways()}
}
