package fleet

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/promcp/promcp-device/fleet/shared"
	"github.com/promcp/promcp-device/manifests"
)

// StoreLimits bound what the hub keeps of the fleet's records: the audit
// stream by age and size (its oldest records go first: every gateway
// keeps its own audit log), the lease and idempotency buckets by size
// (when full, a new record is refused, so an action that needs one is
// refused rather than run without it). Zero fields take the defaults.
type StoreLimits struct {
	AuditMaxAge     time.Duration
	AuditMaxBytes   int64
	RecordsMaxBytes int64
}

// Default store limits (the fleet file's limits: block).
const (
	DefaultAuditMaxAge     = manifests.DefaultAuditMaxAge
	DefaultAuditMaxBytes   = manifests.DefaultAuditMaxBytes
	DefaultRecordsMaxBytes = manifests.DefaultRecordsMaxBytes
)

func (l StoreLimits) withDefaults() StoreLimits {
	if l.AuditMaxAge <= 0 {
		l.AuditMaxAge = DefaultAuditMaxAge
	}
	if l.AuditMaxBytes <= 0 {
		l.AuditMaxBytes = DefaultAuditMaxBytes
	}
	if l.RecordsMaxBytes <= 0 {
		l.RecordsMaxBytes = DefaultRecordsMaxBytes
	}
	return l
}

// ApplyLimits sets lim on the hub's audit stream and record buckets
// (created by shared.Open), updating a stream whose limits differ: one
// made before it had limits, or under other ones. A hub member runs it at
// every start, after the streams exist.
func ApplyLimits(ctx context.Context, nc *nats.Conn, lim StoreLimits) error {
	lim = lim.withDefaults()
	js, err := jetstream.NewWithDomain(nc, HubDomain)
	if err != nil {
		return err
	}
	records := func(c *jetstream.StreamConfig) { c.MaxBytes, c.Discard = lim.RecordsMaxBytes, jetstream.DiscardNew }
	for _, s := range []struct {
		name string
		set  func(*jetstream.StreamConfig)
	}{
		{shared.AuditStream, func(c *jetstream.StreamConfig) {
			c.MaxAge, c.MaxBytes, c.Discard = lim.AuditMaxAge, lim.AuditMaxBytes, jetstream.DiscardOld
		}},
		{"KV_" + shared.LeaseBucket, records},
		{"KV_" + shared.IdemBucket, records},
	} {
		if err := limitStream(ctx, js, s.name, s.set); err != nil {
			return err
		}
	}
	return nil
}

// limitStream applies set to stream name's configuration and updates the
// stream when that changed it.
func limitStream(ctx context.Context, js jetstream.JetStream, name string, set func(*jetstream.StreamConfig)) error {
	st, err := js.Stream(ctx, name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("fleet: limits of stream %s: not created yet (the shared state opens it first): %w", name, err)
	}
	if err != nil {
		return fmt.Errorf("fleet: limits of stream %s: %w", name, err)
	}
	cfg := st.CachedInfo().Config
	was := cfg
	set(&cfg)
	if cfg.MaxAge == was.MaxAge && cfg.MaxBytes == was.MaxBytes && cfg.Discard == was.Discard {
		return nil
	}
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		return fmt.Errorf("fleet: limits of stream %s (max age %s, max bytes %d): %w", name, cfg.MaxAge, cfg.MaxBytes, err)
	}
	return nil
}
