package boltdb

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func TestOpenCreatesBuckets(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	db, err := Open(path, "test store", time.Second, []byte("a"), []byte("b"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.View(func(tx *bolt.Tx) error {
		for _, name := range []string{"a", "b"} {
			if tx.Bucket([]byte(name)) == nil {
				t.Errorf("bucket %q missing", name)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// An error names the store and the file.
func TestOpenErrorNamesStoreAndPath(t *testing.T) {
	dir := t.TempDir() // a directory is not a bbolt file
	_, err := Open(dir, "test store", time.Second)
	if err == nil || !strings.HasPrefix(err.Error(), "test store "+dir+": ") {
		t.Fatalf("Open(dir) = %v, want an error starting %q", err, "test store "+dir+": ")
	}
}

// Since walks a time-keyed bucket from an instant on, in time order;
// DeleteBefore drops what is older than a cut.
func TestTimeKeys(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "s.db"), "test store", time.Second, []byte("a"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	if err := db.Update(func(tx *bolt.Tx) error {
		for _, s := range []int{3, 1, 2, 0} {
			if err := tx.Bucket([]byte("a")).Put(TimeKey(at(s)), []byte{byte(s)}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	since := func(bucket string, from time.Time) []int {
		t.Helper()
		var got []int
		if err := Since(db, bucket, from, func(k time.Time, v []byte) error {
			if !k.Equal(at(int(v[0]))) {
				t.Errorf("entry %d keyed %v, want %v", v[0], k, at(int(v[0])))
			}
			got = append(got, int(v[0]))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := since("a", at(1)); !slices.Equal(got, []int{1, 2, 3}) {
		t.Errorf("Since(1s) = %v, want [1 2 3]", got)
	}
	if got := since("missing", t0); got != nil {
		t.Errorf("Since on a missing bucket = %v, want nothing", got)
	}
	if err := db.Update(func(tx *bolt.Tx) error { return DeleteBefore(tx.Bucket([]byte("a")), at(2)) }); err != nil {
		t.Fatal(err)
	}
	if got := since("a", t0); !slices.Equal(got, []int{2, 3}) {
		t.Errorf("after DeleteBefore(2s): %v, want [2 3]", got)
	}
}
