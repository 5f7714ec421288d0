package boltdb

import (
	"bytes"
	"encoding/binary"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The time series stores (policy history, read history) key a bucket by
// instant: 8 bytes of big-endian Unix nanoseconds, so that keys sort in
// time order.

// TimeKey is the key of instant t.
func TimeKey(t time.Time) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], uint64(t.UnixNano()))
	return k[:]
}

// KeyTime is the instant of key k (in the local time zone).
func KeyTime(k []byte) time.Time {
	return time.Unix(0, int64(binary.BigEndian.Uint64(k)))
}

// Since calls fn for each entry of bucket at or after from, in time order,
// and stops at fn's first error, which it returns. A missing bucket has no
// entries.
func Since(db *bolt.DB, bucket string, from time.Time, fn func(at time.Time, v []byte) error) error {
	return db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(bucket))
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, v := c.Seek(TimeKey(from)); k != nil; k, v = c.Next() {
			if err := fn(KeyTime(k), v); err != nil {
				return err
			}
		}
		return nil
	})
}

// DeleteBefore deletes the entries of b older than cut.
func DeleteBefore(b *bolt.Bucket, cut time.Time) error {
	end := TimeKey(cut)
	c := b.Cursor()
	for k, _ := c.First(); k != nil && bytes.Compare(k, end) < 0; k, _ = c.First() {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}
