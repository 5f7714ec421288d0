package fleet

import (
	"context"
	"time"

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
	return server.MeshPeers{Peers: m.peers(ctx), Timestamp: time.Now().UTC()}
}

func (m Mesh) peers(ctx context.Context) []Peer {
	// A gateway that follows only some gateways lists every live one,
	// with the registry entries of those it follows (the others by id).
	ids := m.View.peerIDs(ctx)
	alive := m.View.ping(ctx, ids, m.View.cfg.Budget)
	peers := []Peer{}
	for _, id := range ids {
		p := Peer{DeviceID: id, Status: "unreachable", Tools: []string{}}
		if in, ok := m.View.Gateway(id); ok {
			p.Zone, p.Tags, p.Profile, p.ManifestHash = in.Zone, in.Tags, in.Profile, in.ManifestHash
			p.PhysMCPVersion, p.PromcpVersion = in.PhysMCPVersion, in.PromcpVersion
			for _, t := range in.Tools {
				p.Tools = append(p.Tools, t.Name)
			}
		}
		if alive[id] {
			p.Status = "alive"
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
		MeshSize: len(peers), Reachable: reach, Quorum: q, Peers: peers, LateAnswersDropped: m.View.LateAnswers(), Timestamp: time.Now().UTC()}
}

// Manifest is physmcp/manifest: on a gateway its own registry entry, on
// another node the entries of every gateway.
func (m Mesh) Manifest() any {
	if m.Member != nil {
		return m.Member.Info()
	}
	return map[string]any{"gateways": m.View.Gateways()}
}
