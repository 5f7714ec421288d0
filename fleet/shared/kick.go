package shared

import (
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// maxKickGap bounds the back-off between two kicks of the leaf link.
const maxKickGap = 5 * time.Minute

// linkKicker restarts a leaf link that is up but carries no JetStream
// interest: every hub request through it gets "no responders"
// (docs/fleet.md: "A linked leaf with no responders"). Once such answers
// have lasted the grace with no other answer between them, it kicks the
// link once (Config.Kick closes the leaf connection; the leaf relinks,
// to the next hub member first), then waits at least the grace before
// the next kick, doubling up to maxKickGap while the fault lasts. Any
// other answer (a reply, a timeout: the request left the gateway) ends
// the episode and the back-off.
type linkKicker struct {
	grace  time.Duration
	linked func() bool
	kick   func() (string, error)
	log    *slog.Logger

	mu    sync.Mutex
	since time.Time // first "no responders" of the episode, zero if none
	last  time.Time // last kick
	gap   time.Duration
}

func newLinkKicker(cfg Config) *linkKicker {
	if cfg.Kick == nil || cfg.Linked == nil {
		return nil
	}
	return &linkKicker{grace: cfg.LinkGrace, linked: cfg.Linked, kick: cfg.Kick, log: cfg.Log, gap: cfg.LinkGrace}
}

// observe records the outcome err of a JetStream request to the hub made
// at now, and kicks the link when it is due. Safe on a nil kicker.
func (k *linkKicker) observe(err error, now time.Time) {
	if k == nil {
		return
	}
	stuck := errors.Is(err, nats.ErrNoResponders)
	if stuck && !k.linked() {
		stuck = false // a link that is down relinks by itself
	}
	k.mu.Lock()
	if !stuck {
		if !errors.Is(err, nats.ErrNoResponders) {
			k.since, k.gap = time.Time{}, k.grace
		}
		k.mu.Unlock()
		return
	}
	if k.since.IsZero() || now.Before(k.since) {
		k.since = now
	}
	due := now.Sub(k.since) >= k.grace && (k.last.IsZero() || now.Sub(k.last) >= k.gap)
	if due {
		if !k.last.IsZero() {
			k.gap = min(2*k.gap, maxKickGap)
		}
		k.last = now
	}
	lasted := now.Sub(k.since)
	k.mu.Unlock()
	if !due {
		return
	}
	member, err := k.kick()
	k.log.Warn("fleet: leaf link up but the hub's JetStream gets no responders; closing the link so the leaf relinks",
		"member_left", member, "no_responders_for", lasted.Round(time.Millisecond), "err", err)
}
