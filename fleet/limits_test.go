package fleet_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/promcp/promcp-device/fleet"
	"github.com/promcp/promcp-device/fleet/shared"
)

// The hub's audit stream and record buckets, made without limits (as
// every hub before them did), take the fleet's limits at the next start
// (UpdateStream), and a full record bucket refuses a new record.
func TestFleetStoreLimits(t *testing.T) {
	h := startHub(t, false)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute) // an election may be under way
	defer cancel()
	retry(ctx, t, "the shared state's streams", func(ctx context.Context) error {
		_, err := shared.Open(ctx, h.nc, shared.Config{Gateway: "hub1", Replicas: 3})
		return err
	})
	js, err := jetstream.NewWithDomain(h.nc, fleet.HubDomain)
	if err != nil {
		t.Fatal(err)
	}
	config := func(name string) jetstream.StreamConfig {
		var cfg jetstream.StreamConfig
		retry(ctx, t, "stream "+name, func(ctx context.Context) error {
			st, err := js.Stream(ctx, name)
			if err == nil {
				cfg = st.CachedInfo().Config
			}
			return err
		})
		return cfg
	}
	if c := config(shared.AuditStream); c.MaxAge != 0 || c.MaxBytes > 0 {
		t.Fatalf("%s made with limits already (max age %s, max bytes %d): the test needs one without", shared.AuditStream, c.MaxAge, c.MaxBytes)
	}
	const records = 4096
	for range 2 { // the second run finds them set, and changes nothing
		retry(ctx, t, "the limits", func(ctx context.Context) error {
			return fleet.ApplyLimits(ctx, h.nc, fleet.StoreLimits{RecordsMaxBytes: records})
		})
	}
	if c := config(shared.AuditStream); c.MaxAge != fleet.DefaultAuditMaxAge || c.MaxBytes != fleet.DefaultAuditMaxBytes || c.Discard != jetstream.DiscardOld {
		t.Errorf("%s: max age %s, max bytes %d, discard %v; want the defaults, oldest first", shared.AuditStream, c.MaxAge, c.MaxBytes, c.Discard)
	}
	for _, b := range []string{shared.LeaseBucket, shared.IdemBucket} {
		if c := config("KV_" + b); c.MaxBytes != records || c.Discard != jetstream.DiscardNew {
			t.Errorf("bucket %s: max bytes %d, discard %v; want %d, new refused", b, c.MaxBytes, c.Discard, records)
		}
	}
	// The limit applies: records fill the lease bucket until a put is refused.
	kv, err := js.KeyValue(ctx, shared.LeaseBucket)
	if err != nil {
		t.Fatal(err)
	}
	value := []byte(strings.Repeat("x", 200))
	var refused error
	puts := 0
	for i := 0; i < 100 && refused == nil; i++ {
		pctx, pcancel := context.WithTimeout(ctx, time.Minute)
		_, refused = kv.Put(pctx, fmt.Sprintf("cooldown.equipment-fill.k%d", i), value)
		pcancel()
		if refused == nil {
			puts++
		}
	}
	if refused == nil || !strings.Contains(refused.Error(), "maximum bytes") {
		t.Fatalf("%d puts of %d bytes into a bucket of %d bytes: last error %v; want one refused for its size", puts, len(value), records, refused)
	}
	t.Logf("lease bucket of %d bytes: %d records of %d bytes, then: %v", records, puts, len(value), refused)
}

// retry runs f until it succeeds or ctx ends (then the test fails).
func retry(ctx context.Context, t *testing.T, what string, f func(context.Context) error) {
	t.Helper()
	for {
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := f(actx)
		cancel()
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: %v (last error: %v)", what, ctx.Err(), err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}
