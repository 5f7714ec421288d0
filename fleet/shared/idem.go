package shared

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/promcp/promcp-device/idempotency"
	"github.com/promcp/promcp-device/internal/asciiname"
)

// Fleet idempotency claims: before a gateway runs a do_* call it claims
// the call's idempotency key in fleet_idem with Create("idem.<key>"),
// which succeeds for exactly one claimant fleet-wide. The winner runs the
// call through its local store and writes the outcome into the claim; a
// duplicate anywhere in the fleet returns that outcome (or waits while
// the winner runs). The local store keeps deduplicating as before: it is
// what holds while the hub cannot be reached.

// ErrInFlight is returned, wrapped, by the fleet store when another
// gateway is running the key's action and the caller's context ended
// first: the outcome is unknown to this gateway.
var ErrInFlight = errors.New("the idempotency key is being run by another gateway")

const (
	idemRunning = "running"
	idemDone    = "done"
)

// idemRecord is the value of a key in fleet_idem, naming its claimant.
type idemRecord struct {
	claimant
	Fingerprint string `json:"fp"`
	State       string `json:"state"`
	Outcome     []byte `json:"outcome,omitempty"`
}

// fleetStore is the idempotency.Store of a fleet gateway.
type fleetStore struct {
	s     *State
	local idempotency.Store
	ttl   time.Duration
	// hub reports whether a call's key is claimed on the hub; nil: every
	// key is.
	hub func(ctx context.Context) bool
}

// Store returns an idempotency.Store that claims each key fleet-wide
// before local runs its action, so that the same key sent to two gateways
// runs once; the second gets the first's outcome as replayed. ttl is how
// long a claim holds (on the hub's clock; at most the bucket's TTL, 0 for
// it). A key used with other arguments anywhere in the fleet is
// idempotency.ErrConflict. While the hub cannot commit a claim, local
// alone decides (this gateway's duplicates are still caught).
func (s *State) Store(local idempotency.Store, ttl time.Duration) idempotency.Store {
	if ttl <= 0 || ttl > s.cfg.IdemTTL {
		ttl = s.cfg.IdemTTL
	}
	return &fleetStore{s: s, local: local, ttl: ttl}
}

// StoreFor is Store for a gateway whose own calls are decided locally:
// a call for which hub reports false (a call made to this gateway
// directly, on its own actuators) is deduplicated by local alone, with
// no hub round trip, so it runs as fast during a hub outage as with the
// hub up; a call for which hub reports true (a call routed to this
// gateway through the fleet, which a client may send again through
// another entry node) claims its key on the hub first. A hub-claimed key
// whose claim cannot be read or written is refused, never run on local
// alone: a timeout is not a partition, and the key may be running
// elsewhere.
func (s *State) StoreFor(local idempotency.Store, ttl time.Duration, hub func(ctx context.Context) bool) idempotency.Store {
	f := s.Store(local, ttl).(*fleetStore)
	f.hub = hub
	return f
}

// ErrClaimUnknown is returned, wrapped, when a key that is claimed on the
// hub could not be read or claimed there: nothing ran; the call may be
// sent again with the same key.
var ErrClaimUnknown = errors.New("the fleet idempotency claim could not be checked on the hub")

// plainKey is `^[-_=A-Za-z0-9]{1,128}$`, checked without a regular
// expression (its counted repetition compiles to about 120 KB at init).
func plainKey(s string) bool { return asciiname.Match(s, 1, 128, "-_=") }

// idemKey is the KV key of an idempotency key: the key itself when KV
// allows it, else "h." and its SHA-256 (the two cannot collide: a plain
// key has no dot).
func idemKey(key string) string {
	if plainKey(key) {
		return "idem." + key
	}
	sum := sha256.Sum256([]byte(key))
	return "idem.h." + hex.EncodeToString(sum[:])
}

// Do implements idempotency.Store.
func (f *fleetStore) Do(ctx context.Context, key, fingerprint string, act idempotency.Action) ([]byte, bool, error) {
	if f.hub != nil && !f.hub(ctx) {
		return f.local.Do(ctx, key, fingerprint, act)
	}
	k := idemKey(key)
	for pause := 5 * time.Millisecond; ; pause = min(2*pause, 200*time.Millisecond) {
		rev, rec, err := f.read(ctx, k)
		if ctx.Err() != nil {
			return nil, false, ctx.Err()
		}
		if err != nil {
			return f.alone(ctx, key, fingerprint, act, err)
		}
		switch {
		case rec != nil && rec.State == idemDone && rec.Fingerprint != fingerprint:
			return nil, false, idempotency.ErrConflict
		case rec != nil && rec.State == idemDone:
			return rec.Outcome, true, nil
		case rec != nil && rec.Gateway == f.s.cfg.Gateway:
			// This gateway runs it (a concurrent duplicate, or a claim
			// left by a restart): the local store knows.
			return f.local.Do(ctx, key, fingerprint, act)
		case rec != nil:
			if !sleepCtx(ctx, pause) {
				return nil, false, fmt.Errorf("%w (gateway %s): %w", ErrInFlight, rec.Gateway, ctx.Err())
			}
			continue
		}
		mine := idemRecord{claimant: f.s.claimant(), Fingerprint: fingerprint, State: idemRunning}
		nrev, err := f.write(ctx, k, mine, rev)
		if Classify(err) == ClassConflict {
			continue // another claimant was first: read what it wrote
		}
		if err != nil {
			return f.alone(ctx, key, fingerprint, act, err)
		}
		return f.run(ctx, k, key, fingerprint, act, mine, nrev)
	}
}

