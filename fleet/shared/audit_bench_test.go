package shared

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/promcp/promcp-device/audit"
)

// BenchmarkTailFleet measures reading FLEET_AUDIT (records per second)
// from a hub over loopback TCP: TailFleet, which pages through an
// ephemeral consumer, against one direct get per record (GetMsg, how it
// read before) in the same run, at 10, 100 and 5,000 records. The hub is
// one JetStream server in domain hub whose FLEET_AUDIT holds records as
// the hub's sourcing stores them (subject, message id, source header).
func BenchmarkTailFleet(b *testing.B) {
	ns := startBenchHub(b)
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	const stored = 5000
	fillAudit(b, nc, stored)
	for _, n := range []int{10, 100, stored} {
		for _, bc := range []struct {
			name string
			tail func(context.Context, *nats.Conn, int) ([]FleetRecord, error)
		}{
			{"one-get-per-record", tailOneByOne},
			{"paged", func(ctx context.Context, nc *nats.Conn, n int) ([]FleetRecord, error) {
				return tailFleet(ctx, nc, "", n, nil)
			}},
		} {
			b.Run(fmt.Sprintf("%s/%d", bc.name, n), func(b *testing.B) {
				read := 0
				for b.Loop() {
					ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
					recs, err := bc.tail(ctx, nc, n)
					cancel()
					if err != nil || len(recs) != n {
						b.Fatalf("%d records, %v; want %d", len(recs), err, n)
					}
					read += len(recs)
				}
				b.ReportMetric(float64(read)/b.Elapsed().Seconds(), "records/s")
			})
		}
	}
}

// startBenchHub is one JetStream server in domain hub on loopback.
func startBenchHub(b testing.TB) *natsserver.Server {
	ns, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: -1, JetStream: true,
		JetStreamDomain: DefaultHubDomain, StoreDir: b.TempDir(), NoLog: true, NoSigs: true})
	if err != nil {
		b.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		b.Fatal("hub not ready")
	}
	b.Cleanup(ns.Shutdown)
	return ns
}

// fillAudit stores n records of gateway gw1 in FLEET_AUDIT as the hub
// does: published to AUDIT_gw1, which FLEET_AUDIT sources.
func fillAudit(b testing.TB, nc *nats.Conn, n int) {
	fillAuditFrom(b, nc, map[string]int{"gw1": n})
}

// fillAuditFrom stores records in FLEET_AUDIT as the hub does, from
// streams AUDIT_<gw> with n[gw] records each (in name order); a stream
// named OTHER_<gw> publishes on gw's subject, as another gateway's
// stream would, whose records are not gw's.
func fillAuditFrom(b testing.TB, nc *nats.Conn, n map[string]int) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	js, err := jetstream.NewWithDomain(nc, DefaultHubDomain)
	if err != nil {
		b.Fatal(err)
	}
	names := slices.Sorted(maps.Keys(n))
	var sources []*jetstream.StreamSource
	total := 0
	for _, name := range names {
		gw := strings.TrimPrefix(strings.TrimPrefix(name, "OTHER_"), "AUDIT_")
		if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{auditSubject(gw)}, Storage: jetstream.FileStorage}); err != nil {
			b.Fatal(err)
		}
		sources = append(sources, &jetstream.StreamSource{Name: name})
		total += n[name]
	}
	fa, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: AuditStream, Storage: jetstream.FileStorage, Sources: sources})
	if err != nil {
		b.Fatal(err)
	}
	for _, name := range names {
		gw := strings.TrimPrefix(strings.TrimPrefix(name, "OTHER_"), "AUDIT_")
		for i := range n[name] {
			r := audit.Record{Seq: int64(i + 1), Time: time.Now().UTC(), Event: audit.EventResult, Tool: "do_valve", Key: fmt.Sprint(name, "-", i), Caller: "agent", Status: "ok"}
			data, _ := json.Marshal(r)
			if _, err := js.PublishAsync(auditSubject(gw), data, jetstream.WithMsgID(MsgID(gw, r))); err != nil {
				b.Fatal(err)
			}
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		b.Fatal(ctx.Err())
	}
	for {
		info, err := fa.Info(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if info.State.Msgs == uint64(total) {
			return
		}
		select { // the sources copy in the background
		case <-ctx.Done():
			b.Fatalf("FLEET_AUDIT holds %d of %d records: %v", info.State.Msgs, total, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// tailOneByOne is the tail as it read before it paged: one direct get
// (a request and its answer) per record.
func tailOneByOne(ctx context.Context, nc *nats.Conn, n int) ([]FleetRecord, error) {
	js, err := jetstream.NewWithDomain(nc, DefaultHubDomain)
	if err != nil {
		return nil, err
	}
	st, err := js.Stream(ctx, AuditStream)
	if err != nil {
		return nil, err
	}
	state := st.CachedInfo().State
	first := state.FirstSeq
	if n > 0 && state.LastSeq >= uint64(n) && state.LastSeq-uint64(n)+1 > first {
		first = state.LastSeq - uint64(n) + 1
	}
	var out []FleetRecord
	for seq := first; seq <= state.LastSeq && state.Msgs > 0; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return out, err
		}
		fr := FleetRecord{Gateway: strings.TrimPrefix(m.Subject, "promcp.audit."), Seq: seq}
		if err := json.Unmarshal(m.Data, &fr.Record); err != nil {
			return out, err
		}
		if ownRecord(fr.Gateway, m.Subject, m.Header) {
			out = append(out, fr)
		}
	}
	return out, nil
}
