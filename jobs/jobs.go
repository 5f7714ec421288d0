// Package jobs runs long-running actions (proMCP's start_* and
// read_status_*): a job is a list of steps, each an actuation that is held
// for a while, run on the server's clock. A job that is cancelled, or whose
// step fails, runs the compensations of the steps it applied, newest first.
// Jobs are written to a Store before every actuation, so that after a
// restart Recover resumes or compensates each job that was running: none is
// left half-done silently.
package jobs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/internal/waitgroup"
)

// State is where a job is in its life.
type State string

// States of a job.
const (
	// Running: a step is applied and held, or about to be applied.
	Running State = "running"
	// Succeeded: every step was applied and held.
	Succeeded State = "succeeded"
	// Cancelled: a caller cancelled it; its compensation ran.
	Cancelled State = "cancelled"
	// Failed: a step could not be applied; the compensation of the steps
	// applied before it ran.
	Failed State = "failed"
	// Compensated: the server stopped while it ran and, at start, its
	// compensation ran instead of resuming it.
	Compensated State = "compensated"
)

// On restart, what a job that was running does.
const (
	OnRestartCompensate = "compensate" // the default: undo what was applied
	OnRestartResume     = "resume"     // continue where it was, on the clock
)

// Step is one actuation of a job: Value is applied to Capability, then held
// for Hold before the next step.
type Step struct {
	Capability string        `json:"capability"`
	Value      any           `json:"value"`
	Hold       time.Duration `json:"hold"`
	// Compensate is the value that undoes this step, applied to Capability
	// when the job is cancelled or fails after it; nil when the step has
	// none (HasCompensation false).
	Compensate      any  `json:"compensate,omitempty"`
	HasCompensation bool `json:"has_compensation,omitempty"`
}

// Applied is an actuation a job made.
type Applied struct {
	Step       int       `json:"step"`
	Capability string    `json:"capability"`
	Value      any       `json:"value"`
	At         time.Time `json:"at"`
	// Compensation is true for the actuations that undo a step.
	Compensation bool `json:"compensation,omitempty"`
}

// Job is a job's durable record.
type Job struct {
	ID    string `json:"id"`
	Name  string `json:"name"` // the job's name in the manifest
	Key   string `json:"key"`  // the start_* call's idempotency key
	State State  `json:"state"`
	Steps []Step `json:"steps"`
	// Step is the current step; StepAt is when it was applied, zero while
	// it is being applied (so that a restart then counts it as applied).
	Step      int       `json:"step"`
	StepAt    time.Time `json:"step_at"`
	Started   time.Time `json:"started"`
	Finished  time.Time `json:"finished"`
	Applied   []Applied `json:"applied"`
	Reason    string    `json:"reason,omitempty"`
	OnRestart string    `json:"on_restart"`
	// Caller and Role are who started it; its steps act as them.
	Caller string `json:"caller,omitempty"`
	Role   string `json:"role,omitempty"`
	// Deadline is when a step still waiting for a person's approval
	// fails the job: its planned end plus Options.ApprovalWait.
	Deadline time.Time `json:"deadline,omitzero"`
	// Waiting says why the current step is not applied yet (a person's
	// approval), "" when it is not waiting.
	Waiting string `json:"waiting,omitempty"`
}

// Total is the time the job takes: the sum of its holds.
func (j Job) Total() time.Duration {
	var d time.Duration
	for _, s := range j.Steps {
		d += s.Hold
	}
	return d
}

// ETA is when a running job ends; the zero time for an ended job, or while
// its current step is being applied.
func (j Job) ETA() time.Time {
	if j.State != Running || j.StepAt.IsZero() {
		return time.Time{}
	}
	at := j.StepAt
	for _, s := range j.Steps[j.Step:] {
		at = at.Add(s.Hold)
	}
	return at
}

// Progress is the share of the job done at now, 0..1.
func (j Job) Progress(now time.Time) float64 {
	if j.State == Succeeded {
		return 1
	}
	total := j.Total()
	if total <= 0 {
		return float64(j.Step) / float64(max(len(j.Steps), 1))
	}
	var done time.Duration
	for _, s := range j.Steps[:j.Step] {
		done += s.Hold
	}
	at := now
	if j.State != Running {
		at = j.Finished // time held until it ended
	}
	if !j.StepAt.IsZero() && !at.IsZero() {
		done += min(max(at.Sub(j.StepAt), 0), j.Steps[j.Step].Hold)
	}
	return min(float64(done)/float64(total), 1)
}

