package audit_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/promcp/promcp-device/audit"
)

// BenchmarkAppend measures fsync'd appends, one caller at a time and with
// concurrent callers sharing fsyncs (group commit), with a plain and an
// HMAC-keyed chain.
//
//	go test ./audit -run XXX -bench Append -benchtime 2000x
func BenchmarkAppend(b *testing.B) {
	rec := audit.Record{Event: audit.EventResult, Caller: "alice", Role: "operator", Tool: "do_set_heater",
		Key: "k", Arguments: []byte(`{"value":true}`), Status: "success"}
	for _, tc := range []struct {
		parallel bool
		key      []byte
	}{{false, nil}, {true, nil}, {false, make([]byte, 32)}, {true, make([]byte, 32)}} {
		parallel := tc.parallel
		b.Run(fmt.Sprintf("parallel=%t/keyed=%t", parallel, tc.key != nil), func(b *testing.B) {
			l, err := audit.OpenWith(filepath.Join(b.TempDir(), "a.jsonl"), audit.Options{Key: tc.key})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			if !parallel {
				for b.Loop() {
					l.Append(context.Background(), rec)
				}
				return
			}
			b.SetParallelism(16)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					l.Append(context.Background(), rec)
				}
			})
		})
	}
}
