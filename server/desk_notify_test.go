package server_test

import (
	"testing"
	"time"

	"github.com/promcp/promcp-device/server"
)

// The desk tells its notifier of each request the moment it starts to
// wait, once (a repeated call adds none), and the request lapses on the
// approval ttl the policy sets for its tool; Request finds it by id.
func TestDeskTellsOfWaitingRequestsOnPolicyTTL(t *testing.T) {
	srv, desk, clk, _ := deskServer(t)
	var told []server.Request
	desk.SetApprovalTTL(func(tool string) time.Duration {
		if tool == "do_set_pump_speed" {
			return 3 * time.Minute
		}
		return 0
	})
	desk.OnWait(func(r server.Request) { told = append(told, r) })
	doAs(t, srv, agent, 90, "k1")
	doAs(t, srv, agent, 90, "k1") // the same call again
	if len(told) != 1 {
		t.Fatalf("told of %d requests, want 1", len(told))
	}
	r := told[0]
	if r.State != server.Waiting || r.Caller != agent || r.Value != 90.0 || r.Expires.Sub(r.Asked) != 3*time.Minute {
		t.Errorf("told %+v, want agent's waiting request lapsing 3 min after it was asked (the policy's ttl)", r)
	}
	if got, ok := desk.Request(r.ID); !ok || got.ID != r.ID {
		t.Errorf("Request(%s) = %+v, %v", r.ID, got, ok)
	}
	if _, err := desk.Decide(r.ID, sue, true); err != nil {
		t.Fatal(err)
	}
	if got, _ := desk.Request(r.ID); got.State != server.Approved || got.Expires.Sub(got.Decided) != 3*time.Minute {
		t.Errorf("approved request = %+v, want its approval usable for the policy's 3 min", got)
	}
	clk.Advance(4 * time.Minute)
	if _, ok := desk.Request(r.ID); ok {
		t.Error("the request outlived the policy's approval ttl")
	}
}
