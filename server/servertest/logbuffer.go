package servertest

import (
	"strings"
	"sync"
)

// LogBuffer collects what a server logs (or a gateway process writes to
// its stderr) while the test reads it: its Write and String are safe for
// concurrent use. The zero value is an empty buffer.
type LogBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

// Write appends p.
func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns everything written so far.
func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
