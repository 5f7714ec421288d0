package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"

	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/manifests"
)

// ViewConfig describes the node that watches the fleet.
type ViewConfig struct {
	// Node is this node's id: a gateway id or a hub member's name
	// (PhysMCP's coordinator_node).
	Node string
	// Role is the node's role, reported by mesh_status.
	Role manifests.FleetRole
	// Budget bounds a fleet can_do's fan-out; 0 means 500 ms.
	Budget time.Duration
	// LinkUp, when set, says whether this node's link to the hub is up
	// (an edge: its leaf server has a leaf connection). Without it the
	// hub is probed through JetStream.
	LinkUp func() bool
	// Poll is how often a gateway (any role but hub) reads the registry
	// and the heartbeats (1 s when 0); hub members watch them.
	Poll time.Duration
	// Follow, when not empty, is the gateways (ids) whose registry
	// entries and heartbeats a gateway's view reads, and all it holds: the
	// gateway itself and those it shares equipment with or routes to. The
	// reads then name these keys (subject filters), so what a gateway
	// holds and reads does not grow with the fleet. Empty: the whole
	// registry, as a hub member or a coordinator (a node serving the
	// fleet endpoint) needs it. A hub member ignores it.
	Follow []string
	Log    *slog.Logger
	// Clock stamps reports and ages the background figures (nil:
	// clock.System). Budgets and paces of NATS requests stay on real
	// time: the replies, pings and the servers' timeouts run on it.
	Clock clock.Clock
}

// View is a node's picture of the fleet: the registry, watched, and the
// fleet-wide operations any node may coordinate.
type View struct {
	cfg ViewConfig
	nc  *nats.Conn

	mu       sync.Mutex
	gateways map[string]Info
	onChange []func()

	late atomic.Int64 // answers that arrived after their budget, all queries

	peers background // PeerCount's figure
	hub   background // HubReachable's figure (1: reachable)
	bg    sync.WaitGroup

	ctx      context.Context // ends when the view closes
	stop     context.CancelFunc
	done     chan struct{}
	ready    chan struct{}
	readyOne sync.Once
}

// Watch starts watching the registry through nc (retried while the hub is
// unreachable) and returns at once.
func Watch(nc *nats.Conn, cfg ViewConfig) *View {
	if cfg.Budget <= 0 {
		cfg.Budget = manifests.DefaultCanDoBudget
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	cfg.Clock = clock.Or(cfg.Clock)
	ctx, cancel := context.WithCancel(context.Background())
	v := &View{cfg: cfg, nc: nc, gateways: map[string]Info{}, ctx: ctx, stop: cancel, done: make(chan struct{}), ready: make(chan struct{})}
	go v.watch(ctx)
	return v
}

// Close stops watching.
func (v *View) Close() {
	v.stop()
	<-v.done
	v.bg.Wait()
}

// Ready is closed once the registry has been read in full once.
func (v *View) Ready() <-chan struct{} { return v.ready }

// OnChange registers f, called (on the watcher's goroutine) after each
// change of the registry: a gateway joined, left or changed its tools.
func (v *View) OnChange(f func()) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.onChange = append(v.onChange, f)
}

// Gateways returns the registered gateways, by id order.
func (v *View) Gateways() []Info {
	v.mu.Lock()
	defer v.mu.Unlock()
	ids := slices.Sorted(maps.Keys(v.gateways))
	out := make([]Info, 0, len(ids))
	for _, id := range ids {
		out = append(out, v.gateways[id])
	}
	return out
}

// Gateway returns the registered gateway id.
func (v *View) Gateway(id string) (Info, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	in, ok := v.gateways[id]
	return in, ok
}

// Shares reports whether gateway gw registered owner as shared equipment
// it drives (its registry entry's Shared): the hubs' shared-state service
// lets it write owner's records then only.
func (v *View) Shares(gw, owner string) bool {
	in, ok := v.Gateway(gw)
	return ok && slices.Contains(in.Shared, owner)
}

// LateAnswers is how many can_do answers arrived after their budget (and
// were dropped), over every query this node coordinated.
func (v *View) LateAnswers() int64 { return v.late.Load() }

