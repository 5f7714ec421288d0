package boltledger_test

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

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
