package gateway_test

// The model test's seams (TestModel, model_test.go): how one gateway
// process is built on the model's state directory, and the wrappers that
// record, fail (a full disk) and kill (a crash) what it writes. Everything
// the model knows of the gateway's internals is in this file, so that a
// change of the stores' interfaces is adapted here only:
//
//   - idempotency.Store: Begin is wrapped (recorded; refused while the disk
//     is full or the process is dead);
//   - server.Auditor: Append is recorded and refused alike (it never
//     blocks: the server appends under its backlog's lock);
//   - the server's logger: the "dead-man revert" line (after the revert
//     committed, before its timer is disarmed) may pause, bounded, for the
//     renewal race (modelEnv.pause) or in a storm of reverts;
//   - gateway.JobStore (jobs.Bolt): every write refused alike;
//   - policy.State (boltstate): an actuation recorded while the disk is
//     full is kept in this process's memory only, as BoltState does when
//     its write fails;
//   - the GPIO pins: every Out is recorded, checked for its attempt record
//     and refused under an injected bus fault or once the process is dead.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	pgpio "periph.io/x/conn/v3/gpio"

	"github.com/promcp/promcp-device/audit"
	"github.com/promcp/promcp-device/capabilities"
	"github.com/promcp/promcp-device/gateway"
	"github.com/promcp/promcp-device/gateway/gatewaytest"
	"github.com/promcp/promcp-device/idempotency"
	"github.com/promcp/promcp-device/idempotency/boltstore"
	"github.com/promcp/promcp-device/jobs"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/policy"
	"github.com/promcp/promcp-device/policy/boltstate"
	"github.com/promcp/promcp-device/server"
)

var (
	errDiskFull = errors.New("model: no space left on device")
	errDead     = errors.New("model: the process was killed")
	errBusFault = errors.New("model: bus fault: the write did not reach the relay")
)

// modelProc is one gateway process on the model's state directory.
type modelProc struct {
	n      int // 1 for the first process, +1 per restart
	dead   atomic.Bool
	killed chan struct{} // closed by kill
	set    *capabilities.Set
	srv    *server.Server
	g      *gateway.Gateway
	c      *client.Client
	idem   *boltstore.Bolt
	state  *boltstate.BoltState
	jobs   *jobs.Bolt
	log    *audit.Log
}

// startProc starts a gateway process on env's world and state directory.
func startProc(t *testing.T, env *modelEnv, n int) *modelProc {
	t.Helper()
	p := &modelProc{n: n, killed: make(chan struct{})}
	dir := env.dir
	var err error
	if p.idem, err = boltstore.OpenBolt(filepath.Join(dir, "idempotency.db"), time.Second, boltstore.BoltOptions{Clock: env.clk}); err != nil {
		t.Fatal(err)
	}
	if p.state, err = boltstate.OpenBoltState(filepath.Join(dir, "policy.db"), nil); err != nil {
		t.Fatal(err)
	}
	if p.jobs, err = jobs.OpenBolt(filepath.Join(dir, "jobs.db")); err != nil {
		t.Fatal(err)
	}
	if p.log, err = audit.Open(filepath.Join(dir, "audit.jsonl")); err != nil {
		t.Fatal(err)
	}
	hw := capabilities.HardwareFuncs{Pin: func(ctx context.Context, d manifests.Device) (pgpio.PinIO, error) {
		pin, err := env.w.Pin(ctx, d.Pin)
		if err != nil {
			return nil, err
		}
		return &modelPin{PinIO: pin, env: env, p: p, dev: d.Name}, nil
	}}
	env.rec.opening.Store(true)
	p.set, err = capabilities.Open(t.Context(), env.m, hw, capabilities.Options{Clock: env.clk})
	env.rec.opening.Store(false)
	if err != nil {
		t.Fatal(err)
	}
	p.srv, err = server.New("model", "test", server.WithClock(env.clk),
		server.WithStore(&modelIdem{Bolt: p.idem, env: env, p: p}, p.idem.TTL()),
		server.WithAuditor(&modelAudit{log: p.log, env: env, p: p}),
		server.WithLogger(slog.New(&modelLog{env: env, p: p})))
	if err != nil {
		t.Fatal(err)
	}
	p.g, err = gateway.Serve(p.srv, p.set, gateway.GatewayOptions{Policy: env.pol, Jobs: env.m.Jobs,
		State:    &modelState{BoltState: p.state, mem: policy.NewMemoryState(), env: env, p: p},
		JobStore: &modelJobs{Bolt: p.jobs, env: env, p: p}})
	if err != nil {
		t.Fatal(err)
	}
	p.c = gatewaytest.Connect(t, p.srv)
	return p
}

