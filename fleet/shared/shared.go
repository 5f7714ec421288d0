package shared

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/internal/positive"
)

// Names of the fleet's buckets and streams in the hub domain.
const (
	LeaseBucket = "fleet_lease"
	IdemBucket  = "fleet_idem"
	RateStream  = "FLEET_RATE"
	AuditStream = "FLEET_AUDIT"
	// DefaultHubDomain is the JetStream domain of the hub cluster.
	DefaultHubDomain = "hub"
)

// DefaultLinkGrace is Config.LinkGrace's default.
const DefaultLinkGrace = 10 * time.Second

// Config says where the fleet state lives and who this gateway is.
type Config struct {
	// Gateway is this gateway's id: it names the claimant in lease and
	// idempotency values, and the gateway's audit stream AUDIT_<Gateway>.
	// Letters, digits, '-' and '_'.
	Gateway string
	// HubDomain is the hub's JetStream domain; "" is DefaultHubDomain.
	HubDomain string
	// Replicas of the fleet buckets and streams when this gateway creates
	// them; 0 is 3. A quorum is Replicas/2+1 of them.
	Replicas int
	// IdemTTL is how long fleet idempotency claims are kept; 0 and less
	// than 24 h are 24 h (proMCP keeps keys at least a day).
	IdemTTL time.Duration
	// RateMaxAge bounds the longest rate-limit window FLEET_RATE can
	// enforce; 0 is 24 h.
	RateMaxAge time.Duration
	// Timeout bounds each write to the hub when the caller's context has
	// no earlier deadline; 0 is 2 s. Across a leaf link a hub without
	// quorum gives no fast error: the write fails at this deadline.
	Timeout time.Duration
	// ElectionWait: a shared claim whose hub calls fail retries, within
	// its context (until its deadline less four times Timeout, or a minute
	// without a deadline), for up to twice ElectionWait from its first
	// failure: a stalled leader answers nothing until the others elect,
	// which takes seconds, more under load. Once the hub has reported
	// its quorum lost (fewer current replicas than a quorum, or no hub
	// at all) for ElectionWait with no write committed, counted across
	// claims, claims are refused at once while it lasts. 0 is 12 s. The
	// settling of a record retries until its context ends (a minute at
	// most without a deadline).
	ElectionWait time.Duration
	// LocalDomain is the JetStream domain of the gateway's embedded leaf
	// server, where its audit stream AUDIT_<Gateway> lives and buffers
	// while the hub is out of reach; "" keeps no local audit stream (a
	// client-only gateway).
	LocalDomain string
	// Linked reports whether the gateway's leaf link to the hub is up
	// (the edge passes its leaf server's NumLeafNodes() > 0); nil when
	// unknown. A claim that finds the hub unreachable while Linked
	// turns true again within LinkGrace (a leaf failing over to another
	// hub node) is tried again instead of refused.
	Linked func() bool
	// LinkGrace is how long claims wait for the leaf link, counted from
	// when the first of them found it down; past it the gateway is taken
	// as cut off and claims are refused at once until the link is back.
	// 0 is 10 s: time for the leaf to find a silent link dead (pings,
	// ~3 s by default) and to try each of three hub members (a reconnect
	// interval and a first-INFO wait of 1 s each), with room for a
	// loaded machine.
	LinkGrace time.Duration
	// Kick closes the gateway's leaf link so that the leaf relinks (the
	// edge passes natsembed.KickLeaf on its leaf server) and names the
	// hub member it left; nil never kicks. With Linked, it is called when
	// the link has stayed up while every JetStream request through it got
	// "no responders" for LinkGrace, then no more often than every
	// LinkGrace, doubling up to 5 minutes while that lasts.
	Kick func() (string, error)
	// Log receives warnings; nil discards them.
	Log *slog.Logger
	// Clock is the gateway's clock (nil: clock.System); fleet ages are
	// measured on the hub's clock and mapped onto this one. Waits on NATS
	// itself (write timeouts, election back-offs) stay on real time: the
	// hubs' Raft elections and the server's timeouts run on it.
	Clock clock.Clock
}

var idRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

func (c *Config) fill() error {
	if !idRE.MatchString(c.Gateway) {
		return fmt.Errorf("fleet shared state: gateway id %q: want letters, digits, '-' or '_'", c.Gateway)
	}
	if c.HubDomain == "" {
		c.HubDomain = DefaultHubDomain
	}
	if c.Replicas == 0 {
		c.Replicas = 3
	}
	if c.Replicas < 1 || c.Replicas > 5 {
		return fmt.Errorf("fleet shared state: replicas %d: want 1 to 5", c.Replicas)
	}
	if c.IdemTTL < 24*time.Hour {
		c.IdemTTL = 24 * time.Hour
	}
	c.RateMaxAge = positive.Or(c.RateMaxAge, 24*time.Hour)
	c.Timeout = positive.Or(c.Timeout, 2*time.Second)
	c.ElectionWait = positive.Or(c.ElectionWait, 12*time.Second)
	if c.LocalDomain != "" && !idRE.MatchString(c.LocalDomain) {
		return fmt.Errorf("fleet shared state: local domain %q: want letters, digits, '-' or '_'", c.LocalDomain)
	}
	c.LinkGrace = positive.Or(c.LinkGrace, DefaultLinkGrace)
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	c.Clock = clock.Or(c.Clock)
	return nil
}

