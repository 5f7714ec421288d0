package fleet_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/promcp/promcp-device/fleet"
	"github.com/promcp/promcp-device/fleet/fleetsim"
	"github.com/promcp/promcp-device/fleet/natsembed"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/promcp"
	"github.com/promcp/promcp-device/server"
)

// plainCall is the routed call as the fleet sent it before the trust
// checks: the caller as the body says, no deadline, one shared subject.
type plainCall struct {
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Caller    server.Caller   `json:"caller"`
}

// servePlain answers subj as a gateway did before the trust checks:
// decode, run as the body's caller, answer.
func servePlain(b *testing.B, nc *nats.Conn, subj string, local fleet.Local) {
	svc, err := micro.AddService(nc, micro.Config{Name: "baseline", Version: "0.0.1"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { svc.Stop() })
	err = svc.AddEndpoint("call", micro.HandlerFunc(func(req micro.Request) {
		var c plainCall
		if err := json.Unmarshal(req.Data(), &c); err != nil {
			_ = req.Error("400", err.Error(), nil)
			return
		}
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res, err := local.Call(ctx, c.Caller, c.Tool, c.Arguments)
			if err != nil {
				_ = req.Error("500", err.Error(), nil)
				return
			}
			out, _ := json.Marshal(res)
			_ = req.Respond(out)
		}()
	}), micro.WithEndpointSubject(subj))
	if err != nil {
		b.Fatal(err)
	}
}

// plainRequest is the entry node's side of a call before the trust checks.
func plainRequest(ctx context.Context, nc *nats.Conn, subj, tool string, args json.RawMessage) error {
	data, _ := json.Marshal(plainCall{Tool: tool, Arguments: args, Caller: server.CallerFrom(ctx)})
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	msg, err := nc.RequestWithContext(ctx, subj, data)
	if err != nil {
		return err
	}
	var res mcp.CallToolResult
	return json.Unmarshal(msg.Data, &res)
}

// benchHub is one hub server with a coordinator connection and its view
// once n simulated gateways (gw000, …) joined.
func benchHub(b *testing.B, n int) (*nats.Conn, *fleet.View, []fleet.Local) {
	hub, err := natsembed.StartHub(natsembed.HubConfig{Name: "hub1", Client: "127.0.0.1:0", Leaf: "127.0.0.1:0", StoreDir: b.TempDir(),
		Ping: manifests.FleetPing{Interval: time.Second, MaxMissed: 2}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(hub.Shutdown)
	nc, err := natsembed.Connect(hub, "hub1", nats.CustomInboxPrefix(fleet.InboxPrefix("hub1")))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := fleet.SetupHub(ctx, nc, 1); err != nil {
		b.Fatal(err)
	}
	var locals []fleet.Local
	for i := range n {
		id := fmt.Sprintf("gw%03d", i)
		gnc, err := natsembed.Connect(hub, id, nats.CustomInboxPrefix(fleet.InboxPrefix(id)))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(gnc.Close)
		l := fleetsim.NewLocal()
		m, err := fleet.Join(ctx, gnc, fleet.MemberConfig{GatewayID: id, Zone: "hall", Profile: "full",
			Routes: map[string]string{"hub1": server.RoleOperator}}, l)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { m.Close() })
		servePlain(b, gnc, "bench.plain."+id, l)
		locals = append(locals, l)
	}
	v := fleet.Watch(nc, fleet.ViewConfig{Node: "hub1", Role: manifests.RoleHub})
	b.Cleanup(v.Close)
	eventually(b, 30*time.Second, "every gateway registered", func() bool { return len(v.Gateways()) == n })
	return nc, v, locals
}

// p50 is the median of lat, in ms.
func p50(lat []time.Duration) float64 {
	slices.Sort(lat)
	return float64(lat[len(lat)/2].Microseconds()) / 1000
}

// BenchmarkFleetRoutedDoTrust is a routed do_* to one gateway, alternating
// between the fleet's call (entry node from the subject, role capped by
// the route, deadline carried and checked) and the baseline in the same
// run: the same gateway, served as before the checks. It reports both
// p50s, the p50 added by the checks and their ratio.
func BenchmarkFleetRoutedDoTrust(b *testing.B) {
	nc, v, _ := benchHub(b, 1)
	ctx := server.WithCaller(context.Background(), server.Caller{Name: "sue", Role: server.RoleAdmin})
	args := json.RawMessage(`{"value":true,"idempotency_key":"k"}`)
	var checked, plain []time.Duration
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		if _, err := v.Call(ctx, "gw000", "do_set_fan", args, 10*time.Second); err != nil {
			b.Fatal(err)
		}
		checked = append(checked, time.Since(start))
		start = time.Now()
		if err := plainRequest(ctx, nc, "bench.plain.gw000", "do_set_fan", args); err != nil {
			b.Fatal(err)
		}
		plain = append(plain, time.Since(start))
	}
	b.StopTimer()
	c, p := p50(checked), p50(plain)
	b.ReportMetric(c, "p50-ms")
	b.ReportMetric(p, "baseline-p50-ms")
	b.ReportMetric(c-p, "added-p50-ms")
	b.ReportMetric(c/p, "ratio")
}