// Actuator applies value to a capability through the gateway's action path
// (policy, reservation, readback), acting as the job's caller. It returns
// the value the device holds, or an error when the action was refused or
// failed.
//
// key names the actuation: the same for a retry of the same step (after an
// approval, or a restart), so that it writes at most once; j.ID+"/step-N"
// for step N (0-based), j.ID+"/undo-N" for its compensation. An error
// that wraps ErrNotActuated says nothing was written (a refusal), one that
// wraps ErrAwaitingApproval that a person must approve it first (the
// engine waits and tries again with the same key, until the job's
// Deadline).
type Actuator func(ctx context.Context, j Job, key, capability string, value any) (applied any, err error)

// ErrNotActuated is wrapped by an Actuator's error when nothing was
// written: the failed step then needs no compensation of its own.
var ErrNotActuated = errors.New("not actuated")

// ErrAwaitingApproval is wrapped by an Actuator's error when the step
// waits for a person's approval.
var ErrAwaitingApproval = errors.New("waiting for a person's approval")

// DefaultApprovalWait is how long past its planned end a job may wait for
// people to approve its steps (Options.ApprovalWait).
const DefaultApprovalWait = 15 * time.Minute

// StepKey is the key of step i's actuation of job id; UndoKey its
// compensation's.
func StepKey(id string, i int) string { return fmt.Sprintf("%s/step-%d", id, i+1) }

// UndoKey is the key of the compensation of step i of job id.
func UndoKey(id string, i int) string { return fmt.Sprintf("%s/undo-%d", id, i+1) }

// Store keeps job records.
type Store interface {
	Put(j Job) error
	Load() ([]Job, error)
}

// Events the Note callback receives.
const (
	EventStarted     = "job_started"
	EventStep        = "job_step"
	EventSucceeded   = "job_succeeded"
	EventCancelled   = "job_cancelled"
	EventFailed      = "job_failed"
	EventResumed     = "job_resumed"
	EventCompensated = "job_compensated"
)

// Options configure an Engine.
type Options struct {
	Clock clock.Clock
	Store Store // nil: in memory only
	Act   Actuator
	Log   *slog.Logger
	// Note is told of each event of a job (for the audit log); nil: none.
	Note func(ctx context.Context, event string, j Job)
	// Durable says that Store survives a restart: a job whose OnRestart
	// is resume is then left running at Close, to be resumed by Recover.
	// Otherwise Close compensates every running job.
	Durable bool
	// ApprovalWait is how long past its planned end (the sum of its holds)
	// a job may wait for a person to approve a step: its Deadline. 0:
	// DefaultApprovalWait.
	ApprovalWait time.Duration
	// Poll is how often a step waiting for approval asks again; 0: 1 s.
	Poll time.Duration
}

// Engine runs jobs.
type Engine struct {
	o      Options
	ctx    context.Context
	stop   context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	jobs   map[string]*run
	closed bool
}

type run struct {
	job    Job
	cancel chan struct{} // closed to cancel
	once   sync.Once
	done   chan struct{} // closed when the runner has ended
	reason string
}

// ErrUnknown is returned for a job id the engine does not know.
var ErrUnknown = errors.New("no such job")

// ErrEnded is returned when cancelling a job that already ended.
var ErrEnded = errors.New("the job has already ended")

// New returns an Engine.
func New(o Options) *Engine {
	o.Clock = clock.Or(o.Clock)
	if o.ApprovalWait <= 0 {
		o.ApprovalWait = DefaultApprovalWait
	}
	if o.Poll <= 0 {
		o.Poll = time.Second
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	ctx, stop := context.WithCancel(context.Background())
	return &Engine{o: o, ctx: ctx, stop: stop, jobs: map[string]*run{}}
}

// NewID returns a new job id (Start gives one to a job that has none).
func NewID() string { return newID() }

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "job-" + hex.EncodeToString(b[:])
}

