package fleet

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// SetupHub creates the fleet's replicated buckets on the hub (the registry,
// with replicas copies: 3 for a three-member hub, entries living
// RegistryTTL past their last heartbeat), retrying until the hub's
// JetStream has elected its leaders or ctx ends. It is idempotent: every
// hub member runs it at start, and it brings an existing registry to
// these settings.
func SetupHub(ctx context.Context, nc *nats.Conn, replicas int) error {
	return SetupRegistry(ctx, nc, replicas, RegistryTTL)
}

// SetupRegistry is SetupHub with the registry entries living ttl (at
// least 1 s) past their last write. Gateways heartbeat at most every
// ttl/3 once they have read it from the bucket.
func SetupRegistry(ctx context.Context, nc *nats.Conn, replicas int, ttl time.Duration) error {
	if ttl < time.Second {
		return fmt.Errorf("fleet: registry TTL %s: must be at least 1s", ttl)
	}
	js, err := jetstream.NewWithDomain(nc, HubDomain)
	if err != nil {
		return err
	}
	var last error
	for {
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		_, last = js.CreateOrUpdateKeyValue(cctx, jetstream.KeyValueConfig{Bucket: RegistryBucket, Replicas: replicas,
			Description: "promcp-device fleet registry: each gateway's id, zone, profile and tools", History: 1,
			// An entry not rewritten within ttl is removed, and the
			// removal is a marker the watchers see (kept ttl).
			TTL: ttl, LimitMarkerTTL: ttl})
		cancel()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("fleet: create the registry bucket: %w (last error: %v)", ctx.Err(), last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}
