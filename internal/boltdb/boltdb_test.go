package boltdb

import (
	"path/filepath"
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
