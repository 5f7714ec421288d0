// Package flight coalesces concurrent calls: callers that ask for the same
// key while a call is in flight wait for its outcome instead of starting
// another. It is the one single-flight of promcp-device (Modbus reads,
// serial-line instruments, capability samplers).
//
// Unlike golang.org/x/sync/singleflight, a call here runs under a context
// that ends only when every caller waiting for it has given up, so one
// impatient caller does not fail the others, and the call still stops once
// nobody wants its outcome.
package flight

import (
	"context"
	"sync"
)

// Group coalesces calls by key. The zero value is ready to use; a Group is
// safe for concurrent use and must not be copied after first use.
type Group[K comparable, V any] struct {
	mu    sync.Mutex
	calls map[K]*call[V]
}

type call[V any] struct {
	done    chan struct{}
	val     V
	err     error
	waiters int // guarded by Group.mu
	// cancel cancels the context fn runs under; nil when the first caller
	// cannot cancel, so that the call cannot lose all its callers.
	cancel context.CancelFunc
}

// Do runs fn once for all concurrent callers of key and returns its
// outcome. joined reports whether this caller waited for a call another
// caller started.
//
// The first caller runs fn on its own goroutine (no hand-off on the
// uncontended path), under a context that keeps ctx's values but not its
// cancellation or deadline; that context is cancelled once every caller
// waiting has given up, so the call is bounded by the latest of the
// callers' deadlines (and by whatever timeout fn applies itself). A caller
// whose ctx ends returns exactly ctx.Err(): a joined caller at once, the
// first caller when fn returns. A caller whose ctx is already done returns
// ctx.Err() without starting or joining a call.
//
// A first caller whose ctx can never end (its Done is nil, as with
// context.Background) never leaves, so the call can never lose all its
// callers: fn then runs under ctx itself, and nothing is derived or
// registered for it (no allocation on the uncontended path of a caller
// that cannot cancel).
func (g *Group[K, V]) Do(ctx context.Context, key K, fn func(ctx context.Context) (V, error)) (v V, err error, joined bool) {
	if err := ctx.Err(); err != nil {
		return v, err, false
	}
	g.mu.Lock()
	c, joined := g.calls[key]
	var cctx context.Context
	if !joined {
		if g.calls == nil {
			g.calls = map[K]*call[V]{}
		}
		c = &call[V]{done: make(chan struct{})}
		cctx = ctx
		if ctx.Done() != nil {
			cctx, c.cancel = context.WithCancel(context.WithoutCancel(ctx))
		}
		g.calls[key] = c
	}
	c.waiters++
	g.mu.Unlock()

	if joined {
		select {
		case <-c.done:
			return c.val, c.err, true
		case <-ctx.Done():
			g.leave(key, c)
			return v, ctx.Err(), true
		}
	}
	if c.cancel == nil { // this caller cannot leave: nothing to watch
		c.val, c.err = fn(cctx)
		g.finish(key, c)
		return c.val, c.err, false
	}
	stop := context.AfterFunc(ctx, func() { g.leave(key, c) })
	c.val, c.err = fn(cctx)
	g.finish(key, c)
	if !stop() { // this caller's ctx ended first
		return v, ctx.Err(), false
	}
	return c.val, c.err, false
}

// finish publishes c's outcome to its callers.
func (g *Group[K, V]) finish(key K, c *call[V]) {
	g.mu.Lock()
	if g.calls[key] == c {
		delete(g.calls, key)
	}
	g.mu.Unlock()
	if c.cancel != nil {
		c.cancel()
	}
	close(c.done)
}

// Forget detaches the call in flight for key, if any: its callers still get
// its outcome, but the next Do starts a new call.
func (g *Group[K, V]) Forget(key K) {
	g.mu.Lock()
	delete(g.calls, key)
	g.mu.Unlock()
}

// leave records that a caller no longer waits for c; the last one to leave
// cancels it, and the next caller starts afresh rather than join it.
func (g *Group[K, V]) leave(key K, c *call[V]) {
	g.mu.Lock()
	defer g.mu.Unlock()
	c.waiters--
	if c.waiters == 0 && c.cancel != nil {
		c.cancel()
		if g.calls[key] == c {
			delete(g.calls, key)
		}
	}
}
