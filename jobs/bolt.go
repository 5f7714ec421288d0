package jobs

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/promcp/promcp-device/internal/boltdb"
)

// Buckets of the jobs file. ended indexes the ended jobs by job id: the
// wall-clock time their end was recorded (RFC 3339), so that old ones are
// found and deleted without decoding every record.
var (
	jobsBucket    = []byte("jobs")
	deadmanBucket = []byte("deadman")
	endedBucket   = []byte("ended")
)

// DefaultKeepEnded is how long an ended job's record is kept by default:
// long enough to read it back (read_job_*, the audit of a week), short
// enough that the file and the start-up stay small.
const DefaultKeepEnded = 7 * 24 * time.Hour

// pruneEvery is how often recording an ended job also deletes the ended
// jobs past their keep.
const pruneEvery = time.Hour

// BoltOptions configure a jobs file.
type BoltOptions struct {
	// KeepEnded is how long an ended job (succeeded, cancelled, failed,
	// compensated) is kept, from when its end is recorded; then it is
	// deleted. 0 means DefaultKeepEnded. Running jobs are always kept.
	KeepEnded time.Duration
	// Now is the wall clock the keep is counted on; nil means time.Now.
	Now func() time.Time
}

// Bolt is the durable record of jobs and dead-man timers under --state: one
// bbolt file, each record written (and synced) before the actuation it
// announces. An ended job is kept for BoltOptions.KeepEnded, then deleted:
// at start-up (Load neither returns nor decodes it) and, at most once an
// hour, when another job's end is recorded.
type Bolt struct {
	db   *bolt.DB
	keep time.Duration
	now  func() time.Time

	mu        sync.Mutex
	lastPrune time.Time
}

// OpenBolt opens (creating) the jobs file at path, keeping ended jobs for
// DefaultKeepEnded.
func OpenBolt(path string) (*Bolt, error) { return OpenBoltWith(path, BoltOptions{}) }

// OpenBoltWith opens (creating) the jobs file at path with o.
func OpenBoltWith(path string, o BoltOptions) (*Bolt, error) {
	if o.KeepEnded < 0 {
		return nil, fmt.Errorf("jobs store %s: keeping ended jobs for %v: it must be more than 0", path, o.KeepEnded)
	}
	db, err := boltdb.Open(path, "jobs store", 2*time.Second, jobsBucket, deadmanBucket, endedBucket)
	if err != nil {
		return nil, err
	}
	b := &Bolt{db: db, keep: o.KeepEnded, now: o.Now}
	if b.keep == 0 {
		b.keep = DefaultKeepEnded
	}
	if b.now == nil {
		b.now = time.Now
	}
	return b, nil
}

// Close closes the file.
func (b *Bolt) Close() error { return b.db.Close() }

// Put writes j. Recording an ended job also indexes when it ended and, at
// most once per pruneEvery, deletes the ended jobs past their keep, in the
// same transaction.
func (b *Bolt) Put(j Job) error {
	data, err := json.Marshal(j)
	if err != nil {
		return fmt.Errorf("job %s: %w", j.ID, err)
	}
	now := b.now()
	prune := j.State != Running && b.pruneDue(now)
	return b.db.Update(func(tx *bolt.Tx) error {
		if err := tx.Bucket(jobsBucket).Put([]byte(j.ID), data); err != nil {
			return fmt.Errorf("job %s: %w", j.ID, err)
		}
		ended := tx.Bucket(endedBucket)
		if j.State == Running {
			return ended.Delete([]byte(j.ID))
		}
		if ended.Get([]byte(j.ID)) == nil {
			if err := ended.Put([]byte(j.ID), []byte(now.UTC().Format(time.RFC3339Nano))); err != nil {
				return fmt.Errorf("job %s: %w", j.ID, err)
			}
		}
		if prune {
			_, err := b.pruneTx(tx, now)
			return err
		}
		return nil
	})
}

func (b *Bolt) pruneDue(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if now.Sub(b.lastPrune) < pruneEvery {
		return false
	}
	b.lastPrune = now
	return true
}

// Load deletes the ended jobs past their keep and returns every other job
// recorded. The deleted ones are not decoded.
func (b *Bolt) Load() ([]Job, error) {
	var out []Job
	err := b.db.Update(func(tx *bolt.Tx) error {
		now := b.now()
		if _, err := b.pruneTx(tx, now); err != nil {
			return err
		}
		ended, jobs := tx.Bucket(endedBucket), tx.Bucket(jobsBucket)
		var old [][]byte
		err := jobs.ForEach(func(k, v []byte) error {
			var j Job
			if err := json.Unmarshal(v, &j); err != nil {
				return fmt.Errorf("job %s: %w", k, err)
			}
			if j.State != Running && ended.Get(k) == nil {
				// Recorded before the index: kept from when it finished.
				at := j.Finished
				if at.IsZero() || at.After(now) {
					at = now
				}
				if now.Sub(at) >= b.keep {
					old = append(old, k)
					return nil
				}
				if err := ended.Put(k, []byte(at.UTC().Format(time.RFC3339Nano))); err != nil {
					return fmt.Errorf("job %s: %w", k, err)
				}
			}
			out = append(out, j)
			return nil
		})
		for _, k := range old {
			if err == nil {
				err = jobs.Delete(k)
			}
		}
		return err
	})
	b.mu.Lock()
	b.lastPrune = b.now()
	b.mu.Unlock()
	return out, err
}

// pruneTx deletes the ended jobs recorded as ended more than keep before
// now, and returns how many.
func (b *Bolt) pruneTx(tx *bolt.Tx, now time.Time) (int, error) {
	ended, jobs := tx.Bucket(endedBucket), tx.Bucket(jobsBucket)
	var old [][]byte
	err := ended.ForEach(func(k, v []byte) error {
		at, err := time.Parse(time.RFC3339Nano, string(v))
		if err != nil || now.Sub(at) >= b.keep {
			old = append(old, k) // an unreadable stamp is deleted too: it can only be ours
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	for _, k := range old {
		if err := jobs.Delete(k); err != nil {
			return 0, fmt.Errorf("deleting ended job %s: %w", k, err)
		}
		if err := ended.Delete(k); err != nil {
			return 0, fmt.Errorf("deleting ended job %s: %w", k, err)
		}
	}
	return len(old), nil
}

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
