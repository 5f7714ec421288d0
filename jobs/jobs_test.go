package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/jobs"
)

var t0 = time.Date(2026, 7, 1, 6, 0, 0, 0, time.UTC)

// plant is a set of actuators: the values they hold and every write, in order.
type plant struct {
	mu     sync.Mutex
	held   map[string]any
	writes []string
	fail   map[string]bool // capabilities whose writes fail
}

func newPlant() *plant { return &plant{held: map[string]any{}, fail: map[string]bool{}} }

func (p *plant) act(_ context.Context, _ jobs.Job, _, c string, v any) (any, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fail[c] {
		return nil, fmt.Errorf("%s: refused", c)
	}
	p.held[c] = v
	p.writes = append(p.writes, fmt.Sprintf("%s=%v", c, v))
	return v, nil
}

func (p *plant) value(c string) any {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held[c]
}

// memStore is a durable store kept in memory, shared across engines as a
// file would be across restarts.
type memStore struct {
	mu   sync.Mutex
	jobs map[string]jobs.Job
}

func (m *memStore) Put(j jobs.Job) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.jobs == nil {
		m.jobs = map[string]jobs.Job{}
	}
	m.jobs[j.ID] = j
	return nil
}

func (m *memStore) Load() ([]jobs.Job, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []jobs.Job
	for _, j := range m.jobs {
		out = append(out, j)
	}
	return out, nil
}

// hold is the plan of "hold c at v for d, then restore prev".
func hold(c string, v, prev any, d time.Duration) jobs.Job {
	return jobs.Job{Name: "hold_" + c, Steps: []jobs.Step{
		{Capability: c, Value: v, Hold: d, Compensate: prev, HasCompensation: true},
		{Capability: c, Value: prev},
	}}
}

// waiting waits until n goroutines wait on clk, for 10 s at most.
func waiting(t *testing.T, clk *clock.Manual, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := clk.WaitFor(ctx, n); err != nil {
		t.Fatal(err)
	}
}

