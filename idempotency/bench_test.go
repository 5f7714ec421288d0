package idempotency_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/promcp/promcp-device/idempotency"
	"github.com/promcp/promcp-device/idempotency/boltstore"
)

// BenchmarkBolt measures durable Do calls with new keys (two fsync'd
// writes each: in flight, then done), one caller at a time and with
// concurrent callers sharing commits.
//
//	go test ./idempotency -run XXX -bench Bolt -benchtime 2000x
func BenchmarkBolt(b *testing.B) {
	act := func(context.Context, idempotency.Attempt) ([]byte, bool, error) {
		return []byte(`{"status":"success"}`), true, nil
	}
	for _, parallel := range []bool{false, true} {
		b.Run(fmt.Sprintf("parallel=%t", parallel), func(b *testing.B) {
			st, err := boltstore.OpenBolt(filepath.Join(b.TempDir(), "s.db"), time.Second, boltstore.BoltOptions{})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			var n atomic.Int64
			if !parallel {
				for b.Loop() {
					st.Do(context.Background(), fmt.Sprint(n.Add(1)), "fp", act)
				}
				return
			}
			b.SetParallelism(16)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					st.Do(context.Background(), fmt.Sprint(n.Add(1)), "fp", act)
				}
			})
		})
	}
}

// BenchmarkMemory measures the in-memory store (the default without
// --state): a new key per call, and a replay of a kept outcome.
//
//	go test ./idempotency -run '^$' -bench Memory -benchmem
func BenchmarkMemory(b *testing.B) {
	act := func(context.Context, idempotency.Attempt) ([]byte, bool, error) {
		return []byte(`{"status":"success"}`), true, nil
	}
	b.Run("new-key", func(b *testing.B) {
		st := idempotency.NewMemory(time.Hour, nil) // the system clock
		var n atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, _, err := st.Do(context.Background(), strconv.FormatInt(n.Add(1), 10), "fp", act); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
	b.Run("replay", func(b *testing.B) {
		st := idempotency.NewMemory(time.Hour, nil) // the system clock
		if _, _, err := st.Do(context.Background(), "k", "fp", act); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, replayed, err := st.Do(context.Background(), "k", "fp", act); err != nil || !replayed {
				b.Fatal(replayed, err)
			}
		}
	})
}
