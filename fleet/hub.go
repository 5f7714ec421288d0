package fleet

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// SetupHub creates the fleet's replicated buckets on the hub (the registry
// and the heartbeats, living RegistryTTL, with replicas copies: 3 for a
// three-member hub), retrying until the hub's JetStream has elected its
// leaders or ctx ends. It is idempotent: every hub member runs it at
// start.
func SetupHub(ctx context.Context, nc *nats.Conn, replicas int) error {
	return SetupRegistry(ctx, nc, replicas, RegistryTTL)
}

// SetupRegistry is SetupHub with heartbeats living ttl (at least 1 s).
// Gateways heartbeat at most every ttl/3 once they have read it.
func SetupRegistry(ctx context.Context, nc *nats.Conn, replicas int, ttl time.Duration) error {
	if ttl < time.Second {
		return fmt.Errorf("fleet: registry TTL %s: must be at least 1s", ttl)
	}
	js, err := jetstream.NewWithDomain(nc, HubDomain)
	if err != nil {
		return err
	}
	for _, cfg := range []jetstream.KeyValueConfig{
		{Bucket: RegistryBucket, Replicas: replicas, History: 1,
			Description: "promcp-device fleet registry: each gateway's id, zone, profile and tools"},
		// A key not rewritten within ttl is removed, and the removal is
		// a marker the watchers see (kept ttl).
		{Bucket: AliveBucket, Replicas: replicas, History: 1, TTL: ttl, LimitMarkerTTL: ttl,
			Description: "promcp-device fleet heartbeats: a key per live gateway"},
	} {
		if err := createBucket(ctx, js, cfg); err != nil {
			return err
		}
	}
	return nil
}

// createBucket creates or updates a bucket, retrying until the hub's
// JetStream answers or ctx ends.
func createBucket(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) error {
	for {
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		_, last := js.CreateOrUpdateKeyValue(cctx, cfg)
		cancel()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("fleet: create the %s bucket: %w (last error: %v)", cfg.Bucket, ctx.Err(), last)
		case <-time.After(250 * time.Millisecond): // real time: waits for the hub's JetStream
		}
	}
}
