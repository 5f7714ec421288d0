package shared

import "context"

// LoseReplies makes s lose replies: fault is called with "read" before
// each read of fleet_lease and with the operation after the hubs
// answered it; an error it returns is the call's (the hubs' write, if
// any, stands).
func LoseReplies(s *State, fault func(op string) error) { s.fault = fault }

// LeaseFor is the lease a shared claim asks (leaseFor).
var LeaseFor = leaseFor

// ReadLease reads key of fleet_lease through s (readLease): one JetStream
// request to the hub, seen by the leaf-link kicker.
func ReadLease(ctx context.Context, s *State, key string) error {
	_, err := s.readLease(ctx, key)
	return err
}
