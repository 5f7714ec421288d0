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
	"time"
)

// Group coalesces calls by key. The zero value is ready to use; a Group is
// safe for concurrent use and must not be copied after first use.
type Group[K comparable, V any] struct {
	mu sync.Mutex
	// first is a call in flight, under firstKey, kept out of calls: with one
	// call at a time (a sampler's, a Modbus unit's usual traffic) no map
	// is touched and no key hashed. Every key in flight is in first or in
	// calls, never in both.
	first    *call[V]
	firstKey K
	calls    map[K]*call[V]
	// spare is a finished call that no other caller saw (nobody joined it,
	// nobody could leave it): the next call reuses it instead of
	// allocating one.
	spare *call[V]
}

// lookup returns the call in flight for key, or nil; g.mu is held.
func (g *Group[K, V]) lookup(key K) *call[V] {
	if g.first != nil && g.firstKey == key {
		return g.first
	}
	return g.calls[key] // a nil map reads as empty
}

// add records c as the call in flight for key, which has none; g.mu is
// held.
func (g *Group[K, V]) add(key K, c *call[V]) {
	if g.first == nil {
		g.first, g.firstKey = c, key
		return
	}
	if g.calls == nil {
		g.calls = map[K]*call[V]{}
	}
	g.calls[key] = c
}

// remove drops c as the call in flight for key, if it still is; g.mu is
// held.
func (g *Group[K, V]) remove(key K, c *call[V]) {
	if g.first == c {
		var zero K
		g.first, g.firstKey = nil, zero
		return
	}
	if g.calls[key] == c {
		delete(g.calls, key)
	}
}

type call[V any] struct {
	// done is closed when fn has returned; made by the first caller to
	// join (guarded by Group.mu), so that an uncontended call has none.
	done    chan struct{}
	val     V
	err     error
	waiters int // guarded by Group.mu
	// run is the context fn runs under (&rc, allocated with the call); nil
	// when the first caller cannot cancel, so that the call cannot lose
	// all its callers.
	run *runCtx
	rc  runCtx
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
// that cannot cancel). Otherwise the first caller is watched with Watch,
// which costs nothing more when ctx is itself a call's (nested groups).
func (g *Group[K, V]) Do(ctx context.Context, key K, fn func(ctx context.Context) (V, error)) (v V, err error, joined bool) {
	if err := ctx.Err(); err != nil {
		return v, err, false
	}
	g.mu.Lock()
	c := g.lookup(key)
	joined = c != nil
	if !joined {
		c = g.newCall(ctx)
		g.add(key, c)
	}
	c.waiters++
	if joined && c.done == nil {
		c.done = make(chan struct{})
	}
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
	if c.run == nil { // this caller cannot leave: nothing to watch
		v, err = fn(ctx)
		c.val, c.err = v, err
		g.finish(key, c) // c may be reused from here on
		return v, err, false
	}
	w := Watch(ctx, func() { g.leave(key, c) })
	c.val, c.err = fn(c.run)
	g.finish(key, c)
	if !w.Stop() { // this caller's ctx ended first
		return v, ctx.Err(), false
	}
	return c.val, c.err, false
}

// finish publishes c's outcome to its callers. A caller can join c only
// while it is in g.calls, so one that joined made c.done before this
// looks.
//
// A call that nobody joined and that runs under its first caller's own
// context (run nil: nobody can leave it) is referenced by its first caller
// alone once it is out of g: it becomes g's spare, zeroed, and the caller
// must not look at it again.
func (g *Group[K, V]) finish(key K, c *call[V]) {
	g.mu.Lock()
	g.remove(key, c)
	done := c.done
	if done == nil && c.run == nil {
		*c = call[V]{}
		g.spare = c
		g.mu.Unlock()
		return
	}
	g.mu.Unlock()
	if c.run != nil {
		c.run.cancel()
	}
	if done != nil {
		close(done)
	}
}

// Forget detaches the call in flight for key, if any: its callers still get
// its outcome, but the next Do starts a new call.
func (g *Group[K, V]) Forget(key K) {
	g.mu.Lock()
	if c := g.lookup(key); c != nil {
		g.remove(key, c)
	}
	g.mu.Unlock()
}

// newCall returns a call for a first caller with ctx: g's spare if it has
// one; g.mu is held.
func (g *Group[K, V]) newCall(ctx context.Context) *call[V] {
	c := g.spare
	if c != nil {
		g.spare = nil
	} else {
		c = &call[V]{}
	}
	if cancellable(ctx) {
		c.run = &c.rc
		c.rc.values = context.WithoutCancel(ctx)
	}
	return c
}

// leave records that a caller no longer waits for c; the last one to leave
// cancels it, and the next caller starts afresh rather than join it. The
// cancelling is done after g.mu is released: it runs c's context's watcher
// (see Watch), which may be another call's leave.
func (g *Group[K, V]) leave(key K, c *call[V]) {
	g.mu.Lock()
	c.waiters--
	last := c.waiters == 0 && c.run != nil
	if last {
		g.remove(key, c)
	}
	g.mu.Unlock()
	if last {
		c.run.cancel()
	}
}

// cancellable reports whether ctx can end, without making a cancellable
// context's Done channel where nothing else needs it.
func cancellable(ctx context.Context) bool {
	if _, ok := ctx.(*runCtx); ok {
		return true
	}
	return ctx.Done() != nil
}

// runCtx is the context a call runs under when its first caller can
// cancel: the first caller's values, no deadline, cancelled when every
// caller has left (or fn has returned). It is a context of its own rather
// than context.WithCancel's, which cost two more allocations and a
// cancellation per call: its Done channel is made only when asked for
// (a bus transaction does not ask), and it has one slot for a function to
// run when it is cancelled (Watch), so that the usual single watcher — a
// nested group's first caller, a bus transaction's abort — costs no
// allocation. Contexts derived from it register with AfterFunc (the
// context package's afterFuncer), so none costs a goroutine.
type runCtx struct {
	values context.Context // context.WithoutCancel(first caller's ctx)

	mu        sync.Mutex
	done      chan struct{} // made by the first Done; closed when cancelled
	cancelled bool
	watcher   func()           // run when cancelled unless stopped first
	afters    map[*func()]bool // AfterFunc's, run when cancelled unless stopped
}

// Deadline: a call has none of its own (see Do).
func (r *runCtx) Deadline() (time.Time, bool) { return time.Time{}, false }

// Done returns a channel closed when the call is cancelled.
func (r *runCtx) Done() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done == nil {
		r.done = make(chan struct{})
		if r.cancelled {
			close(r.done)
		}
	}
	return r.done
}

