package fleet

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// SetupHub creates the fleet's replicated buckets on the hub (the registry,
// with replicas copies: 3 for a three-member hub), retrying until the
// hub's JetStream has elected its leaders or ctx ends. It is idempotent:
// every hub member runs it at start.
func SetupHub(ctx context.Context, nc *nats.Conn, replicas int) error {
	js, err := jetstream.NewWithDomain(nc, HubDomain)
	if err != nil {
		return err
	}
	var last error
	for {
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		_, last = js.CreateOrUpdateKeyValue(cctx, jetstream.KeyValueConfig{Bucket: RegistryBucket, Replicas: replicas,
			Description: "promcp-device fleet registry: each gateway's id, zone, profile and tools", History: 1})
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
