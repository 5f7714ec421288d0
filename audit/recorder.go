package audit

import (
	"context"
	"slices"
	"sync"
)

// Recorder is an in-memory audit log: it keeps the records appended to it,
// for site tests and tests that look at what a server audited. It is safe
// for concurrent use; the zero Recorder is empty.
type Recorder struct {
	mu   sync.Mutex
	list []Record
}

// Append records r.
func (a *Recorder) Append(_ context.Context, r Record) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.list = append(a.list, r)
	return nil
}

// Records returns a copy of the records appended so far, oldest first.
func (a *Recorder) Records() []Record {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.list)
}