// Start starts a job of steps named name for the call with idempotency key
// key: it applies the first step before it returns, then runs the others on
// the clock. The returned Job is its state after the first step. A first
// step that waits for a person's approval leaves the job running, waiting
// (Job.Waiting), until its Deadline. A first step that fails ends the job
// failed, compensated like any later step (its own compensation too,
// unless nothing was written), and its error is returned, wrapped, with
// the job.
func (e *Engine) Start(ctx context.Context, proto Job) (Job, error) {
	if len(proto.Steps) == 0 {
		return Job{}, errors.New("a job needs at least one step")
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return Job{}, errors.New("the server is shutting down")
	}
	j := proto
	if j.ID == "" {
		j.ID = newID()
	}
	j.State, j.Step, j.Started = Running, 0, e.o.Clock.Now()
	j.Deadline = j.Started.Add(j.Total() + e.o.ApprovalWait)
	if j.OnRestart == "" {
		j.OnRestart = OnRestartCompensate
	}
	r := &run{job: j, cancel: make(chan struct{}), done: make(chan struct{})}
	e.jobs[j.ID] = r
	e.wg.Add(1)
	e.mu.Unlock()
	if err := e.put(r); err != nil {
		e.finish(ctx, r, Failed, "the job could not be recorded: "+err.Error())
		close(r.done)
		e.wg.Done()
		return e.snapshot(r), err
	}
	e.note(ctx, EventStarted, r)
	err := e.applyOnce(ctx, r, 0)
	if errors.Is(err, ErrAwaitingApproval) {
		go e.runner(r) // applies it once approved
		return e.snapshot(r), nil
	}
	if err != nil {
		e.compensate(context.WithoutCancel(ctx), r, Failed, "step 1: "+err.Error(), EventFailed, !errors.Is(err, ErrNotActuated))
		close(r.done)
		e.wg.Done()
		return e.snapshot(r), fmt.Errorf("step 1: %w", err)
	}
	go e.runner(r)
	return e.snapshot(r), nil
}

// applyOnce records step i as being applied, actuates it and records it
// applied; a step waiting for approval stays recorded as being applied,
// with Job.Waiting saying why.
func (e *Engine) applyOnce(ctx context.Context, r *run, i int) error {
	e.mu.Lock()
	r.job.Step, r.job.StepAt = i, time.Time{}
	j := r.job
	e.mu.Unlock()
	if err := e.put(r); err != nil {
		return fmt.Errorf("%w: recording the step: %w", ErrNotActuated, err)
	}
	s := j.Steps[i]
	applied, err := e.o.Act(ctx, j, StepKey(j.ID, i), s.Capability, s.Value)
	if errors.Is(err, ErrAwaitingApproval) {
		e.mu.Lock()
		changed := r.job.Waiting != err.Error()
		r.job.Waiting = err.Error()
		e.mu.Unlock()
		if changed {
			if perr := e.put(r); perr != nil { // what it waits for: informative only
				e.o.Log.Error("job wait not recorded", "job", j.ID, "step", i, "err", perr)
			}
		}
		return err
	}
	if err != nil {
		return err
	}
	now := e.o.Clock.Now()
	e.mu.Lock()
	r.job.StepAt, r.job.Waiting = now, ""
	r.job.Applied = append(r.job.Applied, Applied{Step: i, Capability: s.Capability, Value: applied, At: now})
	e.mu.Unlock()
	if err := e.put(r); err != nil {
		e.o.Log.Error("job step not recorded", "job", j.ID, "step", i, "err", err)
	}
	e.note(ctx, EventStep, r)
	return nil
}

// errCancelled ends a step's wait for approval: the job was cancelled.
var errCancelled = errors.New("cancelled while waiting for approval")

// apply applies step i, waiting for a person's approval (asking again
// every Poll, with the same key) until the job's Deadline, a cancel or
// the engine closing.
func (e *Engine) apply(ctx context.Context, r *run, i int) error {
	for {
		err := e.applyOnce(ctx, r, i)
		if !errors.Is(err, ErrAwaitingApproval) {
			return err
		}
		e.mu.Lock()
		deadline := r.job.Deadline
		e.mu.Unlock()
		now := e.o.Clock.Now()
		if !deadline.IsZero() && !now.Before(deadline) {
			return fmt.Errorf("%w: %w, and none came before the job's deadline %s", ErrNotActuated, err, deadline.UTC().Format(time.RFC3339))
		}
		wait := e.o.Poll
		if !deadline.IsZero() {
			wait = min(wait, deadline.Sub(now))
		}
		select {
		case <-r.cancel:
			return errCancelled
		case <-ctx.Done():
			return ctx.Err()
		case <-e.o.Clock.After(wait):
		}
	}
}

