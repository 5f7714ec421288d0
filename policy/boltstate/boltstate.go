// Package boltstate is the durable policy.State: the actuation history
// (cooldowns, rate limits) kept in a bbolt file across restarts. It is its
// own package so that policy itself needs no bbolt.
package boltstate

import (
	"encoding/binary"
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

func stamp(t time.Time) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(t.UnixNano()))
	return b[:]
}

// History implements State: the history on disk and what this process
// recorded, each actuation once.
func (s *BoltState) History(action string, since time.Time) []time.Time {
	out := s.mem.History(action, since)
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(action))
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, _ := c.Seek(stamp(since)); k != nil; k, _ = c.Next() {
			t := time.Unix(0, int64(binary.BigEndian.Uint64(k)))
			if !slices.ContainsFunc(out, t.Equal) {
				out = append(out, t)
			}
		}
		return nil
	})
	if err != nil {
		s.log.Error("reading the actuation history", "action", action, "err", err)
	}
	return out
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
		if err := b.Put(stamp(t), nil); err != nil {
			return err
		}
		c := b.Cursor()
		cut := stamp(t.Add(-24 * time.Hour))
		for k, _ := c.First(); k != nil && string(k) < string(cut); k, _ = c.First() {
			if err := c.Delete(); err != nil {
				return err
			}
		}
		return nil
	})
}
