package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/promcp/promcp-device/audit"
	"github.com/promcp/promcp-device/idempotency"
)

// Files in a --state directory.
const (
	storeFile = "idempotency.db"
	auditFile = "audit.jsonl"
)

// state is what serve keeps in --state DIR: the durable idempotency store
// and the audit log. Without a directory both are nil.
type state struct {
	store *idempotency.Bolt
	audit *audit.Log
}

func openState(dir string, ttl time.Duration, log *slog.Logger) (*state, error) {
	if dir == "" {
		return &state{}, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("--state %s: %w", dir, err)
	}
	st, err := idempotency.OpenBolt(filepath.Join(dir, storeFile), 2*time.Second,
		idempotency.BoltOptions{TTL: ttl, Log: log})
	if err != nil {
		return nil, fmt.Errorf("--state %s: %w (is another promcp-device serving this directory?)", dir, err)
	}
	al, err := audit.Open(filepath.Join(dir, auditFile))
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("--state %s: %w", dir, err)
	}
	return &state{store: st, audit: al}, nil
}

// Close flushes and closes the audit log and the store.
func (s *state) Close() error {
	var errs []error
	if s.audit != nil {
		errs = append(errs, s.audit.Close())
	}
	if s.store != nil {
		errs = append(errs, s.store.Close())
	}
	return errors.Join(errs...)
}
