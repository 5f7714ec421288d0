package fleet_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/promcp/promcp-device/fleet"
	"github.com/promcp/promcp-device/fleet/fleetsim"
	"github.com/promcp/promcp-device/fleet/natsembed"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/promcp"
)

// BenchmarkFleetCanDo100 is a fleet can_do over 100 simulated gateways in
// one process (one hub server, each gateway on its own connection): the
// coordinator's fan-out, gather and merge against the 500 ms budget.
func BenchmarkFleetCanDo100(b *testing.B) {
	const gateways = 100
	hub, err := natsembed.StartHub(natsembed.HubConfig{Name: "hub1", Client: "127.0.0.1:0", Leaf: "127.0.0.1:0", StoreDir: b.TempDir(),
		Ping: manifests.FleetPing{Interval: time.Second, MaxMissed: 2}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(hub.Shutdown)
	nc, err := natsembed.Connect(hub, "coordinator")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := fleet.SetupHub(ctx, nc, 1); err != nil {
		b.Fatal(err)
	}
	for i := range gateways {
		gnc, err := natsembed.Connect(hub, fmt.Sprintf("gw%d", i))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(gnc.Close)
		m, err := fleet.Join(ctx, gnc, fleet.MemberConfig{GatewayID: fmt.Sprintf("gw%03d", i), Zone: "hall", Profile: "full"}, fleetsim.NewLocal())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { m.Close() })
	}
	v := fleet.Watch(nc, fleet.ViewConfig{Node: "hub1", Role: manifests.RoleHub})
	b.Cleanup(v.Close)
	eventually(b, 30*time.Second, "100 gateways registered", func() bool { return len(v.Gateways()) == gateways })
	req := promcp.CanDoRequest{Intent: promcp.Intent{Action: "fan"}}
	var lat []time.Duration
	short := 0
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		rep := v.CanDo(ctx, req, "")
		lat = append(lat, time.Since(start))
		if rep.Metadata.ResponsesReceived != gateways {
			short++
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-ms")
	b.ReportMetric(float64(short), "short-answers")
}
