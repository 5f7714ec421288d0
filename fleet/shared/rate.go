package shared

import (
	"context"
	"fmt"
	"time"

	"github.com/promcp/promcp-device/policy"
	"github.com/promcp/promcp-device/promcp"
)

// Rate limits in FLEET_RATE: a limit of N actuations per window is N
// subjects rate.<owner>.<action>.<0..N-1>, each holding at most one
// message (MaxMsgsPerSubject 1, DiscardNew per subject) that expires after
// the window (a per-message TTL). An actuation takes the first free slot;
// the server refuses a taken one atomically (10077), so racing gateways
// never take more than N between them. One stream serves every limit.

func rateSubject(owner, action string, slot int) string {
	return fmt.Sprintf("rate.%s.%s.%d", owner, action, slot)
}

// ttl is a window as a per-message TTL: whole seconds, at least one.
func ttl(per time.Duration) time.Duration {
	return max(time.Second, (per+time.Second-1)/time.Second*time.Second)
}

// takeRate takes a slot of c's fleet-wide rate limit and returns its
// sequence; 0 comes with the refusing Decision (rate_limited when every
// slot is taken) or the publish's error.
func (s *State) takeRate(ctx context.Context, c policy.Claim, rule Rule) (seq uint64, d policy.Decision, err error) {
	rl := rule.RateLimit
	if rl.Per > s.cfg.RateMaxAge {
		return 0, policy.Decision{Permission: promcp.PolicyDenied, Value: c.Value, ValidUntil: c.Now.Add(policy.MaxStaticValidity),
			Reason:  fmt.Sprintf("the rate window of %s is longer than the fleet's rate stream keeps (%s)", rl.Per, s.cfg.RateMaxAge),
			Details: "raise the fleet's rate window (Config.RateMaxAge) or shorten the policy's rate_limit.per"}, nil
	}
	wctx, cancel := s.bound(ctx)
	defer cancel()
	rep, err := s.call(wctx, opRateTake, svcRequest{Owner: rule.Owner, Action: c.Action, Max: rl.Max, Per: rl.Per.Milliseconds()})
	if err == nil {
		return rep.Seq, policy.Decision{}, nil
	}
	if Classify(err) != ClassRateFull {
		return 0, policy.Decision{}, fmt.Errorf("taking a rate slot: %w", err)
	}
	reset := s.rateReset(wctx, c, rule)
	return 0, policy.Decision{Permission: promcp.RateLimited, Value: c.Value, ValidUntil: reset,
		Reason:  fmt.Sprintf("fleet-wide rate limit of %d actuations per %s on %s reached (every gateway's actuations count)", rl.Max, rl.Per, rule.Owner),
		Details: "retry after valid_until"}, nil
}

// rateReset is when the oldest taken slot expires, on the gateway's clock.
func (s *State) rateReset(ctx context.Context, c policy.Claim, rule Rule) time.Time {
	reset := c.Now.Add(rule.RateLimit.Per)
	_, _, st, err := s.handles(ctx)
	if err != nil {
		return reset
	}
	for slot := range rule.RateLimit.Max {
		m, err := st.GetLastMsgForSubject(ctx, rateSubject(rule.Owner, c.Action, slot))
		if err != nil {
			continue
		}
		if t := s.hubTime(m.Time).Add(ttl(rule.RateLimit.Per)); t.After(c.Now) && t.Before(reset) {
			reset = t
		}
	}
	return reset
}

// freeRate gives a slot back (the reservation did not actuate).
func (s *State) freeRate(ctx context.Context, seq uint64) error {
	if _, err := s.call(ctx, opRateFree, svcRequest{Seq: seq}); err != nil {
		return fmt.Errorf("fleet: freeing rate slot %d: %w", seq, err)
	}
	return nil
}