// run runs the claimed key's action through the local store and records
// its outcome in the claim; a call that kept nothing gives the claim up.
func (f *fleetStore) run(ctx context.Context, k, key, fingerprint string, act idempotency.Action, mine idemRecord, rev uint64) ([]byte, bool, error) {
	kept := false
	out, replayed, err := f.local.Do(ctx, key, fingerprint, func(ctx context.Context, a idempotency.Attempt) ([]byte, bool, error) {
		o, keep, err := act(ctx, a)
		kept = keep && err == nil
		return o, keep, err
	})
	wctx, cancel := f.s.bound(context.WithoutCancel(ctx))
	defer cancel()
	if (err != nil && !errors.Is(err, idempotency.ErrNotRecorded)) || (!kept && !replayed) {
		if _, derr := f.s.call(wctx, opIdemDrop, svcRequest{Key: k, Rev: rev, Req: mine.Request}); derr != nil {
			f.s.cfg.Log.Warn("fleet: giving up an idempotency claim", "key", k, "err", derr)
		}
		return out, replayed, err
	}
	mine.State, mine.Outcome = idemDone, out
	if _, werr := f.s.call(wctx, opIdemDone, svcRequest{Key: k, Rev: rev, Req: mine.Request, Outcome: out}); werr != nil {
		f.s.cfg.Log.Warn("fleet: recording an idempotency outcome", "key", k, "err", werr)
	}
	return out, replayed, err
}

// alone answers a call whose hub claim failed (err). With StoreFor, a
// hub-claimed key is refused (nothing runs: a timeout or a hub without
// quorum is not a partition, and the key may run elsewhere) unless no
// hub runs the shared-state service at all (no responders while the
// link to the hub is up: no gateway can claim the key either), when the
// local store decides. With Store
// (every key on the hub, as before) the call runs with the local store
// only.
func (f *fleetStore) alone(ctx context.Context, key, fingerprint string, act idempotency.Action, err error) ([]byte, bool, error) {
	if f.hub != nil && !f.noService(err) {
		return nil, false, fmt.Errorf("%w (nothing ran; send it again with the same idempotency_key): %w", ErrClaimUnknown, err)
	}
	f.s.cfg.Log.Warn("fleet: idempotency claim not possible, deduplicating on this gateway only", "err", err)
	return f.local.Do(ctx, key, fingerprint, act)
}

// noService reports whether err says that no hub runs the shared-state
// service: no responders while the leaf link is up (or its state is not
// known). A link that is down is a partition of unknown length, not an
// answer: refused.
func (f *fleetStore) noService(err error) bool {
	return errors.Is(err, nats.ErrNoResponders) && (f.s.cfg.Linked == nil || f.s.cfg.Linked())
}

// read returns the claim of k and its revision; a claim older than the
// TTL (hub clock) reads as none, with the revision to overwrite.
func (f *fleetStore) read(ctx context.Context, k string) (uint64, *idemRecord, error) {
	_, idem, _, err := f.s.handles(ctx)
	if err != nil {
		return 0, nil, err
	}
	e, err := f.s.get(ctx, idem, k)
	if err != nil || e == nil {
		return 0, nil, err
	}
	var rec idemRecord
	if err := json.Unmarshal(e.Value(), &rec); err != nil {
		return e.Revision(), nil, nil // not ours: overwrite
	}
	if !f.s.cfg.Clock.Now().Before(f.s.hubTime(e.Created()).Add(f.ttl)) {
		return e.Revision(), nil, nil
	}
	return e.Revision(), &rec, nil
}

// write asks the hubs to claim k for this gateway's request rec.Request
// (rev 0: k must not exist; else it must still be at rev, and expired or
// this gateway's own).
func (f *fleetStore) write(ctx context.Context, k string, rec idemRecord, rev uint64) (uint64, error) {
	if err := f.s.bind(ctx, true); err != nil {
		return 0, err
	}
	rep, err := f.s.call(ctx, opIdemClaim, svcRequest{Key: k, Rev: rev, Req: rec.Request, Fingerprint: rec.Fingerprint, TTL: f.ttl.Milliseconds()})
	return rep.Rev, err
}
