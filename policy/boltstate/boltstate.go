// Package boltstate is the durable policy.State: the actuation history
// (cooldowns, rate limits) kept in a bbolt file across restarts. It is its
// own package so that policy itself needs no bbolt.
package boltstate

import (
	"fmt"
	"log/slog"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/promcp/promcp-device/internal/boltdb"
	"github.com/promcp/promcp-device/policy"
)

// BoltState is a policy.State kept in a bbolt file, so that cooldowns and rate
// limits survive a restart: a compressor that started a minute before the
// gateway rebooted must still wait out its cooldown. It keeps a day of
// history per action. What this process records is also kept in memory,
// so that a failed write weakens only what a restart remembers, never the
// cooldown now. Safe for concurrent use.
type BoltState struct {
	db  *bolt.DB
	mem *policy.MemoryState
	log *slog.Logger
}

// OpenBoltState opens (creating it if needed) the history file at path;
// write failures are logged to log (nil discards them). The caller closes
// it.
func OpenBoltState(path string, log *slog.Logger) (*BoltState, error) {
	db, err := boltdb.Open(path, "policy state", 2*time.Second)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &BoltState{db: db, mem: policy.NewMemoryState(), log: log}, nil
}

// Close closes the file.
func (s *BoltState) Close() error { return s.db.Close() }

// History implements State: the history on disk and what this process
// recorded, each actuation once. A read error is logged; the reserver asks
// HistoryErr, which returns it (and refuses what the history decides).
func (s *BoltState) History(action string, since time.Time) []time.Time {
	out, err := s.HistoryErr(action, since)
	if err != nil {
		s.log.Error("reading the actuation history", "action", action, "err", err)
	}
	return out
}

// HistoryErr implements policy.FallibleState: History, with the error of
// reading the file.
func (s *BoltState) HistoryErr(action string, since time.Time) ([]time.Time, error) {
	out := s.mem.History(action, since)
	err := boltdb.Since(s.db, action, since, func(t time.Time, _ []byte) error {
		if !slices.ContainsFunc(out, t.Equal) {
			out = append(out, t)
		}
		return nil
	})
	if err != nil {
		return out, fmt.Errorf("reading the actuation history of %s: %w", action, err)
	}
	return out, nil
}

// Record implements State: the actuation is kept in memory and on disk
// (fsync'd) when it returns; a write failure is logged. Entries older than
// a day are dropped.
func (s *BoltState) Record(action string, t time.Time) {
	s.mem.Record(action, t)
	if err := s.write(action, t); err != nil {
		s.log.Error("writing the actuation history: a restart will not remember this actuation", "action", action, "err", err)
	}
}

func (s *BoltState) write(action string, t time.Time) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte(action))
		if err != nil {
			return err
		}
		if err := b.Put(boltdb.TimeKey(t), nil); err != nil {
			return err
		}
		return boltdb.DeleteBefore(b, t.Add(-24*time.Hour))
	})
}
