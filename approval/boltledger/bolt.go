// Package boltledger is the durable approval.Ledger: spent one-time
// approvals kept in a bbolt file. It is its own package so that the proMCP
// library (server) sees only the approval interfaces, not bbolt.
package boltledger

import (
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/promcp/promcp-device/approval"
	"github.com/promcp/promcp-device/internal/boltdb"
)

var usedBucket = []byte("used")

// BoltLedger is an approval.Ledger kept in a bbolt file, so that a one-time approval
// stays spent across a restart of the gateway. A grant's ID is kept until
// the grant expires (after that Verify refuses it anyway). Use commits to
// disk before it returns; when the file cannot be written, Use fails and
// the caller treats the approval as not spent-able (fail closed). Safe for
// concurrent use.
type BoltLedger struct {
	db *bolt.DB
}

// OpenBoltLedger opens (creating it if needed) the ledger file at path.
// The caller closes it.
func OpenBoltLedger(path string) (*BoltLedger, error) {
	db, err := boltdb.Open(path, "approval ledger", 2*time.Second, usedBucket)
	if err != nil {
		return nil, err
	}
	return &BoltLedger{db: db}, nil
}

// Close closes the file.
func (l *BoltLedger) Close() error { return l.db.Close() }

// Use implements Ledger; it also drops grants that have expired.
func (l *BoltLedger) Use(g approval.Grant, now time.Time) error {
	err := l.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(usedBucket)
		if v := b.Get([]byte(g.ID)); v != nil {
			return approval.ErrUsed
		}
		if err := b.Put([]byte(g.ID), boltdb.TimeKey(g.Expires)); err != nil {
			return err
		}
		var stale [][]byte
		c := b.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if len(v) == 8 && now.After(boltdb.KeyTime(v)) {
				stale = append(stale, append([]byte(nil), k...))
			}
		}
		for _, k := range stale {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, approval.ErrUsed) {
		return fmt.Errorf("approval ledger: %w", err)
	}
	return err
}

// Used implements Ledger. A ledger that cannot be read answers true: an
// approval whose use cannot be checked is not honoured.
func (l *BoltLedger) Used(g approval.Grant, now time.Time) bool {
	used := true
	_ = l.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(usedBucket).Get([]byte(g.ID))
		used = v != nil && len(v) == 8 && !now.After(boltdb.KeyTime(v))
		return nil
	})
	return used
}