// Err returns context.Canceled once the call is cancelled, nil before.
func (r *runCtx) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cancelled {
		return context.Canceled
	}
	return nil
}

// Value returns the first caller's value for key.
func (r *runCtx) Value(key any) any { return r.values.Value(key) }

// AfterFunc arranges for f to run once r is cancelled (at once, on its own
// goroutine, if it is already), as the context package expects of a
// parent that is not one of its own contexts. stop reports whether it
// stopped f from running. f runs on the goroutine that cancels r: the
// context package passes the cancelling of a derived context, which does
// not block.
func (r *runCtx) AfterFunc(f func()) (stop func() bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cancelled {
		go f()
		return func() bool { return false }
	}
	key := &f
	if r.afters == nil {
		r.afters = map[*func()]bool{}
	}
	r.afters[key] = true
	return func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		pending := r.afters[key]
		delete(r.afters, key)
		return pending
	}
}

// cancel cancels r and then runs its watcher and AfterFunc functions, if
// any, on this goroutine.
func (r *runCtx) cancel() {
	r.mu.Lock()
	if r.cancelled {
		r.mu.Unlock()
		return
	}
	r.cancelled = true
	if r.done != nil {
		close(r.done)
	}
	f, afters := r.watcher, r.afters
	r.watcher, r.afters = nil, nil
	r.mu.Unlock()
	if f != nil {
		f()
	}
	for a := range afters {
		(*a)()
	}
}

// A Watcher is what Watch returns.
type Watcher struct {
	r    *runCtx
	stop func() bool
	ran  bool
}

// Watch arranges for f to run once ctx is done, as context.AfterFunc does.
// When ctx is the context a Group call runs under (what Do passes to fn)
// and nothing else watches it, this costs no allocation, and f runs on the
// goroutine that cancels the call (the last caller leaving), so it must
// not block; otherwise Watch is context.AfterFunc, and for a ctx that can
// never end (Done nil) it does nothing.
func Watch(ctx context.Context, f func()) Watcher {
	r, ok := ctx.(*runCtx)
	if !ok {
		if ctx.Done() == nil {
			return Watcher{}
		}
		return Watcher{stop: context.AfterFunc(ctx, f)}
	}
	r.mu.Lock()
	switch {
	case r.cancelled:
		r.mu.Unlock()
		f()
		return Watcher{ran: true}
	case r.watcher == nil:
		r.watcher = f
		r.mu.Unlock()
		return Watcher{r: r}
	}
	r.mu.Unlock()
	return Watcher{stop: context.AfterFunc(ctx, f)}
}

// Stop stops f from running. It reports whether it did: false when f has
// run or has been started (ctx ended first).
func (w Watcher) Stop() bool {
	switch {
	case w.ran:
		return false
	case w.stop != nil:
		return w.stop()
	case w.r != nil:
		w.r.mu.Lock()
		defer w.r.mu.Unlock()
		if w.r.cancelled {
			return false
		}
		w.r.watcher = nil
		return true
	}
	return true
}