// BenchmarkFleetCanDoTrust is a fleet can_do's scatter-gather over 20
// simulated gateways: one request per gateway on its own subject, each
// answer keyed by its request (the fleet's), against the baseline in the
// same run: one request on one subject every gateway answers, each answer
// taken by the gateway its body names (as before the checks).
func BenchmarkFleetCanDoTrust(b *testing.B) {
	const n = 20
	nc, v, locals := benchHub(b, n)
	var targets []string
	for _, in := range v.Gateways() {
		targets = append(targets, in.GatewayID)
	}
	// The baseline's gateways: one shared subject, no queue group.
	for i, l := range locals {
		id := targets[i]
		sub, err := nc.Subscribe("bench.cando", func(m *nats.Msg) {
			go func() {
				res, _ := l.Call(context.Background(), server.Caller{}, "can_do", nil)
				rep, _ := json.Marshal(res.StructuredContent)
				out, _ := json.Marshal(map[string]any{"gateway_id": id, "report": json.RawMessage(rep)})
				_ = m.Respond(out)
			}()
		})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { sub.Unsubscribe() })
	}
	req := promcp.CanDoRequest{Intent: promcp.Intent{Action: "fan"}}
	ctx := context.Background()
	var checked, plain []time.Duration
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		if got := fleet.Scatter(ctx, v, req, targets); got != n {
			b.Fatalf("%d of %d answered", got, n)
		}
		checked = append(checked, time.Since(start))
		start = time.Now()
		if got := broadcast(b, nc, targets); got != n {
			b.Fatalf("baseline: %d of %d answered", got, n)
		}
		plain = append(plain, time.Since(start))
	}
	b.StopTimer()
	c, p := p50(checked), p50(plain)
	b.ReportMetric(c, "p50-ms")
	b.ReportMetric(p, "baseline-p50-ms")
	b.ReportMetric(c-p, "added-p50-ms")
	b.ReportMetric(c/p, "ratio")
}

// broadcast is the baseline's scatter-gather: one request, every answer
// decoded and taken by the gateway its body names.
func broadcast(b *testing.B, nc *nats.Conn, targets []string) int {
	inbox := nc.NewRespInbox()
	ch := make(chan *nats.Msg, len(targets)+8)
	sub, err := nc.ChanSubscribe(inbox, ch)
	if err != nil {
		b.Fatal(err)
	}
	defer sub.Unsubscribe()
	data, _ := json.Marshal(map[string]any{"query_id": "q", "targets": targets})
	if err := nc.PublishRequest("bench.cando", inbox, data); err != nil {
		b.Fatal(err)
	}
	seen := map[string]bool{}
	t := time.NewTimer(5 * time.Second)
	defer t.Stop()
	for len(seen) < len(targets) {
		select {
		case m := <-ch:
			var r struct {
				GatewayID string          `json:"gateway_id"`
				Report    json.RawMessage `json:"report"`
			}
			if json.Unmarshal(m.Data, &r) == nil && slices.Contains(targets, r.GatewayID) {
				seen[r.GatewayID] = true
			}
		case <-t.C:
			return len(seen)
		}
	}
	return len(seen)
}