// Quorum is how many replicas must commit a write.
func (c Config) Quorum() int { return c.Replicas/2 + 1 }

// State is a gateway's handle on the fleet's shared policy state. Safe for
// concurrent use.
type State struct {
	cfg Config
	nc  *nats.Conn
	js  jetstream.JetStream

	mu    sync.Mutex
	lease jetstream.KeyValue
	idem  jetstream.KeyValue
	rate  jetstream.Stream
	// sourced is true once FLEET_AUDIT sources AUDIT_<gw> (or there is
	// no local domain to source from).
	sourced   bool
	sourceTry time.Time
	// skew is the hub's clock minus this gateway's, measured on the
	// hubs' answers (under skewMu: measured while mu is held).
	skewMu   sync.Mutex
	skew     time.Duration
	skewAt   time.Time
	skewSeen bool
	// kicker restarts a leaf link with no JetStream interest (nil
	// without Config.Kick).
	kicker *linkKicker
	// unlinkedSince is when a claim first found the leaf link down.
	unlinkedSince time.Time
	// lostSince is when a claim's probe first reported the quorum lost
	// (zero: none), lostLast when one last did (under lostMu: mu is held
	// across network calls while binding).
	lostMu              sync.Mutex
	lostSince, lostLast time.Time
	// fault, set by tests only (export_test.go), loses replies: called
	// with "read" before a read of fleet_lease and with the operation
	// after the hubs answered it, an error it returns is the call's.
	fault func(op string) error
}