// runner holds each step and applies the next, until the job ends, is
// cancelled, or the engine closes.
func (e *Engine) runner(r *run) {
	defer e.wg.Done()
	defer close(r.done)
	ctx := e.ctx
	for {
		e.mu.Lock()
		j := r.job
		e.mu.Unlock()
		if j.StepAt.IsZero() { // not applied yet: waits for an approval
			if !e.applyStep(ctx, r, j.Step) {
				return
			}
			continue
		}
		wait := j.StepAt.Add(j.Steps[j.Step].Hold).Sub(e.o.Clock.Now())
		var timer <-chan time.Time
		if wait > 0 {
			timer = e.o.Clock.After(wait)
		} else {
			ch := make(chan time.Time, 1)
			ch <- time.Time{}
			timer = ch
		}
		select {
		case <-r.cancel:
			e.compensate(context.WithoutCancel(ctx), r, Cancelled, r.reason, EventCancelled, true)
			return
		case <-ctx.Done():
			e.closing(r)
			return
		case <-timer:
		}
		next := j.Step + 1
		if next == len(j.Steps) {
			e.finish(ctx, r, Succeeded, "")
			e.note(ctx, EventSucceeded, r)
			return
		}
		if !e.applyStep(ctx, r, next) {
			return
		}
	}
}

// applyStep applies step i for the runner; when it could not, it ends the
// job (compensated: cancelled, failed, or closing) and returns false.
func (e *Engine) applyStep(ctx context.Context, r *run, i int) bool {
	err := e.apply(ctx, r, i)
	switch {
	case err == nil:
		return true
	case errors.Is(err, errCancelled):
		e.compensate(context.WithoutCancel(ctx), r, Cancelled, r.reason, EventCancelled, false)
	case ctx.Err() != nil:
		e.closing(r)
	default:
		e.compensate(context.WithoutCancel(ctx), r, Failed, fmt.Sprintf("step %d: %v", i+1, err), EventFailed, !errors.Is(err, ErrNotActuated))
	}
	return false
}

// closing ends r's runner as the engine closes: a job that resumes after
// a restart stays running in a durable store; any other is compensated.
func (e *Engine) closing(r *run) {
	e.mu.Lock()
	resume := e.o.Durable && r.job.OnRestart == OnRestartResume
	e.mu.Unlock()
	if resume {
		return
	}
	e.compensate(context.Background(), r, Compensated, "the server stopped while the job ran", EventCompensated, !r.job.StepAt.IsZero())
}

// compensate applies the compensations of the steps applied so far, newest
// first, and ends the job in state with reason. current says whether the
// current step counts as applied (it was written, or may have been); the
// steps before it always do. A compensation that fails is said in the
// reason; the others still run. Each has its own key (UndoKey), so a
// restart that compensates again does not write twice.
func (e *Engine) compensate(ctx context.Context, r *run, state State, reason, event string, current bool) {
	e.mu.Lock()
	j := r.job
	e.mu.Unlock()
	var failed []string
	top := j.Step
	if !current {
		top--
	}
	for i := top; i >= 0; i-- {
		s := j.Steps[i]
		if !s.HasCompensation {
			continue
		}
		applied, err := e.o.Act(ctx, j, UndoKey(j.ID, i), s.Capability, s.Compensate)
		if err != nil {
			failed = append(failed, fmt.Sprintf("compensating step %d (%s to %v) failed: %v", i+1, s.Capability, s.Compensate, err))
			continue
		}
		e.mu.Lock()
		r.job.Applied = append(r.job.Applied, Applied{Step: i, Capability: s.Capability, Value: applied, At: e.o.Clock.Now(), Compensation: true})
		e.mu.Unlock()
	}
	for _, f := range failed {
		reason = joinReason(reason, f)
	}
	e.finish(ctx, r, state, reason)
	e.note(ctx, event, r)
}

