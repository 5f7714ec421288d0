package idempotency

// LeaveInFlight records key as in flight, as a process that stopped during
// the action would have left it.
func LeaveInFlight(b *Bolt, key, fingerprint string) error {
	now := b.clock.Now()
	return b.put(key, &record{Fingerprint: fingerprint, State: stateInFlight, Started: now, Expires: now.Add(b.ttl)})
}
