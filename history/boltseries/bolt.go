// Package boltseries keeps capability histories on disk in a bbolt file
// (history.db under --state): one bucket per capability, a sample per key
// (its sample time), bounded by a retention per capability and by
// MaxSamples.
package boltseries

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/promcp/promcp-device/history"
	"github.com/promcp/promcp-device/internal/boltdb"
	"github.com/promcp/promcp-device/promcp"
)

// MaxSamples bounds the samples one capability keeps on disk, whatever
// its retention (about 40 bytes each: 4 MB a capability); pruning runs
// every pruneEvery appends, so a series may exceed it by that many.
const MaxSamples = 100000

// pruneEvery is how many appends to a series pass between prunings.
const pruneEvery = 64

// Store is a history.Store in a bbolt file. It is safe for concurrent use.
type Store struct {
	db        *bolt.DB
	now       func() time.Time
	retention func(name string) time.Duration
	max       int

	mu    sync.Mutex
	count map[string]int // appends since the series was last pruned
}

// Open opens (creating) the store at path. retention gives each
// capability's retention; now is the clock the retention is measured on.
func Open(path string, now func() time.Time, retention func(name string) time.Duration) (*Store, error) {
	db, err := boltdb.Open(path, "history store", 5*time.Second)
	if err != nil {
		return nil, err
	}
	return &Store{db: db, now: now, retention: retention, max: MaxSamples, count: map[string]int{}}, nil
}

// Close closes the file.
func (s *Store) Close() error { return s.db.Close() }

type record struct {
	V any            `json:"v"`
	I bool           `json:"i,omitempty"` // V is an int64
	Q promcp.Quality `json:"q"`
}

// Append implements history.Store. Every pruneEvery appends to a series,
// the samples older than its retention, and the oldest beyond MaxSamples,
// are deleted.
func (s *Store) Append(name string, x history.Sample) error {
	_, isInt := x.Value.(int64)
	v, err := json.Marshal(record{V: x.Value, I: isInt, Q: x.Quality})
	if err != nil {
		return fmt.Errorf("history %s: %w", name, err)
	}
	s.mu.Lock()
	s.count[name]++
	prune := s.count[name] >= pruneEvery
	if prune {
		s.count[name] = 0
	}
	s.mu.Unlock()
	err = s.db.Batch(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte(name))
		if err != nil {
			return err
		}
		if err := b.Put(boltdb.TimeKey(x.Time), v); err != nil {
			return err
		}
		if prune {
			return s.prune(b, name)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("history %s: %w", name, err)
	}
	return nil
}

// prune deletes the samples of b older than the retention, then the
// oldest beyond the maximum count.
func (s *Store) prune(b *bolt.Bucket, name string) error {
	if err := boltdb.DeleteBefore(b, s.now().Add(-s.retention(name))); err != nil {
		return err
	}
	c := b.Cursor()
	for n := b.Stats().KeyN; n > s.max; n-- {
		if k, _ := c.First(); k == nil {
			break
		}
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}

// Since implements history.Store.
func (s *Store) Since(name string, t time.Time) ([]history.Sample, error) {
	var out []history.Sample
	err := boltdb.Since(s.db, name, t, func(at time.Time, v []byte) error {
		x, err := decode(at, v)
		if err != nil {
			return err
		}
		out = append(out, x)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", name, err)
	}
	return out, nil
}

func decode(at time.Time, v []byte) (history.Sample, error) {
	var r record
	d := json.NewDecoder(bytes.NewReader(v))
	d.UseNumber()
	if err := d.Decode(&r); err != nil {
		return history.Sample{}, err
	}
	x := history.Sample{Time: at.UTC(), Quality: r.Q, Value: r.V}
	if n, ok := r.V.(json.Number); ok {
		if r.I {
			i, err := n.Int64()
			x.Value = i
			return x, err
		}
		f, err := n.Float64()
		x.Value = f
		return x, err
	}
	return x, nil
}