// Open binds the fleet buckets and streams in the hub domain, creating
// those that are absent: KV fleet_lease (AllowDirect off, so that every
// read comes from the stream leader and a compare-and-set is decided on
// the latest value), KV fleet_idem, stream FLEET_RATE and stream
// FLEET_AUDIT. When the hub cannot be reached, Open still returns a State
// (and the error, wrapped with ErrUnreachable): it binds on first use, and
// until then every shared claim is answered partition_no_quorum. A gateway
// starts and serves its local tools without waiting for the hub.
func Open(ctx context.Context, nc *nats.Conn, cfg Config) (*State, error) {
	if nc == nil {
		return nil, errors.New("fleet shared state: no NATS connection")
	}
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	js, err := jetstream.NewWithDomain(nc, cfg.HubDomain)
	if err != nil {
		return nil, fmt.Errorf("fleet shared state: hub domain %q: %w", cfg.HubDomain, err)
	}
	s := &State{cfg: cfg, nc: nc, js: js, kicker: newLinkKicker(cfg)}
	if cfg.LocalDomain != "" {
		if _, err := s.localAudit(ctx); err != nil {
			return nil, err
		}
	}
	if err := s.bind(ctx, false); err != nil {
		return s, fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	s.measureClock(ctx)
	return s, nil
}

// measureClock measures the hub's clock against the gateway's with one
// request to the hubs' service, so that the first decision already reads
// fleet ages on the hub's clock (every answer measures it again when the
// last measure is stale).
func (s *State) measureClock(ctx context.Context) {
	if _, err := s.call(ctx, opClock, svcRequest{}); err != nil {
		s.cfg.Log.Warn("fleet: measuring the hub's clock", "err", err)
	}
}

// ErrUnreachable is returned by Open, with the State, when the hub's
// JetStream did not answer: the State binds later.
var ErrUnreachable = errors.New("fleet shared state: the hub is not reachable yet")

// Config returns the configuration in effect (defaults filled in).
func (s *State) Config() Config { return s.cfg }

// bind binds (creating when absent) whatever is not bound yet, within
// ctx; bounded, within the write timeout as well (a bind on a claim's
// path).
func (s *State) bind(ctx context.Context, bounded bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lease != nil && s.idem != nil && s.rate != nil && (s.sourced || s.cfg.Clock.Now().Sub(s.sourceTry) < 5*time.Second) {
		return nil
	}
	if bounded {
		var cancel context.CancelFunc
		ctx, cancel = s.bound(ctx)
		defer cancel()
	}
	if s.lease == nil {
		kv, err := s.bucket(ctx, jetstream.KeyValueConfig{Bucket: LeaseBucket, Description: "promcp fleet: cooldowns and leases on shared equipment",
			History: 1, Replicas: s.cfg.Replicas, Storage: jetstream.FileStorage, LimitMarkerTTL: time.Second}, true)
		if err != nil {
			return err
		}
		s.lease = kv
	}
	if s.idem == nil {
		kv, err := s.bucket(ctx, jetstream.KeyValueConfig{Bucket: IdemBucket, Description: "promcp fleet: idempotency claims",
			History: 1, Replicas: s.cfg.Replicas, Storage: jetstream.FileStorage, TTL: s.cfg.IdemTTL}, true)
		if err != nil {
			return err
		}
		s.idem = kv
	}
	if s.rate == nil {
		st, err := s.stream(ctx, jetstream.StreamConfig{Name: RateStream, Description: "promcp fleet: rate-limit slots, one message per actuation",
			Subjects: []string{"rate.>"}, MaxMsgsPerSubject: 1, Discard: jetstream.DiscardNew, DiscardNewPerSubject: true,
			MaxAge: s.cfg.RateMaxAge, AllowMsgTTL: true, Replicas: s.cfg.Replicas, Storage: jetstream.FileStorage})
		if err != nil {
			return err
		}
		if _, err := s.stream(ctx, jetstream.StreamConfig{Name: AuditStream, Description: "promcp fleet: audit records sourced from every gateway",
			Replicas: s.cfg.Replicas, Storage: jetstream.FileStorage, Duplicates: 2 * time.Minute}); err != nil {
			return err
		}
		s.rate = st
	}
	if s.cfg.LocalDomain != "" && !s.sourced {
		// A missing audit source does not hold claims back: it is tried
		// again at most every 5 s; records wait in AUDIT_<gw> meanwhile.
		s.sourceTry = s.cfg.Clock.Now()
		if err := s.ensureSource(ctx); err != nil {
			s.cfg.Log.Warn("fleet audit: hub does not source this gateway's records yet", "err", err)
			return nil
		}
	}
	s.sourced = true
	return nil
}

// bucket binds a KV bucket, creating it when absent; noDirect turns
// direct gets off (docs/fleet.md, "Reads are not read-your-writes") before binding, so that the handle reads
// through the stream leader.
func (s *State) bucket(ctx context.Context, cfg jetstream.KeyValueConfig, noDirect bool) (jetstream.KeyValue, error) {
	_, err := s.js.KeyValue(ctx, cfg.Bucket)
	s.kicker.observe(err, time.Now()) // real time: the leaf relinks on it
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		_, err = s.js.CreateKeyValue(ctx, cfg)
		if errors.Is(err, jetstream.ErrBucketExists) || errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			err = nil // another gateway created it first
		}
	}
	if err != nil {
		return nil, fmt.Errorf("bucket %s: %w", cfg.Bucket, err)
	}
	if noDirect {
		st, err := s.js.Stream(ctx, "KV_"+cfg.Bucket)
		if err != nil {
			return nil, fmt.Errorf("bucket %s: %w", cfg.Bucket, err)
		}
		if sc := st.CachedInfo().Config; sc.AllowDirect {
			sc.AllowDirect = false
			if _, err := s.js.UpdateStream(ctx, sc); err != nil {
				return nil, fmt.Errorf("bucket %s: turning direct gets off: %w", cfg.Bucket, err)
			}
		}
	}
	kv, err := s.js.KeyValue(ctx, cfg.Bucket)
	if err != nil {
		return nil, fmt.Errorf("bucket %s: %w", cfg.Bucket, err)
	}
	return kv, nil
}

// stream binds a stream, creating it when absent.
func (s *State) stream(ctx context.Context, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	st, err := s.js.Stream(ctx, cfg.Name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		st, err = s.js.CreateStream(ctx, cfg)
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			st, err = s.js.Stream(ctx, cfg.Name)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", cfg.Name, err)
	}
	return st, nil
}

// bound gives ctx the configured write deadline unless it has an earlier one.
func (s *State) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= s.cfg.Timeout {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, s.cfg.Timeout)
}

// handles returns the bound handles, binding first when needed.
func (s *State) handles(ctx context.Context) (lease, idem jetstream.KeyValue, rate jetstream.Stream, err error) {
	if err := s.bind(ctx, true); err != nil {
		return nil, nil, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lease, s.idem, s.rate, nil
}

// hubTime maps a time on the hub's clock (an entry's Created) onto the
// gateway's clock, with the last measured skew.
func (s *State) hubTime(t time.Time) time.Time {
	s.skewMu.Lock()
	defer s.skewMu.Unlock()
	return t.Add(-s.skew)
}

// measureSkew records the hub's clock against the gateway's: created is
// the server's time of a write that ran between before and after on the
// gateway's clock.
func (s *State) measureSkew(created, before, after time.Time) {
	mid := before.Add(after.Sub(before) / 2)
	s.skewMu.Lock()
	defer s.skewMu.Unlock()
	s.skew, s.skewAt, s.skewSeen = created.Sub(mid), after, true
}
