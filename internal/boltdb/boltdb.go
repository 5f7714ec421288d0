// Package boltdb opens the bbolt files of promcp-device's durable stores
// (idempotency keys, approval grants, policy history) the one same way.
package boltdb

import (
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Open opens the bbolt file at path, creating it (mode 0600) if needed,
// and the buckets it lacks. It waits at most timeout for another process
// to release the file. Errors name what the file is (such as "approval
// ledger") and path.
func Open(path, what string, timeout time.Duration, buckets ...[]byte) (*bolt.DB, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: timeout})
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", what, path, err)
	}
	if len(buckets) == 0 {
		return db, nil
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		for _, b := range buckets {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		db.Close()
		return nil, fmt.Errorf("%s %s: %w", what, path, err)
	}
	return db, nil
}
