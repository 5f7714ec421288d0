package fleet

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"

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
		MeshSize: len(peers), Reachable: reach, Quorum: q, Peers: peers, LateAnswersDropped: m.View.LateAnswers(), Timestamp: m.View.cfg.Clock.Now().UTC()}
}

// Manifest is physmcp/manifest: on a gateway its own registry entry, on
// another node the first page of every gateway's (ManifestPage).
func (m Mesh) Manifest() any {
	page, _ := m.ManifestPage("", server.DefaultManifestPage)
	return page
}

// ManifestPage is a page of physmcp/manifest on a node that is not a
// gateway: the registry entries of the gateways after cursor, by id, at
// most limit of them, and the cursor of the next page while there is one.
// A cursor names the last gateway of its page, so a page follows on
// whatever joined or left since. On a gateway, its own entry (one page).
func (m Mesh) ManifestPage(cursor string, limit int) (any, error) {
	if m.Member != nil {
		if cursor != "" {
			return nil, fmt.Errorf("params.cursor: %q: a gateway's manifest is its own entry and has no further pages", cursor)
		}
		return m.Member.Info(), nil
	}
	after, err := decodeCursor(cursor)
	if err != nil {
		return nil, err
	}
	all := m.View.Gateways()
	i, _ := slices.BinarySearchFunc(all, after, func(in Info, id string) int { return strings.Compare(in.GatewayID, id) })
	if i < len(all) && after != "" && all[i].GatewayID == after {
		i++
	}
	page := ManifestPage{Gateways: all[i:min(i+limit, len(all))], Total: len(all)}
	if end := i + len(page.Gateways); end < len(all) && len(page.Gateways) > 0 {
		page.NextCursor = encodeCursor(page.Gateways[len(page.Gateways)-1].GatewayID)
	}
	return page, nil
}

// ManifestPage is one page of a fleet node's physmcp/manifest.
type ManifestPage struct {
	Gateways []Info `json:"gateways"`
	// NextCursor is params.cursor for the next page; absent on the last.
	NextCursor string `json:"nextCursor,omitempty"`
	// Total is how many gateways the registry holds now, all pages.
	Total int `json:"total"`
}

// cursorPrefix marks a manifest cursor, so that another method's cursor
// is told apart.
const cursorPrefix = "gw:"

func encodeCursor(id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorPrefix + id))
}

// decodeCursor is the gateway id cursor names ("" for the first page).
func decodeCursor(cursor string) (string, error) {
	if cursor == "" {
		return "", nil
	}
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return "", fmt.Errorf("params.cursor: %q is not a cursor of this method (%w); pass the nextCursor of the previous page, or none for the first", cursor, err)
	}
	id, ok := strings.CutPrefix(string(b), cursorPrefix)
	if !ok || !nodeRE.MatchString(id) {
		return "", fmt.Errorf("params.cursor: %q is not a cursor of this method (it names no gateway); pass the nextCursor of the previous page, or none for the first", cursor)
	}
	return id, nil
}
