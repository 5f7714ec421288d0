// Package waitgroup waits for a sync.WaitGroup under a context, as the
// shutdowns of the server (do_* calls in flight) and of the jobs engine
// (its runners) do.
package waitgroup

import (
	"context"
	"sync"
)

// Wait waits until wg's count is zero and returns nil, or returns
// ctx.Err() once ctx ends first (wg is then still waited for in the
// background, so wg must eventually reach zero).
func Wait(ctx context.Context, wg *sync.WaitGroup) error {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