func waitDone(t *testing.T, e *jobs.Engine, id string) jobs.Job {
	t.Helper()
	select {
	case <-e.Done(id):
	case <-time.After(time.Minute):
		t.Fatalf("job %s did not end", id)
	}
	j, err := e.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func TestHoldRunsOnTheClockThenRestores(t *testing.T) {
	clk, p := clock.NewManual(t0), newPlant()
	e := jobs.New(jobs.Options{Clock: clk, Act: p.act})
	defer e.Close(context.Background())
	j, err := e.Start(context.Background(), hold("valve", true, false, 15*time.Minute))
	if err != nil || j.State != jobs.Running || p.value("valve") != true {
		t.Fatalf("Start = %+v, %v; valve %v", j, err, p.value("valve"))
	}
	if eta := j.ETA(); !eta.Equal(t0.Add(15 * time.Minute)) {
		t.Errorf("ETA %v, want %v", eta, t0.Add(15*time.Minute))
	}
	waiting(t, clk, 1)
	clk.Advance(5 * time.Minute)
	if got, _ := e.Get(j.ID); got.State != jobs.Running || fmt.Sprintf("%.3f", got.Progress(clk.Now())) != "0.333" {
		t.Fatalf("after 5 min: %s, progress %.3f", got.State, got.Progress(clk.Now()))
	}
	waiting(t, clk, 1)
	clk.Advance(10 * time.Minute)
	got := waitDone(t, e, j.ID)
	if got.State != jobs.Succeeded || p.value("valve") != false || got.Progress(clk.Now()) != 1 {
		t.Fatalf("after 15 min: %+v, valve %v", got, p.value("valve"))
	}
	if fmt.Sprint(p.writes) != "[valve=true valve=false]" {
		t.Errorf("writes %v", p.writes)
	}
}

func TestCancelRunsCompensation(t *testing.T) {
	clk, p := clock.NewManual(t0), newPlant()
	e := jobs.New(jobs.Options{Clock: clk, Act: p.act})
	defer e.Close(context.Background())
	j, _ := e.Start(context.Background(), hold("valve", true, false, time.Minute))
	got, err := e.Cancel(context.Background(), j.ID, "asked")
	if err != nil || got.State != jobs.Cancelled || p.value("valve") != false {
		t.Fatalf("Cancel = %+v, %v; valve %v", got, err, p.value("valve"))
	}
	if last := got.Applied[len(got.Applied)-1]; !last.Compensation || last.Value != false {
		t.Errorf("last applied %+v, want the compensation", last)
	}
	if _, err := e.Cancel(context.Background(), j.ID, "again"); !errors.Is(err, jobs.ErrEnded) {
		t.Errorf("second Cancel: %v, want ErrEnded", err)
	}
	if _, err := e.Get("job-nope"); !errors.Is(err, jobs.ErrUnknown) {
		t.Errorf("Get(unknown): %v", err)
	}
}

// A sequence whose third step is refused compensates the two applied
// steps, newest first.
func TestFailedStepCompensatesNewestFirst(t *testing.T) {
	clk, p := clock.NewManual(t0), newPlant()
	p.fail["pump"] = true
	e := jobs.New(jobs.Options{Clock: clk, Act: p.act})
	defer e.Close(context.Background())
	j, _ := e.Start(context.Background(), jobs.Job{Name: "seq", Steps: []jobs.Step{
		{Capability: "main", Value: true, Hold: time.Second, Compensate: false, HasCompensation: true},
		{Capability: "zone", Value: true, Hold: time.Second, Compensate: false, HasCompensation: true},
		{Capability: "pump", Value: 60},
	}})
	for range 2 {
		waiting(t, clk, 1)
		clk.Advance(time.Second)
	}
	got := waitDone(t, e, j.ID)
	if got.State != jobs.Failed || fmt.Sprint(p.writes) != "[main=true zone=true zone=false main=false]" {
		t.Fatalf("state %s (%s), writes %v", got.State, got.Reason, p.writes)
	}
}

// Many jobs started, cancelled and run out at once, on one driven clock:
// each ends once, in the state its caller caused, and every actuator ends
// at its restore value.
func TestConcurrentJobs(t *testing.T) {
	clk, p := clock.NewManual(t0), newPlant()
	e := jobs.New(jobs.Options{Clock: clk, Act: p.act, Store: &memStore{}})
	defer e.Close(context.Background())
	const n = 24
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := time.Duration(i+1) * time.Second
			if i%2 == 0 {
				d = time.Hour // cancelled long before it ends
			}
			j, err := e.Start(context.Background(), hold(fmt.Sprint("a", i), 1.0, 0.0, d))
			if err != nil {
				t.Error(err)
			}
			ids[i] = j.ID
		}()
	}
	wg.Wait()
	waiting(t, clk, n)
	for i := 0; i < n; i += 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := e.Cancel(context.Background(), ids[i], "test"); err != nil {
				t.Error(err)
			}
		}()
	}
	// The clock moves while the cancellations compensate.
	for range 2 * n {
		clk.Advance(time.Second)
		runtime.Gosched()
	}
	wg.Wait()
	for i, id := range ids {
		j := waitDone(t, e, id)
		want := jobs.Succeeded
		if i%2 == 0 {
			want = jobs.Cancelled
		}
		if j.State != want || p.value(fmt.Sprint("a", i)) != 0.0 {
			t.Errorf("job %d: %s, actuator %v", i, j.State, p.value(fmt.Sprint("a", i)))
		}
	}
	if got := len(e.List("")); got != n {
		t.Errorf("List: %d jobs", got)
	}
}

// After a restart a job either resumes where it was on the clock or is
// compensated at once; none stays running unseen.
func TestRecoverResumesOrCompensates(t *testing.T) {
	clk, p, st := clock.NewManual(t0), newPlant(), &memStore{}
	var mu sync.Mutex
	var events []string
	note := func(_ context.Context, ev string, j jobs.Job) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, ev+":"+j.Name)
	}
	e1 := jobs.New(jobs.Options{Clock: clk, Act: p.act, Store: st, Durable: true})
	res := hold("fan", 80.0, 0.0, 10*time.Second)
	res.Name, res.OnRestart = "resumes", jobs.OnRestartResume
	a, _ := e1.Start(context.Background(), res)
	b, _ := e1.Start(context.Background(), hold("valve", true, false, 10*time.Second))
	// The process dies: nothing more runs (no Close: a crash).
	e1.Close(context.Background()) // Close of a durable engine keeps resumable jobs running in the store
	if p.value("valve") != false {
		t.Fatalf("a compensating job was left on at close: valve %v", p.value("valve"))
	}
	// Simulate the crash for b: put it back as running, as a kill -9 would leave it.
	all, _ := st.Load()
	for _, j := range all {
		if j.ID == b.ID {
			j.State, j.Applied = jobs.Running, j.Applied[:1]
			st.Put(j)
		}
	}
	p.held["valve"] = true
	clk.Advance(4 * time.Second)
	e2 := jobs.New(jobs.Options{Clock: clk, Act: p.act, Store: st, Durable: true, Note: note})
	defer e2.Close(context.Background())
	resumed, compensated, err := e2.Recover(context.Background())
	if err != nil || resumed != 1 || compensated != 1 {
		t.Fatalf("Recover = %d, %d, %v", resumed, compensated, err)
	}
	if j, _ := e2.Get(b.ID); j.State != jobs.Compensated || p.value("valve") != false {
		t.Fatalf("compensated job: %s, valve %v", j.State, p.value("valve"))
	}
	if j, _ := e2.Get(a.ID); j.State != jobs.Running || !j.ETA().Equal(t0.Add(10*time.Second)) {
		t.Fatalf("resumed job: %s, ETA %v", j.State, j.ETA())
	}
	waiting(t, clk, 1)
	clk.Advance(6 * time.Second)
	if j := waitDone(t, e2, a.ID); j.State != jobs.Succeeded || p.value("fan") != 0.0 {
		t.Fatalf("resumed job: %s, fan %v", j.State, p.value("fan"))
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Contains(events, "job_resumed:resumes") || !slices.Contains(events, "job_compensated:hold_valve") {
		t.Errorf("events %v", events)
	}
}

