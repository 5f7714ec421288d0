package fleet

import (
	"context"

	"github.com/nats-io/nats.go"

	"github.com/promcp/promcp-device/promcp"
)

// SetPause makes m run pause before it checks each request's deadline:
// a test freezes the gateway there, as a stopped process would be.
func SetPause(m *Member, pause func()) { m.pause.Store(&pause) }

// Scatter asks targets a can_do as the fleet's coordinator does and
// returns how many answered (for the benchmarks).
func Scatter(ctx context.Context, v *View, req promcp.CanDoRequest, targets []string) int {
	replies, _ := v.scatter(ctx, newQueryID(), req, targets)
	return len(replies)
}

// Mute stops m answering: its service stops, its registry entry and
// heartbeat stay, as a gateway that hangs would leave them.
func Mute(m *Member) { _ = m.svc.Stop() }

// PeerIDs are the gateways v's next peer count pings (View.peerIDs).
func PeerIDs(ctx context.Context, v *View) []string { return v.peerIDs(ctx) }

// LastPerKey reads the last message of bucket's keys as a gateway's view
// does and returns how many keys it read.
func LastPerKey(ctx context.Context, nc *nats.Conn, bucket string, keys []string) (int, error) {
	entries, err := lastPerKey(ctx, nc, bucket, keys)
	return len(entries), err
}
