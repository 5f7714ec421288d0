package shared

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestTailFleetPages: a tail that pages through a consumer reads what one
// direct get per record reads (the same records, in order, deleted ones
// and other gateways' streams' records skipped), for the whole stream and
// its last n, on either side of fewRecords; and leaves no consumer behind.
func TestTailFleetPages(t *testing.T) {
	ns := startBenchHub(t)
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	// 300 of gw1's records and 40 on gw3's subject from a stream that is
	// not AUDIT_gw3 (not gw3's).
	fillAuditFrom(t, nc, map[string]int{"AUDIT_gw1": 300, "OTHER_gw3": 40})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	js, err := jetstream.NewWithDomain(nc, DefaultHubDomain)
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(ctx, AuditStream)
	if err != nil {
		t.Fatal(err)
	}
	for _, seq := range []uint64{1, 7, 150, 339, 340} { // the first, some, the last two
		if err := st.DeleteMsg(ctx, seq); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []int{0, 5, fewRecords + 1, 100, 1000} {
		want, err := tailOneByOne(ctx, nc, n)
		if err != nil {
			t.Fatal(err)
		}
		got, err := TailFleet(ctx, nc, "", n)
		if err != nil {
			t.Fatalf("tail %d: %v", n, err)
		}
		if n == 0 && len(got) < 300-5 {
			t.Errorf("whole tail: %d of gw1's records, want at least 295 (300, 5 messages deleted)", len(got))
		}
		if !slices.EqualFunc(got, want, func(a, b FleetRecord) bool {
			return a.Gateway == b.Gateway && a.Seq == b.Seq && a.Record.Key == b.Record.Key
		}) {
			t.Errorf("tail %d: %d records (%v…), want %d (%v…) as one get per record reads them", n, len(got), head(got), len(want), head(want))
		}
		for _, r := range got {
			if r.Gateway != "gw1" {
				t.Fatalf("tail %d: a record of %s's subject not from AUDIT_%s: %+v", n, r.Gateway, r.Gateway, r)
			}
		}
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Consumers != 0 {
		t.Errorf("%d consumers left on %s after the tails", info.State.Consumers, AuditStream)
	}
}

func head(recs []FleetRecord) []uint64 {
	var seqs []uint64
	for _, r := range recs[:min(3, len(recs))] {
		seqs = append(seqs, r.Seq)
	}
	return seqs
}
