package fleet

// SetPause makes m run pause before it checks each request's deadline:
// a test freezes the gateway there, as a stopped process would be.
func SetPause(m *Member, pause func()) { m.pause.Store(&pause) }
