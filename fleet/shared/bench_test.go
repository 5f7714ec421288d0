package shared_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/promcp/promcp-device/policy"
)

// BenchmarkCooldown measures one actuation's reservation cycle (Reserve,
// then Commit) on a shared cooldown: a gateway behind its leaf link
// compare-and-sets fleet_lease on the R3 hub (read from the leader, CAS
// the pending record, CAS the committed one), against the local reserver
// alone as the baseline, in the same run. It reports p50 and p99.
func BenchmarkCooldown(b *testing.B) {
	f := startFleet(b, 2*time.Second)
	g := f.gws[1]
	local := policy.NewLocalReserver(policy.NewMemoryState())
	for _, bc := range []struct {
		name   string
		res    policy.Reserver
		action string
	}{
		{"local", local, "do_local_bench"},
		{"shared-via-leaf", g.res, "do_shared_bench"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
			lat := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			for b.Loop() {
				c := claim(bc.action)
				c.Window = 0 // no cooldown: every cycle actuates; history is not read
				start := time.Now()
				res, d, err := bc.res.Reserve(ctx, c, cooldownDecide(c, 0))
				if err != nil || res == nil {
					b.Fatalf("%s (%s) %v", d.Permission, d.Reason, err)
				}
				if err := bc.res.Commit(ctx, res, time.Now(), true); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2])/1e3, "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100])/1e3, "p99-µs")
		})
	}
}