// watch follows the registry bucket, reopening the watch when it ends
// (the hub was unreachable, or restarted).
func (v *View) watch(ctx context.Context) {
	defer close(v.done)
	follow := v.watchOnce
	if v.cfg.Role != manifests.RoleHub {
		follow = v.pollOnce // gateways may create no consumers
	}
	for ctx.Err() == nil {
		err := follow(ctx)
		if ctx.Err() != nil {
			return
		}
		v.cfg.Log.Debug("fleet: registry watch ended; retrying", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second): // real time: a pause between NATS watches
		}
	}
}

// watchOnce follows the registry (manifests) and the alive bucket
// (heartbeats, headers only): the fleet is the registered gateways whose
// heartbeat is alive.
func (v *View) watchOnce(ctx context.Context) error {
	octx, cancel := context.WithTimeout(ctx, 2*time.Second)
	reg, err := registry(octx, v.nc)
	var alive jetstream.KeyValue
	if err == nil {
		alive, _, err = aliveBucket(octx, v.nc)
	}
	cancel()
	if err != nil {
		return err
	}
	rw, err := reg.WatchAll(ctx)
	if err != nil {
		return err
	}
	defer rw.Stop()
	aw, err := alive.WatchAll(ctx, jetstream.MetaOnly())
	if err != nil {
		return err
	}
	defer aw.Stop()
	r := &followed{bucket: RegistryBucket, initial: true}
	a := &followed{bucket: AliveBucket, initial: true}
	seen := map[string]Info{}
	beating := map[string]bool{}
	check := time.NewTicker(3 * time.Second) // real time: heartbeats expire on the hub's timers
	defer check.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-rw.Updates():
			if !ok {
				return errors.New("registry watch closed")
			}
			if r.next(e) {
				v.apply(seen, e.Key(), e.Operation(), e.Value())
			}
		case e, ok := <-aw.Updates():
			if !ok {
				return errors.New("alive watch closed")
			}
			if a.next(e) {
				id, ok := strings.CutPrefix(e.Key(), "gw.")
				if !ok {
					continue
				}
				was, now := beating[id], e.Operation() == jetstream.KeyValuePut
				beating[id] = now
				if was == now {
					continue // a heartbeat of a gateway already live: the fleet is the same
				}
			}
		case <-check.C:
			// A watch can stall when the hub member serving it goes away:
			// what the bucket held at the last check must have come since.
			if r.stalled(ctx, v.nc) || a.stalled(ctx, v.nc) {
				return errors.New("watch fell behind the bucket; reopening")
			}
			continue
		}
		if r.initial || a.initial {
			continue // the current values are not all in yet
		}
		v.replace(live(seen, beating))
		v.readyOne.Do(func() { close(v.ready) })
	}
}

// followed is one bucket's watch: where it stands.
type followed struct {
	bucket  string
	initial bool   // the current values are not all in yet
	last    uint64 // the bucket revision the watch has reached
	want    uint64 // the bucket's last revision at the previous check
}

// next records entry e (nil: the current values are all in) and says
// whether it is an entry.
func (f *followed) next(e jetstream.KeyValueEntry) bool {
	if e == nil {
		f.initial = false
		return false
	}
	f.last = max(f.last, e.Revision())
	return true
}

