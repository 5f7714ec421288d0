package jobs_test

import (
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/promcp/promcp-device/jobs"
)

// TestBoltKeepsEndedJobsForTheirKeep: an ended job is kept for KeepEnded
// from when its end is recorded, then deleted from the file (at start-up,
// and when a later job ends); a running job is kept however old.
func TestBoltKeepsEndedJobsForTheirKeep(t *testing.T) {
	path := t.TempDir() + "/jobs.db"
	now := t0
	clk := func() time.Time { return now }
	open := func() *jobs.Bolt {
		b, err := jobs.OpenBoltWith(path, jobs.BoltOptions{KeepEnded: 7 * 24 * time.Hour, Now: clk})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	b := open()
	put := func(id string, state jobs.State) {
		j := hold("valve", true, false, time.Minute)
		j.ID, j.State, j.Finished = id, state, now
		if err := b.Put(j); err != nil {
			t.Fatal(err)
		}
	}
	put("old", jobs.Succeeded)
	put("running", jobs.Running)
	now = now.Add(3 * 24 * time.Hour)
	put("recent", jobs.Cancelled)
	b.Close()

	now = t0.Add(7*24*time.Hour - time.Second) // "old" is one second short of its keep
	b = open()
	if got := ids(t, b); got != "old recent running" {
		t.Fatalf("a moment before the keep: jobs %q, want old recent running", got)
	}
	b.Close()
	now = t0.Add(7 * 24 * time.Hour) // at start-up, past the keep of "old"
	b = open()
	if got := ids(t, b); got != "recent running" {
		t.Fatalf("at start-up past the keep of one: jobs %q, want recent running", got)
	}
	now = now.Add(4 * 24 * time.Hour) // past the keep of "recent": the next end recorded deletes it
	put("new", jobs.Failed)
	b.Close()
	if got := rawIDs(t, path); got != "new running" {
		t.Fatalf("the file after a job ended past another's keep: %q, want new running", got)
	}
}

// ids loads b's jobs and lists their ids.
func ids(t *testing.T, b *jobs.Bolt) string {
	t.Helper()
	all, err := b.Load()
	if err != nil {
		t.Fatal(err)
	}
	s := ""
	for _, j := range all {
		if s != "" {
			s += " "
		}
		s += j.ID
	}
	return s
}

// rawIDs lists the job records in the file itself.
func rawIDs(t *testing.T, path string) string {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s := ""
	db.View(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("jobs")).ForEach(func(k, _ []byte) error {
			if s != "" {
				s += " "
			}
			s += string(k)
			return nil
		})
	})
	return s
}

// TestOpenBoltRefusesANegativeKeep: the keep is checked at open.
func TestOpenBoltRefusesANegativeKeep(t *testing.T) {
	if _, err := jobs.OpenBoltWith(t.TempDir()+"/jobs.db", jobs.BoltOptions{KeepEnded: -time.Hour}); err == nil {
		t.Fatal("a negative keep: no error")
	}
}
