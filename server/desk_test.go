package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/promcp"
	"github.com/promcp/promcp-device/server"
)

// deskServer serves do_set_pump_speed, which needs a human's approval
// above 80, with a desk; writes counts the actuations.
func deskServer(t *testing.T, opts ...server.Option) (*server.Server, *server.Desk, *clock.Manual, *int) {
	t.Helper()
	clk := clock.NewManual(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	desk := server.NewDesk(nil, 0)
	srv, err := server.New("pump", "1", append([]server.Option{server.WithClock(clk), server.WithDesk(desk)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	writes := 0
	err = srv.Do(server.DoTool{Name: "do_set_pump_speed", Description: "Set the pump speed.",
		Value: map[string]any{"type": "number"}, SideEffects: []string{"flow changes"}},
		func(ctx context.Context, req server.DoRequest) (promcp.DoResult, error) {
			if req.Value.(float64) > 80 && !req.Approved {
				return promcp.DoResult{Status: promcp.StatusFailed, Permission: promcp.RequiresHumanApproval,
					Reason: "above 80 % needs a human's approval"}, nil
			}
			mu.Lock()
			writes++
			mu.Unlock()
			return promcp.DoResult{Status: promcp.StatusSuccess, AppliedValue: req.Value}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	return srv, desk, clk, &writes
}

func doAs(t *testing.T, srv *server.Server, who server.Caller, value float64, key string) promcp.DoResult {
	t.Helper()
	var req mcp.CallToolRequest
	req.Params.Name = "do_set_pump_speed"
	req.Params.Arguments = map[string]any{"value": value, "idempotency_key": key}
	res, err := srv.MCP().GetTool("do_set_pump_speed").Handler(server.WithCaller(context.Background(), who), req)
	if err != nil {
		t.Fatal(err)
	}
	var out promcp.DoResult
	if err := json.Unmarshal([]byte(res.Content[0].(mcp.TextContent).Text), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

var (
	agent   = server.Caller{Name: "agent", Role: "operator"}
	mallory = server.Caller{Name: "mallory", Role: "operator"}
	sue     = server.Caller{Name: "sue", Role: "supervisor"}
)

// A call that needs approval waits on the desk; the approval a person
// gives there counts for that caller's same call only, once; nobody
// approves their own request.
func TestDeskApprovesTheSameCallOnly(t *testing.T) {
	srv, desk, _, writes := deskServer(t)
	r := doAs(t, srv, agent, 90, "k1")
	if r.Permission != promcp.RequiresHumanApproval || !strings.Contains(r.Reason, "operator console as request") {
		t.Fatalf("first call = %+v, want requires_human_approval waiting in the console", r)
	}
	reqs := desk.Requests()
	if len(reqs) != 1 || reqs[0].Caller != agent || reqs[0].Tool != "do_set_pump_speed" || reqs[0].Value != 90.0 ||
		reqs[0].Key != "k1" || reqs[0].State != server.Waiting || reqs[0].SideEffects[0] != "flow changes" || reqs[0].Reason != "above 80 % needs a human's approval" {
		t.Fatalf("desk = %+v, want the agent's waiting request with its value, key, reason and side effects", reqs)
	}
	id := reqs[0].ID
	if _, err := desk.Decide(id, agent, true); !errors.Is(err, server.ErrOwnRequest) {
		t.Fatalf("the agent deciding its own request: %v, want ErrOwnRequest", err)
	}
	if _, err := desk.Decide("nope", sue, true); !errors.Is(err, server.ErrNoRequest) {
		t.Fatalf("deciding an unknown request: %v, want ErrNoRequest", err)
	}
	if got, err := desk.Decide(id, sue, true); err != nil || got.State != server.Approved || got.DecidedBy != sue {
		t.Fatalf("sue approving: %+v, %v", got, err)
	}
	if _, err := desk.Decide(id, sue, false); !errors.Is(err, server.ErrDecided) {
		t.Fatalf("deciding twice: %v, want ErrDecided", err)
	}
	// Another caller with the same arguments and key, and the agent with
	// another value, are not approved.
	if r := doAs(t, srv, mallory, 90, "k1"); r.Status != promcp.StatusFailed || r.Permission != promcp.RequiresHumanApproval {
		t.Fatalf("mallory's same call = %+v, want requires_human_approval (the approval is the agent's)", r)
	}
	if r := doAs(t, srv, agent, 95, "k1b"); r.Status != promcp.StatusFailed {
		t.Fatalf("the agent's call with another value = %+v, want refused", r)
	}
	if *writes != 0 {
		t.Fatalf("%d writes before the approved call", *writes)
	}
	if r := doAs(t, srv, agent, 90, "k1"); r.Status != promcp.StatusSuccess || *writes != 1 {
		t.Fatalf("the agent's approved call = %+v (writes %d), want success, one write", r, *writes)
	}
	if r := doAs(t, srv, agent, 90, "k1"); r.Status != promcp.StatusSuccess || !r.Replayed || *writes != 1 {
		t.Fatalf("the same call again = %+v (writes %d), want the replay, no second write", r, *writes)
	}
	for _, q := range desk.Requests() {
		if q.ID == id && q.State != server.Used {
			t.Errorf("request after the call ran: %s, want used", q.State)
		}
	}
}

// A denied request stays denied and the agent is told so; requests lapse
// after the desk's TTL; the desk holds at most DeskMax.
func TestDeskDeniesExpiresAndIsBounded(t *testing.T) {
	srv, desk, clk, writes := deskServer(t)
	doAs(t, srv, agent, 90, "k1")
	id := desk.Requests()[0].ID
	if _, err := desk.Decide(id, sue, false); err != nil {
		t.Fatal(err)
	}
	if r := doAs(t, srv, agent, 90, "k1"); r.Status != promcp.StatusFailed || !strings.Contains(r.Reason, "sue denied this request") || *writes != 0 {
		t.Fatalf("after the denial = %+v (writes %d), want refused saying sue denied it", r, *writes)
	}
	clk.Advance(11 * time.Minute)
	if n := len(desk.Requests()); n != 0 {
		t.Fatalf("%d requests 11 minutes later, want none (they lapse after 10 minutes)", n)
	}
	doAs(t, srv, mallory, 90, "m1")
	for i := range server.DeskMax + 20 {
		doAs(t, srv, agent, 90, fmt.Sprintf("flood-%d", i))
	}
	reqs := desk.Requests()
	if len(reqs) != server.DeskPerCaller+1 || reqs[0].Key != fmt.Sprintf("flood-%d", server.DeskMax+19) || reqs[len(reqs)-1].Key != "m1" {
		t.Fatalf("after mallory's request and %d of the agent's the desk holds %d (newest %q, oldest %q), want the agent's last %d and mallory's",
			server.DeskMax+20, len(reqs), reqs[0].Key, reqs[len(reqs)-1].Key, server.DeskPerCaller)
	}
	for i := range server.DeskMax {
		doAs(t, srv, server.Caller{Name: fmt.Sprintf("c%d", i), Role: "operator"}, 90, "k")
	}
	if n := len(desk.Requests()); n != server.DeskMax {
		t.Fatalf("the desk holds %d requests, want at most %d", n, server.DeskMax)
	}
}
