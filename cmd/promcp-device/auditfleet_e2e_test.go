//go:build !nofleet

package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/promcp/promcp-device/audit"
	"github.com/promcp/promcp-device/fleet/shared"
	"github.com/promcp/promcp-device/fleet/shared/sharedtest"
)

// TestAuditTailFleet: the binary's audit tail --fleet reads a gateway's
// forwarded records from the hub's FLEET_AUDIT, each led by its gateway.
func TestAuditTailFleet(t *testing.T) {
	t.Parallel()
	hub := sharedtest.StartHub(t)
	leaf := hub.StartLeaf("gw7")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := shared.Open(ctx, leaf.Conn(t), shared.Config{Gateway: "gw7", LocalDomain: "gw7"})
	if err != nil {
		t.Fatal(err)
	}
	fwd, err := st.Forwarder(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer fwd.Close(ctx)
	for i, ev := range []string{audit.EventAttempt, audit.EventResult} {
		r := audit.Record{Seq: int64(i + 1), Time: time.Now(), Event: ev, Tool: "do_valve", Key: "k-1", Caller: "agent", Status: "ok"}
		if err := fwd.Forward(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	nc := hub.Connect()
	if err := sharedtest.Poll(2*time.Minute, func(ctx context.Context) error {
		recs, err := shared.TailFleet(ctx, nc, "", 0)
		if err == nil && len(recs) < 2 {
			err = fmt.Errorf("%d records in FLEET_AUDIT", len(recs))
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLI(t, "audit", "tail", "--fleet", "--nats", hub.ClientURL(1), "-n", "5",
		"--identity", filepath.Join(hub.Dir(), "hub-1", "hub-1.nk"), "--ca", filepath.Join(hub.Dir(), "ca.crt"))
	if code != 0 {
		t.Fatalf("audit tail --fleet exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "gw7 ") || !strings.Contains(lines[1], "do_valve") || !strings.Contains(lines[1], "result") {
		t.Fatalf("audit tail --fleet printed:\n%s\nwant the two records of gw7", out)
	}
	if _, errOut, code := runCLI(t, "audit", "tail", "--fleet"); code != 2 || !strings.Contains(errOut, "--nats") {
		t.Fatalf("audit tail --fleet without --nats: exit %d, %q; want 2 naming --nats", code, errOut)
	}
}
