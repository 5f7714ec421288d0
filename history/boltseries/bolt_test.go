package boltseries

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/promcp/promcp-device/history"
	"github.com/promcp/promcp-device/promcp"
)

var t0 = time.Date(2026, 3, 1, 6, 0, 0, 0, time.UTC)

// Samples survive a reopen with their types and qualities; those older
// than the retention are pruned, and a series never exceeds its maximum.
func TestRetentionBoundAndReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.db")
	retention := func(name string) time.Duration {
		if name == "count" {
			return time.Hour // bounded by the maximum only
		}
		return time.Minute
	}
	now := t0
	clock := func() time.Time { return now }
	s, err := Open(path, clock, retention)
	if err != nil {
		t.Fatal(err)
	}
	s.max = 100          // MaxSamples, made small
	for i := range 200 { // one a second for 200 s
		now = t0.Add(time.Duration(i) * time.Second)
		q := promcp.QualityGood
		var v any = float64(i)
		if i == 199 {
			q, v = promcp.QualityError, nil
		}
		if err := s.Append("temp", history.Sample{Time: now, Value: v, Quality: q}); err != nil {
			t.Fatal(err)
		}
		if err := s.Append("count", history.Sample{Time: now, Value: int64(i), Quality: promcp.QualityGood}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(path, clock, retention)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.Since("temp", t0)
	if err != nil {
		t.Fatal(err)
	}
	// Pruned at the 192nd append: older than 191 s − 60 s went.
	if len(got) == 0 || got[0].Time.Before(t0.Add(131*time.Second)) || len(got) > 100 {
		t.Fatalf("kept %d samples from %v, want at most 100, none before 131 s", len(got), got[0].Time)
	}
	lastT := got[len(got)-1]
	if lastT.Quality != promcp.QualityError || lastT.Value != nil || !lastT.Time.Equal(t0.Add(199*time.Second)) {
		t.Errorf("last sample = %+v, want the error at 199 s", lastT)
	}
	if got[0].Value != float64(got[0].Time.Sub(t0)/time.Second) {
		t.Errorf("first sample = %+v, want its second as a float64", got[0])
	}
	counts, err := s.Since("count", t0.Add(198*time.Second))
	if err != nil || len(counts) != 2 || counts[0].Value != int64(198) {
		t.Errorf("integer series = %+v, %v; want int64 198 and 199", counts, err)
	}
	all, _ := s.Since("count", t0)
	if len(all) < 100 || len(all) > 100+pruneEvery {
		t.Errorf("integer series kept %d samples, want 100 (MaxSamples) and at most %d appended since the last pruning", len(all), pruneEvery)
	}
	if none, err := s.Since("nothing", t0); err != nil || len(none) != 0 {
		t.Errorf("unknown series = %+v, %v", none, err)
	}
}
