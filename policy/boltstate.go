package policy

import (
	"encoding/binary"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// BoltState is a State kept in a bbolt file, so that cooldowns and rate
// limits survive a restart: a compressor that started a minute before the
// gateway rebooted must still wait out its cooldown. It keeps a day of
// history per action. Safe for concurrent use.
type BoltState struct {
	db *bolt.DB
}

// OpenBoltState opens (creating it if needed) the history file at path.
// The caller closes it.
func OpenBoltState(path string) (*BoltState, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 2 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("policy state %s: %w", path, err)
	}
	return &BoltState{db: db}, nil
}

// Close closes the file.
func (s *BoltState) Close() error { return s.db.Close() }

func stamp(t time.Time) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(t.UnixNano()))
	return b[:]
}

// History implements State. A read error gives the history read so far;
// Record reports write errors.
func (s *BoltState) History(action string, since time.Time) []time.Time {
	var out []time.Time
	_ = s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(action))
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, _ := c.Seek(stamp(since)); k != nil; k, _ = c.Next() {
			out = append(out, time.Unix(0, int64(binary.BigEndian.Uint64(k))))
		}
		return nil
	})
	return out
}

// Record implements State: the actuation is on disk (fsync'd) when it
// returns. Entries older than a day are dropped.
func (s *BoltState) Record(action string, t time.Time) {
	_ = s.RecordErr(action, t)
}

// RecordErr is Record that reports a write error.
func (s *BoltState) RecordErr(action string, t time.Time) error {
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
