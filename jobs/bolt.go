package jobs

import (
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/promcp/promcp-device/internal/boltdb"
)

// Buckets of the jobs file.
var (
	jobsBucket    = []byte("jobs")
	deadmanBucket = []byte("deadman")
)

// Bolt is the durable record of jobs and dead-man timers under --state: one
// bbolt file, each record written (and synced) before the actuation it
// announces.
type Bolt struct {
	db *bolt.DB
}

// OpenBolt opens (creating) the jobs file at path.
func OpenBolt(path string) (*Bolt, error) {
	db, err := boltdb.Open(path, "jobs store", 2*time.Second, jobsBucket, deadmanBucket)
	if err != nil {
		return nil, err
	}
	return &Bolt{db: db}, nil
}

// Close closes the file.
func (b *Bolt) Close() error { return b.db.Close() }

// Put writes j.
func (b *Bolt) Put(j Job) error { return b.put(jobsBucket, j.ID, j) }

// Load returns every job recorded.
func (b *Bolt) Load() ([]Job, error) { return loadAll[Job](b, jobsBucket, "job") }

// PutTimer writes a dead-man timer.
func (b *Bolt) PutTimer(t Timer) error { return b.put(deadmanBucket, t.Tool, t) }

// DeleteTimer removes the dead-man timer of tool.
func (b *Bolt) DeleteTimer(tool string) error {
	return b.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(deadmanBucket).Delete([]byte(tool)) })
}

// LoadTimers returns every dead-man timer recorded.
func (b *Bolt) LoadTimers() ([]Timer, error) {
	return loadAll[Timer](b, deadmanBucket, "dead-man timer")
}

func (b *Bolt) put(bucket []byte, key string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return b.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucket).Put([]byte(key), data) })
}

// loadAll decodes every record of bucket; what names a record in errors.
func loadAll[T any](b *Bolt, bucket []byte, what string) ([]T, error) {
	var out []T
	err := b.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucket).ForEach(func(k, v []byte) error {
			var x T
			if err := json.Unmarshal(v, &x); err != nil {
				return fmt.Errorf("%s %s: %w", what, k, err)
			}
			out = append(out, x)
			return nil
		})
	})
	return out, err
}
