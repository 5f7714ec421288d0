package shared

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Class is what a hub error means for a shared claim (docs/fleet.md, "Hub errors and what they mean").
type Class int

const (
	// ClassOther is an error this classifier does not know: fail closed.
	ClassOther Class = iota
	// ClassConflict is a lost compare-and-set (10071, or 10164 on a
	// replicated stream): someone wrote since our read. Re-read and decide
	// again.
	ClassConflict
	// ClassRateFull is 10077: the rate-limit slot is taken.
	ClassRateFull
	// ClassNoQuorum is a hub that answers but cannot commit: no stream
	// leader (ErrNoStreamResponse), JetStream meta group leaderless
	// (10008), or a write that timed out (across a leaf link a hub without
	// quorum gives no faster signal).
	ClassNoQuorum
	// ClassUnreachable is a gateway cut off from the hub: no responders,
	// or 10076 (the hub domain's JetStream is not reachable).
	ClassUnreachable
)

// JetStream API error codes docs/fleet.md ("Hub errors") relies on, beside those nats.go names.
const (
	codeSystemUnavailable = 10008
	codeMaxMsgsPerSubject = 10077
)

// Classify sorts an error from a hub call.
func Classify(err error) Class {
	if err == nil {
		return ClassOther
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode {
		case jetstream.JSErrCodeStreamWrongLastSequence, jetstream.JSErrCodeStreamWrongLastSequenceConstant:
			return ClassConflict
		case codeMaxMsgsPerSubject:
			return ClassRateFull
		case jetstream.JSErrCodeJetStreamNotEnabled, jetstream.JSErrCodeJetStreamNotEnabledForAccount:
			return ClassUnreachable
		case codeSystemUnavailable:
			return ClassNoQuorum
		}
	}
	switch {
	case errors.Is(err, jetstream.ErrKeyExists), errors.Is(err, jetstream.ErrKeyRevisionMismatch):
		return ClassConflict
	case errors.Is(err, nats.ErrNoResponders), errors.Is(err, jetstream.ErrJetStreamNotEnabled),
		errors.Is(err, nats.ErrConnectionClosed), errors.Is(err, nats.ErrDisconnected):
		return ClassUnreachable
	case errors.Is(err, jetstream.ErrNoStreamResponse), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, nats.ErrTimeout):
		return ClassNoQuorum
	}
	return ClassOther
}

// Reach is what a gateway can see of the hub's replicas when a write did
// not commit.
type Reach struct {
	// Reachable is the number of the bucket's replicas known to answer;
	// -1 when only "fewer than Required" is known.
	Reachable int
	Required  int
	Replicas  int
	// Cut is true when the hub did not answer at all (the gateway is cut
	// off from it).
	Cut bool
	// Err is the error that failed the write.
	Err error
}

// Reason is the sentence a partition_no_quorum Decision gives.
func (r Reach) Reason(what string) string {
	n := fmt.Sprint(r.Reachable)
	// A refusal with a quorum counted comes from a leader whose view of
	// its followers is a few seconds stale: say only what is known.
	if r.Reachable < 0 || r.Reachable >= r.Required {
		n = fmt.Sprintf("fewer than %d", r.Required)
	}
	where := "the hub answers but cannot commit the replicated write"
	if r.Cut {
		where = "this gateway is cut off from the hub"
	}
	return fmt.Sprintf("%s needs a replicated write on the fleet hub, and %s: replicas reachable: %s, required: %d (of %d)",
		what, where, n, r.Required, r.Replicas)
}

// probe finds out how many of the lease bucket's replicas answer, after a
// write failed with err (docs/fleet.md: "Failure timings", "Hub errors"): a hub that does not answer
// at all has none reachable; a stream leader that answers reports its
// replicas' Offline flags; otherwise the JetStream meta group tells: when
// it answers (account info) a quorum of hub servers is up and the stream
// is only electing, so the claim is tried again; when a hub server
// answers that JetStream is unavailable (10008) fewer than a quorum are
// up, which with three replicas is exactly one; when nothing answers in
// time, only "fewer than required" is known.
func (s *State) probe(ctx context.Context, err error) Reach {
	r := Reach{Reachable: -1, Required: s.cfg.Quorum(), Replicas: s.cfg.Replicas, Err: err}
	if Classify(err) == ClassUnreachable {
		r.Reachable, r.Cut = 0, true
		return r
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.Timeout/2)
	defer cancel()
	st, serr := s.js.Stream(ctx, "KV_"+LeaseBucket)
	if serr == nil {
		if ci := st.CachedInfo().Cluster; ci != nil && ci.Leader != "" {
			n := 1
			for _, p := range ci.Replicas {
				if p != nil && p.Current && !p.Offline {
					n++
				}
			}
			r.Reachable = n
			return r
		}
	} else if Classify(serr) == ClassUnreachable {
		r.Reachable, r.Cut = 0, true
		return r
	}
	_, aerr := s.js.AccountInfo(ctx)
	var apiErr *jetstream.APIError
	switch {
	case aerr == nil:
		r.Reachable = r.Required // the meta group has its quorum
	case Classify(aerr) == ClassUnreachable:
		r.Reachable, r.Cut = 0, true
	case errors.As(aerr, &apiErr) && apiErr.ErrorCode == codeSystemUnavailable && r.Required == 2:
		r.Reachable = 1
	}
	return r
}
