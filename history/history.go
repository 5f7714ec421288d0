// Package history keeps a capability's recent samples, each with its
// quality, and answers a trend in one call: the samples since a time,
// bucketed by a step, each bucket aggregated (mean, min, max or last) and
// marked with the worst quality in it and the count of each quality.
//
// A Series is the ring in memory; a Store (boltseries under --state) keeps
// a bounded on-disk series with retention beside it.
package history

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/promcp/promcp-device/promcp"
)

// Sample is one observation of a capability.
type Sample struct {
	// Time is when the value was sampled (not when it was served).
	Time time.Time `json:"t"`
	// Value is float64, int64, bool or string; nil when Quality is error.
	Value   any            `json:"value"`
	Quality promcp.Quality `json:"quality"`
}

// Store keeps samples on disk, by capability name.
type Store interface {
	// Append adds x to the series of name; samples arrive in time order.
	Append(name string, x Sample) error
	// Since returns the samples of name at or after t, oldest first.
	Since(name string, t time.Time) ([]Sample, error)
}

// Series is the ring of one capability's recent samples. It is safe for
// concurrent use.
type Series struct {
	mu   sync.Mutex
	ring []Sample
	next int  // where the next sample goes
	full bool // the ring has wrapped
}

// NewSeries returns a series keeping the size latest samples (at least 1).
func NewSeries(size int) *Series {
	return &Series{ring: make([]Sample, max(size, 1))}
}

// Add records x unless it is the sample last recorded (the same sample
// time and quality: a value served again from the cache) or older than
// it. It reports whether x was recorded.
func (s *Series) Add(x Sample) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if last, ok := s.lastLocked(); ok {
		if x.Time.Before(last.Time) || (x.Time.Equal(last.Time) && x.Quality == last.Quality) {
			return false
		}
	}
	s.ring[s.next] = x
	s.next++
	if s.next == len(s.ring) {
		s.next, s.full = 0, true
	}
	return true
}

// Last returns the sample last recorded; false when there is none.
func (s *Series) Last() (Sample, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastLocked()
}

func (s *Series) lastLocked() (Sample, bool) {
	if !s.full && s.next == 0 {
		return Sample{}, false
	}
	i := s.next - 1
	if i < 0 {
		i = len(s.ring) - 1
	}
	return s.ring[i], true
}

// Since returns the samples at or after t, oldest first.
func (s *Series) Since(t time.Time) []Sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	var all []Sample
	if s.full {
		all = append(slices.Clone(s.ring[s.next:]), s.ring[:s.next]...)
	} else {
		all = slices.Clone(s.ring[:s.next])
	}
	i, _ := slices.BinarySearchFunc(all, t, func(x Sample, t time.Time) int { return x.Time.Compare(t) })
	return all[i:]
}

// Agg is how a bucket's samples become one value.
type Agg string

// The aggregates.
const (
	Mean Agg = "mean"
	Min  Agg = "min"
	Max  Agg = "max"
	Last Agg = "last"
)

// Aggs are the aggregates, as a template argument spells them.
var Aggs = []Agg{Mean, Min, Max, Last}

// Bucket is the aggregate of the samples in [Start, Start+step).
type Bucket struct {
	Start time.Time `json:"start"`
	// Value is the aggregate of the samples that carry a value (good,
	// stale or degraded); nil when every sample in the bucket is an error.
	Value any `json:"value"`
	// Quality is the worst quality in the bucket (good < stale < degraded
	// < error): a bucket with a bad sample says so.
	Quality promcp.Quality `json:"quality"`
	// Samples is how many samples the bucket holds.
	Samples int `json:"samples"`
	// Counts is the number of samples of each quality, present when a
	// sample is not good.
	Counts map[promcp.Quality]int `json:"quality_counts,omitempty"`

	acc float64 // the running sum, min or max of the numbers
	n   int     // how many numbers acc holds
}

// severity orders qualities from best to worst.
func severity(q promcp.Quality) int {
	switch q {
	case promcp.QualityGood:
		return 0
	case promcp.QualityStale:
		return 1
	case promcp.QualityDegraded:
		return 2
	}
	return 3
}

// Worst returns the worse of two qualities.
func Worst(a, b promcp.Quality) promcp.Quality {
	if severity(b) > severity(a) {
		return b
	}
	return a
}

// Aggregate buckets samples (oldest first) by step from since, and
// aggregates each non-empty bucket with agg. Mean, min and max need
// numbers: for other values use Last. Empty buckets are left out.
func Aggregate(samples []Sample, since time.Time, step time.Duration, agg Agg) ([]Bucket, error) {
	if step <= 0 {
		return nil, fmt.Errorf("step %s: want more than 0", step)
	}
	var out []Bucket
	for _, x := range samples {
		if x.Time.Before(since) {
			continue
		}
		start := since.Add(x.Time.Sub(since) / step * step)
		if len(out) == 0 || !out[len(out)-1].Start.Equal(start) {
			out = append(out, Bucket{Start: start, Quality: promcp.QualityGood})
		}
		b := &out[len(out)-1]
		if err := b.add(x, agg); err != nil {
			return nil, err
		}
	}
	for i := range out {
		out[i].finish(agg)
	}
	return out, nil
}

func (b *Bucket) add(x Sample, agg Agg) error {
	b.Samples++
	b.Quality = Worst(b.Quality, x.Quality)
	if b.Counts == nil {
		b.Counts = map[promcp.Quality]int{}
	}
	b.Counts[x.Quality]++
	if x.Quality == promcp.QualityError || x.Value == nil {
		return nil
	}
	if agg == Last {
		b.Value = x.Value
		return nil
	}
	v, ok := promcp.Number(x.Value)
	if !ok {
		return fmt.Errorf("agg %s needs numbers; this capability's values are %T (use agg=last)", agg, x.Value)
	}
	switch {
	case b.n == 0:
		b.acc = v
	case agg == Min:
		b.acc = math.Min(b.acc, v)
	case agg == Max:
		b.acc = math.Max(b.acc, v)
	default:
		b.acc += v
	}
	b.n++
	return nil
}

func (b *Bucket) finish(agg Agg) {
	switch {
	case agg == Last:
	case b.n > 0 && agg == Mean:
		b.Value = b.acc / float64(b.n)
	case b.n > 0:
		b.Value = b.acc
	}
	if b.Counts[promcp.QualityGood] == b.Samples {
		b.Counts = nil
	}
}
