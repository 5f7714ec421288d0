package boltstore

// LeaveInFlight records key as in flight, as a process that stopped during
// the action would have left it.
func LeaveInFlight(b *Bolt, key, fingerprint string) error {
	now := b.clock.Now()
	return b.put(key, &record{Fingerprint: fingerprint, State: stateInFlight, Started: now, Expires: now.Add(b.ttl)})
}

// FailWrites makes every write of b fail with err (a full disk) until it
// is called with nil.
func FailWrites(b *Bolt, err error) {
	if err == nil {
		b.failWrite.Store(nil)
		return
	}
	fail := func() error { return err }
	b.failWrite.Store(&fail)
}

// Pending returns how many failed writes b still holds in memory.
func Pending(b *Bolt) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.pending)
}
