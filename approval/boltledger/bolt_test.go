package boltledger_test

import (
	"bytes"
	"errors"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/promcp/promcp-device/approval"
	"github.com/promcp/promcp-device/approval/boltledger"
	"github.com/promcp/promcp-device/approval/ledgertest"
)

var _ approval.Ledger = (*boltledger.BoltLedger)(nil)

// A spent approval stays spent when the ledger file is reopened (a gateway
// restart); an expired entry is dropped.
func TestBoltLedgerSurvivesReopen(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	path := filepath.Join(t.TempDir(), "approvals.db")
	l, err := boltledger.OpenBoltLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	g := approval.Grant{ID: "g1", Expires: now.Add(10 * time.Minute)}
	if l.Used(g, now) {
		t.Fatal("a fresh grant reads as used")
	}
	if err := l.Use(g, now); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, err = boltledger.OpenBoltLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if !l.Used(g, now) {
		t.Fatal("after reopening, a spent grant reads as unused")
	}
	if err := l.Use(g, now); !errors.Is(err, approval.ErrUsed) {
		t.Fatalf("after reopening, Use = %v, want ErrUsed", err)
	}
	// Another grant used after g expired drops g's entry.
	if err := l.Use(approval.Grant{ID: "g2", Expires: now.Add(time.Hour)}, now.Add(11*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if l.Used(g, now) {
		t.Fatal("an expired grant was kept")
	}
}

// The file keeps each spent grant's expiry as its Unix nanoseconds, 8
// bytes big-endian, under its ID in bucket "used": ledgers written before
// still read the same.
func TestBoltLedgerFileFormat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "approvals.db")
	l, err := boltledger.OpenBoltLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	if err := l.Use(approval.Grant{ID: "g1", Expires: now.Add(10 * time.Minute)}, now); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var got []byte
	if err := db.View(func(tx *bolt.Tx) error {
		got = append(got, tx.Bucket([]byte("used")).Get([]byte("g1"))...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// 2026-11-30T12:10:00Z is 1796040600000000000 ns.
	if want := []byte{0x18, 0xec, 0xd1, 0x68, 0xed, 0x2d, 0xf0, 0x00}; !bytes.Equal(got, want) {
		t.Fatalf("used/g1 = %x, want %x", got, want)
	}
}

func TestBoltLedger(t *testing.T) {
	ledgertest.Run(t, func(t *testing.T) approval.Ledger {
		l, err := boltledger.OpenBoltLedger(filepath.Join(t.TempDir(), "approvals.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	})
}