// A store survives the engine: the bolt file holds what Recover needs.
func TestBoltRoundTrip(t *testing.T) {
	path := t.TempDir() + "/jobs.db"
	b, err := jobs.OpenBolt(path)
	if err != nil {
		t.Fatal(err)
	}
	j := hold("valve", true, false, time.Minute)
	j.ID, j.State, j.StepAt = "job-1", jobs.Running, t0
	if err := b.Put(j); err != nil {
		t.Fatal(err)
	}
	if err := b.PutTimer(jobs.Timer{Tool: "do_heater", To: false, At: t0}); err != nil {
		t.Fatal(err)
	}
	b.Close()
	b, err = jobs.OpenBolt(path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	got, _ := b.Load()
	ts, _ := b.LoadTimers()
	if len(got) != 1 || got[0].Steps[0].Hold != time.Minute || !got[0].StepAt.Equal(t0) || len(ts) != 1 || ts[0].To != false {
		t.Fatalf("reloaded %+v, timers %+v", got, ts)
	}
}

// A failed first step is compensated like a later one: a write that may
// have reached the device (an error that is not ErrNotActuated) is undone;
// a refusal (ErrNotActuated) writes nothing to undo.
func TestFailedFirstStepIsCompensated(t *testing.T) {
	clk := clock.NewManual(t0)
	p := newPlant()
	var keys []string
	act := func(ctx context.Context, j jobs.Job, key, c string, v any) (any, error) {
		keys = append(keys, key)
		if v == true {
			p.mu.Lock()
			p.held[c] = v // it reached the device, and then the call failed
			p.writes = append(p.writes, fmt.Sprintf("%s=%v", c, v))
			p.mu.Unlock()
			return nil, errors.New("write failed: bus timeout")
		}
		return p.act(ctx, j, key, c, v)
	}
	e := jobs.New(jobs.Options{Clock: clk, Act: act})
	steps := []jobs.Step{{Capability: "heater", Value: true, Hold: time.Minute, Compensate: false, HasCompensation: true}}
	j, err := e.Start(context.Background(), jobs.Job{Name: "warm", Steps: steps})
	if err == nil || j.State != jobs.Failed {
		t.Fatalf("Start = %v, %v; want failed", j.State, err)
	}
	if p.value("heater") != false {
		t.Fatalf("heater after a failed first step = %v, want compensated to false (writes %v)", p.value("heater"), p.writes)
	}
	if want := []string{jobs.StepKey(j.ID, 0), jobs.UndoKey(j.ID, 0)}; !slices.Equal(keys, want) {
		t.Fatalf("keys %v, want %v", keys, want)
	}
	// A refusal: nothing to undo.
	p2 := newPlant()
	refuse := func(ctx context.Context, j jobs.Job, key, c string, v any) (any, error) {
		if v == true {
			return nil, fmt.Errorf("%w: interlock", jobs.ErrNotActuated)
		}
		return p2.act(ctx, j, key, c, v)
	}
	e2 := jobs.New(jobs.Options{Clock: clk, Act: refuse})
	if _, err := e2.Start(context.Background(), jobs.Job{Name: "warm", Steps: steps}); err == nil {
		t.Fatal("Start refused: no error")
	}
	if len(p2.writes) != 0 {
		t.Fatalf("a refused first step wrote %v", p2.writes)
	}
}
