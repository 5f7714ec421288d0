package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/promcp/promcp-device/approval/boltledger"
	"github.com/promcp/promcp-device/audit"
	"github.com/promcp/promcp-device/idempotency/boltstore"
	"github.com/promcp/promcp-device/jobs"
	"github.com/promcp/promcp-device/policy/boltstate"
)

// Files in a --state directory.
const (
	storeFile  = "idempotency.db"
	auditFile  = "audit.jsonl"
	policyFile = "policy.db"
	ledgerFile = "approvals.db"
	jobsFile   = "jobs.db"
)

// state is what serve keeps in --state DIR: the durable idempotency store,
// the audit log, and the actuation history that cooldowns and rate limits
// count. Without a directory all are nil.
type state struct {
	store   *boltstore.Bolt
	audit   *audit.Log
	history *boltstate.BoltState
	ledger  *boltledger.BoltLedger // the spent one-time approvals
	jobs    *jobs.Bolt             // the jobs and dead-man timers
}

func openState(dir string, ttl, keepJobs time.Duration, ac *auditConfig, log *slog.Logger) (*state, error) {
	if dir == "" {
		return &state{}, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("--state %s: %w", dir, err)
	}
	st, err := boltstore.OpenBolt(filepath.Join(dir, storeFile), 2*time.Second,
		boltstore.BoltOptions{TTL: ttl, Log: log})
	if err != nil {
		return nil, fmt.Errorf("--state %s: %w (is another promcp-device serving this directory?)", dir, err)
	}
	// Each file opens once the ones before it have; a failure closes
	// those already open.
	s := &state{store: st}
	at := func(file string) string { return filepath.Join(dir, file) }
	for _, open := range []func() error{
		func() (err error) { s.audit, err = openAuditLog(dir, ac, log); return err },
		func() (err error) { s.history, err = boltstate.OpenBoltState(at(policyFile), log); return err },
		func() (err error) { s.ledger, err = boltledger.OpenBoltLedger(at(ledgerFile)); return err },
		func() (err error) {
			s.jobs, err = jobs.OpenBoltWith(at(jobsFile), jobs.BoltOptions{KeepEnded: keepJobs})
			return err
		},
	} {
		if err := open(); err != nil {
			s.Close()
			return nil, fmt.Errorf("--state %s: %w", dir, err)
		}
	}
	return s, nil
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
	if s.history != nil {
		errs = append(errs, s.history.Close())
	}
	if s.ledger != nil {
		errs = append(errs, s.ledger.Close())
	}
	if s.jobs != nil {
		errs = append(errs, s.jobs.Close())
	}
	return errors.Join(errs...)
}
