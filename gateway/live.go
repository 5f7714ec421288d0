package gateway

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/promcp/promcp-device/capabilities"
	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/history"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/promcp"
	"github.com/promcp/promcp-device/server"
)

// LiveOptions configure the resources ServeLive registers.
type LiveOptions struct {
	// Gateway is the gateway id in the resource URIs
	// (promcp://<gateway>/capabilities/<name>); "" takes it from the
	// capabilities' source.
	Gateway string
	// Store keeps the history on disk (boltseries under --state); nil
	// keeps the ring in memory only.
	Store history.Store
}

// Resource URI forms; %s are the gateway id and the capability name.
const (
	capabilityURI = "promcp://%s/capabilities/%s"
	historyURI    = "promcp://%s/history/{capability}{?since,step,agg}"
)

// Defaults of a history query.
const (
	// DefaultHistorySince is how far back a query without since looks.
	DefaultHistorySince = time.Hour
	// MaxHistoryBuckets bounds the buckets one query returns.
	MaxHistoryBuckets = 1000
	// DiskEvery is the closest two samples of one capability are written
	// to disk (a change of quality always is).
	DiskEvery = time.Second
)

// live is a gateway's resources: each capability as a subscribable
// resource, and its history.
type live struct {
	g     *Gateway
	opts  LiveOptions
	clock clock.Clock
	byCap map[*capabilities.Capability]*observed
	names map[string]*observed

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// observed is one capability's resource: its subscription's sampling and
// throttle, and its history.
type observed struct {
	l      *live
	c      *capabilities.Capability
	uri    string
	series *history.Series

	mu   sync.Mutex
	stop context.CancelFunc // the running watch; nil when nobody subscribes
	done chan struct{}
	last *promcp.ReadResult // the last update sent
	sent []time.Time        // when the updates of the last rate period were sent

	diskAt      time.Time      // when the last sample written to disk was taken
	diskQuality promcp.Quality // its quality
}

// ServeLive registers each capability as an MCP resource
// (promcp://<gateway>/capabilities/<name>, its body the read_* contract
// body) that clients may subscribe to, and the history template
// promcp://<gateway>/history/{capability}{?since,step,agg}. The server
// must be made with server.WithResources. A subscribed capability is
// sampled through the usual read path (cache, single flight) on the
// server's clock; updates are sent on a change beyond its observe
// deadband, at most at its observe max_rate, and on every change of
// quality. Every sample the gateway takes (reads, subscriptions, the
// background sampling of history.every) is kept in the capability's
// history. CloseLive stops the sampling.
func (g *Gateway) ServeLive(opts LiveOptions) error {
	if g.live != nil {
		return errors.New("ServeLive: already serving")
	}
	l := &live{g: g, opts: opts, clock: g.srv.Clock(), byCap: map[*capabilities.Capability]*observed{}, names: map[string]*observed{}}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	for _, c := range g.set.All() {
		if l.opts.Gateway == "" {
			l.opts.Gateway, _, _ = strings.Cut(c.Source, "/")
		}
		o := &observed{l: l, c: c, series: history.NewSeries(c.History.RingSize())}
		l.byCap[c], l.names[c.Name] = o, o
	}
	for _, c := range g.set.All() {
		o := l.byCap[c]
		o.uri = fmt.Sprintf(capabilityURI, l.opts.Gateway, c.Name)
		if err := g.srv.Resource(server.Resource{URI: o.uri, Name: c.Name, Title: title(c.Name),
			Description: fmt.Sprintf("Live %s: the read_* body {value, unit, timestamp, quality} of %s. Subscribe for updates (on %s, at most %s, and on every change of quality).",
				strings.ReplaceAll(c.Name, "_", " "), c.ReadTool(), deadbandText(c), rateText(c.Observe.Rate())),
			Read: o.read, Watch: o.watch}); err != nil {
			return fmt.Errorf("capability %s: %w", c.Name, err)
		}
	}
	if err := g.srv.ResourceTemplate(server.ResourceTemplate{URITemplate: fmt.Sprintf(historyURI, l.opts.Gateway), Name: "history",
		Title:       "Capability history",
		Description: "Recent samples of a capability, with quality. since: an RFC 3339 time or a duration back from now (default 1h); step: a duration bucketing the samples (without it, the samples themselves); agg: mean, min, max or last (default mean for numbers, last otherwise). A bucket's quality is the worst of its samples, with the count of each quality when one is not good.",
		Read:        l.history}); err != nil {
		return err
	}
	g.live = l
	for _, o := range l.byCap {
		if every := o.c.History.Every; every > 0 {
			l.wg.Add(1)
			go func() {
				defer l.wg.Done()
				o.sample(l.ctx, every, nil)
			}()
		}
	}
	return nil
}

// CloseLive stops the sampling of subscriptions and history, and waits for
// it.
func (g *Gateway) CloseLive() {
	if l := g.live; l != nil {
		l.cancel()
		for _, o := range l.byCap {
			o.watch(false)
		}
		l.wg.Wait()
	}
}

// record keeps r in c's history (and on disk), unless it is the sample
// last kept. A stale reading keeps its last good value's sample time; it
// is recorded at the time it was observed.
func (l *live) record(c *capabilities.Capability, r capabilities.Reading) {
	o := l.byCap[c]
	if o == nil {
		return
	}
	x := history.Sample{Time: r.Time, Value: r.Value, Quality: r.Quality}
	last, had := o.series.Last()
	if r.Quality == promcp.QualityStale {
		// The same stale value, read again within the TTL, is one sample:
		// a caller polling a failing sensor does not fill the ring.
		x.Time = l.clock.Now()
		if had && last.Quality == x.Quality && last.Value == x.Value && x.Time.Sub(last.Time) < c.TTL() {
			return
		}
	}
	if r.Quality == promcp.QualityError {
		x.Value = nil
	}
	if x.Time.IsZero() || !o.series.Add(x) || l.opts.Store == nil {
		return
	}
	// On disk, at most one sample per DiskEvery, and every change of
	// quality: forced reads (max_age_ms 0) do not wear the SD card.
	o.mu.Lock()
	keep := !had || x.Quality != o.diskQuality || x.Time.Sub(o.diskAt) >= DiskEvery
	if keep {
		o.diskAt, o.diskQuality = x.Time, x.Quality
	}
	o.mu.Unlock()
	if !keep {
		return
	}
	if err := l.opts.Store.Append(c.Name, x); err != nil {
		l.g.srv.Logger().Error("history not kept on disk", "capability", c.Name, "err", err)
	}
}

// body is the read_* contract body of r, as the read tool answers it.
func body(c *capabilities.Capability, r capabilities.Reading, now time.Time) promcp.ReadResult {
	res := readResult(c, r)
	if res.Timestamp.IsZero() {
		res.Timestamp = now
	}
	res.Timestamp = res.Timestamp.UTC()
	return res
}

// read answers resources/read: a read through the cache, as read_* does.
func (o *observed) read(ctx context.Context) (any, error) {
	r := o.c.Read(ctx)
	o.l.record(o.c, r)
	return body(o.c, r, o.l.clock.Now()), nil
}

// watch starts (on) or stops the sampling of a subscribed capability;
// stopping waits until the sampling has ended, so that nothing is sent
// once it returns.
func (o *observed) watch(on bool) {
	o.mu.Lock()
	stop, done := o.stop, o.done
	o.stop, o.done = nil, nil
	o.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
	if !on || o.l.ctx.Err() != nil {
		return
	}
	ctx, cancel := context.WithCancel(o.l.ctx)
	done = make(chan struct{})
	o.mu.Lock()
	o.stop, o.done, o.last, o.sent = cancel, done, nil, nil
	o.mu.Unlock()
	every := o.c.Observe.Every
	if every <= 0 {
		every = o.c.TTL()
	}
	go func() {
		defer close(done)
		o.sample(ctx, every, o.offer)
	}()
}

// sample reads the capability every interval (through the cache: a
// sample younger than every is served again) until ctx ends, keeps each
// sample in the history, and passes its body to then.
func (o *observed) sample(ctx context.Context, every time.Duration, then func(promcp.ReadResult)) {
	for {
		r := o.c.ReadWithin(ctx, every)
		if ctx.Err() != nil {
			return
		}
		o.l.record(o.c, r)
		if then != nil {
			then(body(o.c, r, o.l.clock.Now()))
		}
		if clock.Sleep(ctx, o.l.clock, every) != nil {
			return
		}
	}
}

// offer sends res to the subscribers when it is the first since they
// subscribed, when its quality differs from the last sent (always), or
// when its value moved beyond the deadband from the last sent and the
// rate allows.
func (o *observed) offer(res promcp.ReadResult) {
	now := o.l.clock.Now()
	rate := o.c.Observe.Rate()
	o.mu.Lock()
	kept := o.sent[:0]
	for _, t := range o.sent {
		if now.Sub(t) < rate.Per {
			kept = append(kept, t)
		}
	}
	o.sent = kept
	var send bool
	switch {
	case o.last == nil, res.Quality != o.last.Quality:
		send = true
	case len(o.sent) < rate.Max:
		send = moved(o.last.Value, res.Value, o.c.Observe.Deadband)
	}
	if send {
		o.last = &res
		o.sent = append(o.sent, now)
	}
	o.mu.Unlock()
	if send {
		o.l.g.srv.Notify(o.uri, res)
	}
}

// moved reports whether b differs from a by more than deadband (numbers),
// or at all (other values).
func moved(a, b any, deadband float64) bool {
	if _, d, ok := apart(a, b); ok {
		if deadband == 0 {
			return d != 0
		}
		return d > deadband
	}
	return a != b
}

func deadbandText(c *capabilities.Capability) string {
	if c.Observe.Deadband == 0 {
		return "any change"
	}
	return fmt.Sprintf("a change of more than %g %s", c.Observe.Deadband, c.Unit)
}

func rateText(r manifests.RateLimit) string {
	return fmt.Sprintf("%d per %s", r.Max, r.Per)
}

// apart returns a as a float64 and how far b is from it, when both are
// numbers (promcp.Number); ok is false otherwise.
func apart(a, b any) (fa, d float64, ok bool) {
	fa, oka := promcp.Number(a)
	fb, okb := promcp.Number(b)
	return fa, math.Abs(fb - fa), oka && okb
}