// kill stops p as kill -9 would: from now on nothing it does reaches the
// relays or the disk. Its goroutines are then stopped (what they still try
// fails) and its files closed, so that the next process can open them.
func (p *modelProc) kill(t *testing.T) {
	t.Helper()
	p.dead.Store(true)
	close(p.killed)
	_ = p.c.Close()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), time.Minute)
	defer cancel()
	_ = p.g.Close(ctx) // its compensations fail: the process is dead
	p.set.Close()
	for _, err := range []error{p.idem.Close(), p.state.Close(), p.jobs.Close(), p.log.Close()} {
		if err != nil {
			t.Fatalf("closing the killed process's files: %v", err)
		}
	}
}

// modelIdem is the process's idempotency store: Begin is recorded, and
// fails while the disk is full.
type modelIdem struct {
	*boltstore.Bolt
	env *modelEnv
	p   *modelProc
}

func (s *modelIdem) Do(ctx context.Context, key, fp string, act idempotency.Action) ([]byte, bool, error) {
	return s.Bolt.Do(ctx, key, fp, func(ctx context.Context, a idempotency.Attempt) ([]byte, bool, error) {
		b := idempotency.BeginWith(func(ctx context.Context) error {
			var err error
			switch {
			case s.p.dead.Load():
				err = errDead
			case s.env.full.Load():
				err = errDiskFull
			default:
				err = a.Begin(ctx)
			}
			s.env.rec.add(modelEvent{Kind: evBegin, Key: key, OK: err == nil})
			return err
		})
		b.Recovering, b.Started = a.Recovering, a.Started
		return act(ctx, b)
	})
}

// modelAudit is the process's audit log: every Append is recorded, and
// fails while the disk is full.
type modelAudit struct {
	log *audit.Log
	env *modelEnv
	p   *modelProc
}

func (a *modelAudit) Append(ctx context.Context, r audit.Record) error {
	var err error
	switch {
	case a.p.dead.Load():
		err = errDead
	case a.env.full.Load():
		err = errDiskFull
	default:
		err = a.log.Append(ctx, r)
	}
	a.env.rec.add(modelEvent{Kind: evAudit, Tool: r.Tool, Event: r.Event, Key: r.Key, Status: r.Status, Reason: r.Reason, OK: err == nil})
	// Nothing here may block: the server appends under its backlog's lock
	// (server/actuate.go), so a record held here would hold every other
	// caller's attempt record too. The revert is held after its record,
	// outside that lock, in modelLog.
	return err
}

// modelLog is the server's logger: it holds the gateway's "dead-man
// revert" line (gateway.noteRevert, written after the revert committed
// and its audit record was appended, before DeadMan.fire disarms its
// timer) for the renewal race (modelPause) and in a storm of reverts.
// It holds no lock of the gateway's while it waits.
type modelLog struct {
	env *modelEnv
	p   *modelProc
}

func (h *modelLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *modelLog) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *modelLog) WithGroup(string) slog.Handler            { return h }

func (h *modelLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "dead-man revert" {
		return nil
	}
	tool := ""
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "tool" {
			tool = a.Value.String()
			return false
		}
		return true
	})
	if h.env.rec.noted(tool) {
		// A revert noted again and again: held (see modelPin.Out).
		select {
		case <-h.p.killed:
			return nil
		case <-h.env.rec.healing():
		}
	}
	h.env.pause.at(tool, h.p.killed)
	return nil
}

// modelJobs is the process's job and timer store: writes fail while the
// disk is full.
type modelJobs struct {
	*jobs.Bolt
	env *modelEnv
	p   *modelProc
}

func (s *modelJobs) refuse() error {
	switch {
	case s.p.dead.Load():
		return errDead
	case s.env.full.Load():
		return errDiskFull
	}
	return nil
}

func (s *modelJobs) Put(j jobs.Job) error {
	if err := s.refuse(); err != nil {
		return err
	}
	return s.Bolt.Put(j)
}

func (s *modelJobs) PutTimer(tm jobs.Timer) error {
	if err := s.refuse(); err != nil {
		return err
	}
	return s.Bolt.PutTimer(tm)
}

