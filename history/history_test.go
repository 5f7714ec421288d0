package history

import (
	"testing"
	"time"

	"github.com/promcp/promcp-device/promcp"
)

var t0 = time.Date(2026, 3, 1, 6, 0, 0, 0, time.UTC)

func at(s int, v any, q promcp.Quality) Sample {
	return Sample{Time: t0.Add(time.Duration(s) * time.Second), Value: v, Quality: q}
}

// The ring keeps the latest samples, oldest first, and skips a sample
// served again from the cache (same time and quality) or older than the
// last.
func TestSeriesRingAndDuplicates(t *testing.T) {
	s := NewSeries(3)
	for i := range 5 {
		if !s.Add(at(i, float64(i), promcp.QualityGood)) {
			t.Fatalf("sample %d not added", i)
		}
	}
	if s.Add(at(4, 4.0, promcp.QualityGood)) || s.Add(at(1, 9.0, promcp.QualityGood)) {
		t.Error("a repeated or older sample was added")
	}
	if !s.Add(at(4, 4.0, promcp.QualityDegraded)) {
		t.Error("the same time with another quality was not added")
	}
	got := s.Since(t0)
	if len(got) != 3 || got[0].Value != 3.0 || got[1].Value != 4.0 || got[2].Quality != promcp.QualityDegraded {
		t.Fatalf("ring = %+v, want samples 3, 4, 4 degraded", got)
	}
	if got := s.Since(t0.Add(4 * time.Second)); len(got) != 2 {
		t.Errorf("since 4s = %+v, want 2 samples", got)
	}
}

// Buckets aggregate the values of good, stale and degraded samples; an
// error sample has none but counts, and sets the bucket's quality.
func TestAggregateWorstQualityAndCounts(t *testing.T) {
	samples := []Sample{
		at(0, 1.0, promcp.QualityGood), at(1, 3.0, promcp.QualityGood),
		at(10, 5.0, promcp.QualityStale), at(11, nil, promcp.QualityError),
		at(20, nil, promcp.QualityError),
	}
	got, err := Aggregate(samples, t0, 10*time.Second, Mean)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("buckets = %+v, want 3", got)
	}
	if got[0].Value != 2.0 || got[0].Quality != promcp.QualityGood || got[0].Counts != nil || got[0].Samples != 2 {
		t.Errorf("bucket 0 = %+v, want mean 2, good, no counts", got[0])
	}
	if got[1].Value != 5.0 || got[1].Quality != promcp.QualityError || got[1].Counts[promcp.QualityStale] != 1 || got[1].Counts[promcp.QualityError] != 1 {
		t.Errorf("bucket 1 = %+v, want 5 (the stale value), quality error, 1 stale 1 error", got[1])
	}
	if got[2].Value != nil || got[2].Quality != promcp.QualityError {
		t.Errorf("bucket 2 = %+v, want no value, error", got[2])
	}
	if _, err := Aggregate([]Sample{at(0, true, promcp.QualityGood)}, t0, time.Second, Max); err == nil {
		t.Error("max of booleans: no error")
	}
	last, err := Aggregate([]Sample{at(0, true, promcp.QualityGood), at(1, false, promcp.QualityGood)}, t0, time.Minute, Last)
	if err != nil || len(last) != 1 || last[0].Value != false {
		t.Errorf("last of booleans = %+v, %v; want false", last, err)
	}
}