// stalled reports whether the watch has not reached the revision the
// bucket had at the previous check (a revision written since may still be
// on its way), and notes the bucket's last revision now.
func (f *followed) stalled(ctx context.Context, nc *nats.Conn) bool {
	if f.initial {
		return false
	}
	if f.want > f.last {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	js, err := jetstream.NewWithDomain(nc, HubDomain)
	if err != nil {
		return false
	}
	st, err := js.Stream(ctx, "KV_"+f.bucket)
	if err != nil {
		return false
	}
	f.want = st.CachedInfo().State.LastSeq
	return false
}

// live is the registered gateways whose heartbeat is alive.
func live(seen map[string]Info, beating map[string]bool) map[string]Info {
	out := make(map[string]Info, len(seen))
	for id, in := range seen {
		if beating[id] {
			out[id] = in
		}
	}
	return out
}

// apply records one registry change in seen: key's operation op with
// value.
func (v *View) apply(seen map[string]Info, key string, op jetstream.KeyValueOp, value []byte) {
	id, ok := strings.CutPrefix(key, "gw.")
	if !ok {
		v.cfg.Log.Warn("fleet: ignoring a registry key that names no gateway", "key", key)
		return
	}
	switch op {
	case jetstream.KeyValueDelete, jetstream.KeyValuePurge:
		delete(seen, id)
	default:
		var in Info
		if err := json.Unmarshal(value, &in); err != nil {
			v.cfg.Log.Warn("fleet: ignoring a bad registry entry", "key", key, "err", err)
			return
		}
		if in.GatewayID != id || !nodeRE.MatchString(id) {
			// Only gateway <id> may write its key (NATS's permissions):
			// an entry naming another gateway is not that gateway's.
			v.cfg.Log.Warn("fleet: ignoring a registry entry whose gateway is not the one its key names", "key", key, "claims", in.GatewayID)
			delete(seen, id)
			return
		}
		seen[id] = in
	}
}

// replace makes gateways the registry and tells the listeners when it
// changed.
func (v *View) replace(gateways map[string]Info) {
	v.mu.Lock()
	changed := !maps.EqualFunc(v.gateways, gateways, func(a, b Info) bool {
		return a.ManifestHash == b.ManifestHash && a.Zone == b.Zone && slices.Equal(a.Tags, b.Tags)
	})
	v.gateways = maps.Clone(gateways)
	fs := slices.Clone(v.onChange)
	v.mu.Unlock()
	if changed {
		for _, f := range fs {
			f()
		}
	}
}

// HubReachable says whether the hub answers: the edge's leaf link is up,
// and a JetStream call on the hub domain succeeded at the last probe. The
// probe runs in the background (every second, each bounded by the
// budget), never inside a request: only the first call, before any
// probe has finished, waits for one (at most until ctx ends).
func (v *View) HubReachable(ctx context.Context) bool {
	if v.cfg.LinkUp != nil && !v.cfg.LinkUp() {
		return false
	}
	return v.hub.get(ctx, v, v.probeHub) != 0
}

// probeHub is one probe of the hub: 1 when a JetStream call on the hub
// domain succeeds within the budget.
func (v *View) probeHub(ctx context.Context) int {
	ctx, cancel := context.WithTimeout(ctx, v.cfg.Budget)
	defer cancel()
	js, err := jetstream.NewWithDomain(v.nc, HubDomain)
	if err == nil {
		_, err = js.AccountInfo(ctx)
	}
	if err != nil {
		return 0
	}
	return 1
}

// background is a figure a view keeps up to date on its own goroutine
// while it is asked for: requests read it, never compute it.
type background struct {
	mu      sync.Mutex
	running bool
	fresh   chan struct{} // closed when the next figure is in
	val     int
	at      time.Time // when val was measured; zero: never
	asked   time.Time // the last get
}

const (
	// backgroundEvery is how often a background figure is measured again.
	backgroundEvery = time.Second
	// backgroundStale is the age after which a get waits for a new figure
	// (at most until its context ends) rather than answer with the last.
	backgroundStale = 10 * time.Second
	// backgroundIdle stops the measuring when no one has asked for this
	// long (a figure that costs a ping to every gateway is not kept
	// without use).
	backgroundIdle = time.Minute
)

// get returns the figure measure last gave, and (re)starts the measuring
// loop when it is not running. Only when there is no figure younger than
// backgroundStale does it wait for the next one, and then at most until
// ctx ends (returning the last figure, or 0).
func (b *background) get(ctx context.Context, v *View, measure func(context.Context) int) int {
	b.mu.Lock()
	now := v.cfg.Clock.Now()
	b.asked = now
	if !b.running && v.ctx.Err() == nil {
		b.running, b.fresh = true, make(chan struct{})
		v.bg.Add(1)
		go b.loop(v, measure)
	}
	if !b.at.IsZero() && now.Sub(b.at) < backgroundStale || !b.running {
		defer b.mu.Unlock()
		return b.val
	}
	fresh := b.fresh
	b.mu.Unlock()
	select {
	case <-fresh:
	case <-ctx.Done():
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.val
}

// loop measures every backgroundEvery until the view closes or no one
// has asked for backgroundIdle.
func (b *background) loop(v *View, measure func(context.Context) int) {
	defer v.bg.Done()
	t := time.NewTicker(backgroundEvery) // real time: paces NATS pings
	defer t.Stop()
	for {
		val := measure(v.ctx)
		b.mu.Lock()
		b.val, b.at = val, v.cfg.Clock.Now()
		close(b.fresh)
		b.fresh = make(chan struct{})
		idle := v.cfg.Clock.Now().Sub(b.asked) > backgroundIdle
		if idle || v.ctx.Err() != nil {
			b.running = false
		}
		b.mu.Unlock()
		if idle {
			return
		}
		select {
		case <-v.ctx.Done():
			b.mu.Lock()
			b.running = false
			b.mu.Unlock()
			return
		case <-t.C:
		}
	}
}

// Alive pings the registered gateways this view holds, each on its own
// subject (promcp.cando.<gw>.<node>, a ping that runs nothing), and
// returns those that answered within wait (it returns as soon as all
// did). An answer counts for the gateway whose request it answers: only
// that gateway may subscribe to its subject, so no node can answer for
// another.
func (v *View) Alive(ctx context.Context, wait time.Duration) map[string]bool {
	var ids []string
	for _, in := range v.Gateways() {
		ids = append(ids, in.GatewayID)
	}
	return v.ping(ctx, ids, wait)
}

// ping pings gateways ids as Alive does.
func (v *View) ping(ctx context.Context, ids []string, wait time.Duration) map[string]bool {
	alive := map[string]bool{}
	if len(ids) == 0 {
		return alive
	}
	// Real time: the deadline and the wait bound a NATS round trip.
	data, _ := json.Marshal(canDoRequest{Ping: true, Deadline: time.Now().Add(wait).UTC()})
	token := newRequestToken()
	ch := make(chan *nats.Msg, len(ids)+8)
	sub, err := v.nc.ChanSubscribe(InboxPrefix(v.cfg.Node)+".*."+token+".*", ch)
	if err != nil {
		return alive
	}
	defer sub.Unsubscribe()
	for i, id := range ids {
		if err := v.nc.PublishRequest(CanDoSubject(id, v.cfg.Node), scatterReply(v.cfg.Node, id, token, i), data); err != nil {
			return alive
		}
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	for answered := 0; answered < len(ids); {
		select {
		case m := <-ch:
			i, ok := scatterIndex(m.Subject, ids)
			if !ok || alive[ids[i]] {
				continue
			}
			answered++
			if m.Header.Get(micro.ErrorCodeHeader) == "" && m.Header.Get("Status") == "" {
				alive[ids[i]] = true
			}
		case <-t.C:
			return alive
		case <-ctx.Done():
			return alive
		}
	}
	return alive
}

// peerIDs are the gateways a peer count pings: those this view holds,
// or, for a gateway that follows only some (ViewConfig.Follow), every
// gateway whose heartbeat is alive, read (ids only, not held) from the
// alive bucket at each count.
func (v *View) peerIDs(ctx context.Context) []string {
	var ids []string
	if len(v.cfg.Follow) > 0 && v.cfg.Role != manifests.RoleHub {
		entries, err := lastPerKey(ctx, v.nc, AliveBucket, []string{"gw.*"})
		if err == nil {
			for _, e := range entries {
				if id, ok := strings.CutPrefix(e.key, "gw."); ok && e.op == jetstream.KeyValuePut && nodeRE.MatchString(id) {
					ids = append(ids, id)
				}
			}
			slices.Sort(ids)
			return ids
		}
		v.cfg.Log.Debug("fleet: reading the heartbeats for a peer count; counting the followed gateways", "err", err)
	}
	for _, in := range v.Gateways() {
		ids = append(ids, in.GatewayID)
	}
	return ids
}

// PeerCount is how many registered gateways answered the last ping (this
// one included when it is a registered gateway), at least 1: the peer
// count a policy's quorum.min_peers is held against. The pings run in the
// background (every second, each waiting at most the can_do budget), so
// a request that needs the count never waits on a silent gateway: only
// the first call, before any ping round has finished, waits for one (at
// most until ctx ends).
func (v *View) PeerCount(ctx context.Context) int {
	return max(v.peers.get(ctx, v, func(ctx context.Context) int {
		return len(v.ping(ctx, v.peerIDs(ctx), v.cfg.Budget))
	}), 1)
}
