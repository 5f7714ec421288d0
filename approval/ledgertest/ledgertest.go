// Package ledgertest is the conformance suite every [approval.Ledger]
// passes: the memory ledger and the bbolt ledger run the same tests, and a
// new implementation calls [Run] from its own tests.
//
// Run checks what one-time approvals rely on: a grant is used once (a
// second Use is ErrUsed, also among concurrent callers), Used asks
// without using, and an expired grant's entry is dropped. What only a
// durable ledger does (surviving a restart) stays in that implementation's
// own tests.
package ledgertest

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/promcp/promcp-device/approval"
)

// Now is the time the suite uses grants around.
var Now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// Run runs the suite on ledgers that open returns: each empty, and closed
// when the test ends.
func Run(t *testing.T, open func(t *testing.T) approval.Ledger) {
	for name, test := range map[string]func(*testing.T, approval.Ledger){
		"UsedOnce": usedOnce, "ExpiredDropped": expiredDropped, "ConcurrentUseOnce": concurrentUseOnce,
	} {
		t.Run(name, func(t *testing.T) { test(t, open(t)) })
	}
}

func usedOnce(t *testing.T, l approval.Ledger) {
	g := approval.Grant{ID: "g1", Expires: Now.Add(10 * time.Minute)}
	if l.Used(g, Now) {
		t.Fatal("a fresh grant reads as used")
	}
	if l.Used(g, Now) {
		t.Fatal("Used marked the grant used")
	}
	if err := l.Use(g, Now); err != nil {
		t.Fatalf("first Use = %v", err)
	}
	if !l.Used(g, Now) {
		t.Fatal("a spent grant reads as unused")
	}
	if err := l.Use(g, Now.Add(time.Minute)); !errors.Is(err, approval.ErrUsed) {
		t.Fatalf("second Use = %v, want ErrUsed", err)
	}
	if other := (approval.Grant{ID: "g2", Expires: Now.Add(time.Minute)}); l.Used(other, Now) {
		t.Fatal("another grant reads as used")
	}
}

// expiredDropped: once a grant has expired, using another grant drops its
// entry, so the ledger stays bounded.
func expiredDropped(t *testing.T, l approval.Ledger) {
	g := approval.Grant{ID: "g1", Expires: Now.Add(10 * time.Minute)}
	if err := l.Use(g, Now); err != nil {
		t.Fatal(err)
	}
	if err := l.Use(approval.Grant{ID: "g2", Expires: Now.Add(time.Hour)}, Now.Add(11*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if l.Used(g, Now) {
		t.Fatal("an expired grant was kept")
	}
}

func concurrentUseOnce(t *testing.T, l approval.Ledger) {
	g := approval.Grant{ID: "g1", Expires: Now.Add(10 * time.Minute)}
	var ok, used atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			switch err := l.Use(g, Now); {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, approval.ErrUsed):
				used.Add(1)
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if ok.Load() != 1 || used.Load() != 7 {
		t.Fatalf("8 concurrent Use of one grant: %d succeeded, %d ErrUsed; want 1 and 7", ok.Load(), used.Load())
	}
}