func (s *modelJobs) DeleteTimer(tool string) error {
	if err := s.refuse(); err != nil {
		return err
	}
	return s.Bolt.DeleteTimer(tool)
}

// modelState is the process's actuation history: while the disk is full
// an actuation is kept in this process's memory only (what BoltState does
// when its write fails), so a restart forgets it.
type modelState struct {
	*boltstate.BoltState
	mem *policy.MemoryState
	env *modelEnv
	p   *modelProc
}

func (s *modelState) History(action string, since time.Time) []time.Time {
	return append(s.BoltState.History(action, since), s.mem.History(action, since)...)
}

// HistoryErr implements policy.FallibleState (the reserver asks it, not
// History): the durable history and this process's memory.
func (s *modelState) HistoryErr(action string, since time.Time) ([]time.Time, error) {
	out, err := s.BoltState.HistoryErr(action, since)
	return append(out, s.mem.History(action, since)...), err
}

func (s *modelState) Record(action string, at time.Time) {
	switch {
	case s.p.dead.Load():
	case s.env.full.Load():
		s.mem.Record(action, at)
		s.env.rec.add(modelEvent{Kind: evUnrecordedHistory, Tool: action})
	default:
		s.BoltState.Record(action, at)
	}
}

// modelPin is a relay's pin as the process drives it: every Out is
// recorded and checked (modelRecorder.write).
type modelPin struct {
	pgpio.PinIO
	env *modelEnv
	p   *modelProc
	dev string
}

func (pin *modelPin) Out(l pgpio.Level) error {
	if pin.p.dead.Load() {
		return errDead
	}
	on := bool(l) // the model's relays are active high
	if pin.env.rec.opening.Load() {
		pin.env.rec.add(modelEvent{Kind: evOpen, Dev: pin.dev, Value: on, OK: true})
		return pin.PinIO.Out(l)
	}
	if pin.env.faulty(pin.dev) {
		pin.env.rec.write(pin.dev, on, false)
		return fmt.Errorf("%s: %w", pin.dev, errBusFault)
	}
	if storm := pin.env.rec.write(pin.dev, on, true); storm {
		// A relay written over and over at one instant: a loop that would
		// spin for ever. It is held here (and reported) until the driver
		// gives the disk room again, or the process is killed.
		select {
		case <-pin.p.killed:
			return errDead
		case <-pin.env.rec.healing():
		}
	}
	return pin.PinIO.Out(l)
}

// modelPause holds a dead-man revert's audit record (written after the
// revert and before its timer is cleaned up) until the model has made a
// renewal: the renewal race of issue 23, made deterministic.
type modelPause struct {
	mu      sync.Mutex
	tool    string        // the tool whose revert record pauses; "" none
	paused  chan struct{} // closed when a revert record pauses
	release chan struct{} // closed to let it go on
	late    atomic.Bool   // a pause ran out its bound: nothing released it
}

func (p *modelPause) arm(tool string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tool, p.paused, p.release = tool, make(chan struct{}), make(chan struct{})
}

// modelPauseBound bounds a pause: in the synctest bubble fake time only
// moves when every goroutine is blocked, so a pause that nothing releases
// (the driver is itself waiting on the paused revert) lets go after it
// instead of hanging the test; the driver then sees the pause released
// late (modelPause.late) and reports it.
const modelPauseBound = time.Hour

// at pauses, if armed for tool, until released, the process is killed or
// modelPauseBound passes.
func (p *modelPause) at(tool string, killed <-chan struct{}) {
	p.mu.Lock()
	if p.tool == "" || p.tool != tool {
		p.mu.Unlock()
		return
	}
	p.tool = ""
	paused, release := p.paused, p.release
	p.mu.Unlock()
	close(paused)
	select {
	case <-release:
	case <-killed:
	case <-time.After(modelPauseBound):
		p.late.Store(true)
	}
}

// disarm forgets an armed pause that did not happen, and lets go of one
// that did; it reports whether one did.
func (p *modelPause) disarm() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tool = ""
	if p.paused == nil {
		return false
	}
	select {
	case <-p.paused:
		close(p.release)
		p.paused = nil
		return true
	default:
		p.paused = nil
		return false
	}
}

func (p *modelPause) isPaused() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused == nil {
		return false
	}
	select {
	case <-p.paused:
		return true
	default:
		return false
	}
}