func joinReason(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// finish ends the job in state and records it.
func (e *Engine) finish(_ context.Context, r *run, state State, reason string) {
	e.mu.Lock()
	r.job.State, r.job.Reason, r.job.Finished = state, reason, e.o.Clock.Now()
	e.mu.Unlock()
	if err := e.put(r); err != nil {
		e.o.Log.Error("job end not recorded", "job", r.job.ID, "state", state, "err", err)
	}
}

func (e *Engine) put(r *run) error {
	if e.o.Store == nil {
		return nil
	}
	e.mu.Lock()
	j := r.job
	j.Applied = append([]Applied(nil), j.Applied...)
	e.mu.Unlock()
	return e.o.Store.Put(j)
}

func (e *Engine) note(ctx context.Context, event string, r *run) {
	if e.o.Note != nil {
		e.o.Note(ctx, event, e.snapshot(r))
	}
}

func (e *Engine) snapshot(r *run) Job {
	e.mu.Lock()
	defer e.mu.Unlock()
	j := r.job
	j.Applied = append([]Applied(nil), j.Applied...)
	return j
}

// Get returns the job with id.
func (e *Engine) Get(id string) (Job, error) {
	e.mu.Lock()
	r, ok := e.jobs[id]
	e.mu.Unlock()
	if !ok {
		return Job{}, fmt.Errorf("%w %q", ErrUnknown, id)
	}
	return e.snapshot(r), nil
}

// Latest returns the most recently started job named name.
func (e *Engine) Latest(name string) (Job, bool) {
	e.mu.Lock()
	var best *run
	for _, r := range e.jobs {
		if r.job.Name == name && (best == nil || r.job.Started.After(best.job.Started) ||
			(r.job.Started.Equal(best.job.Started) && r.job.ID > best.job.ID)) {
			best = r
		}
	}
	e.mu.Unlock()
	if best == nil {
		return Job{}, false
	}
	return e.snapshot(best), true
}

// List returns the jobs named name (every job when name is ""), oldest first.
func (e *Engine) List(name string) []Job {
	e.mu.Lock()
	var rs []*run
	for _, r := range e.jobs {
		if name == "" || r.job.Name == name {
			rs = append(rs, r)
		}
	}
	e.mu.Unlock()
	out := make([]Job, 0, len(rs))
	for _, r := range rs {
		out = append(out, e.snapshot(r))
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Started.Before(out[b].Started) })
	return out
}

// Cancel cancels the running job id and waits (until ctx ends) for its
// compensation to have run; it returns the job as it ended.
func (e *Engine) Cancel(ctx context.Context, id, reason string) (Job, error) {
	e.mu.Lock()
	r, ok := e.jobs[id]
	e.mu.Unlock()
	if !ok {
		return Job{}, fmt.Errorf("%w %q", ErrUnknown, id)
	}
	cancelled := false
	r.once.Do(func() {
		e.mu.Lock()
		running := r.job.State == Running
		e.mu.Unlock()
		if running {
			r.reason, cancelled = reason, true
			close(r.cancel)
		}
	})
	select {
	case <-r.done:
	case <-ctx.Done():
		return e.snapshot(r), ctx.Err()
	}
	j := e.snapshot(r)
	if !cancelled || j.State != Cancelled {
		return j, fmt.Errorf("%w (%s)", ErrEnded, j.State)
	}
	return j, nil
}

// Done returns a channel closed when job id has ended, or nil for an
// unknown id.
func (e *Engine) Done(id string) <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	if r, ok := e.jobs[id]; ok {
		return r.done
	}
	return nil
}

// Recover loads the store's jobs: the ended ones to be read, and each one
// that was running when the server stopped either resumed on the clock
// (OnRestart resume) or compensated at once. It returns how many it
// resumed and compensated.
func (e *Engine) Recover(ctx context.Context) (resumed, compensated int, err error) {
	if e.o.Store == nil {
		return 0, 0, nil
	}
	all, err := e.o.Store.Load()
	if err != nil {
		return 0, 0, fmt.Errorf("loading jobs: %w", err)
	}
	for _, j := range all {
		r := &run{job: j, cancel: make(chan struct{}), done: make(chan struct{})}
		e.mu.Lock()
		e.jobs[j.ID] = r
		e.mu.Unlock()
		if j.State != Running {
			close(r.done)
			continue
		}
		e.wg.Add(1)
		if j.OnRestart == OnRestartResume {
			resumed++
			e.note(ctx, EventResumed, r)
			if j.StepAt.IsZero() { // the server stopped while applying: apply it again
				if err := e.applyOnce(ctx, r, j.Step); err != nil && !errors.Is(err, ErrAwaitingApproval) {
					e.compensate(ctx, r, Failed, fmt.Sprintf("resuming step %d: %v", j.Step+1, err), EventFailed, !errors.Is(err, ErrNotActuated))
					close(r.done)
					e.wg.Done()
					continue
				}
			}
			go e.runner(r)
			continue
		}
		compensated++
		e.compensate(ctx, r, Compensated, "the server stopped while the job ran; compensated at start", EventCompensated, true)
		close(r.done)
		e.wg.Done()
	}
	return resumed, compensated, nil
}

// Close stops the runners (see Options.Durable for what becomes of the
// running jobs) and waits for them, or for ctx.
func (e *Engine) Close(ctx context.Context) error {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	e.stop()
	if err := waitgroup.Wait(ctx, &e.wg); err != nil {
		return fmt.Errorf("waiting for jobs to stop: %w", err)
	}
	return nil
}
