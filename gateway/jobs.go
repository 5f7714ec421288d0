package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/promcp/promcp-device/audit"
	"github.com/promcp/promcp-device/capabilities"
	"github.com/promcp/promcp-device/jobs"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/promcp"
	"github.com/promcp/promcp-device/server"
)

// JobStore keeps jobs and dead-man timers (jobs.Bolt under --state).
type JobStore interface {
	jobs.Store
	jobs.TimerStore
}

// JobStatus is a job's status: read_status_*'s value, and the job field of
// start_* and do_cancel_* results.
type JobStatus struct {
	JobID string `json:"job_id"`
	Job   string `json:"job"`
	// State is running, succeeded, cancelled, failed or compensated.
	State string `json:"state"`
	// Progress is the share of the job's time done, 0..1.
	Progress float64 `json:"progress"`
	// Step is the current step, 1-based, of Steps.
	Step        int            `json:"step"`
	Steps       int            `json:"steps"`
	CurrentStep *JobStepStatus `json:"current_step"`
	// Applied are the values applied so far, compensations included.
	Applied []JobApplied `json:"applied"`
	Started time.Time    `json:"started"`
	// ETA is when a running job ends; null once it has ended.
	ETA      *time.Time `json:"eta"`
	Finished *time.Time `json:"finished,omitempty"`
	Reason   string     `json:"reason,omitempty"`
	// OnRestart says what a restart does to it: resume or compensate.
	OnRestart string `json:"on_restart"`
	// Waiting says what the current step waits for (a person's approval,
	// on the approval desk), until Deadline.
	Waiting  string     `json:"waiting,omitempty"`
	Deadline *time.Time `json:"deadline,omitempty"`
}

// JobStepStatus is a job's current step.
type JobStepStatus struct {
	Capability string  `json:"capability"`
	Tool       string  `json:"tool"`
	Value      any     `json:"value"`
	HoldS      float64 `json:"hold_s"`
}

// JobApplied is a value a job applied.
type JobApplied struct {
	Step         int       `json:"step"`
	Capability   string    `json:"capability"`
	Value        any       `json:"value"`
	At           time.Time `json:"at"`
	Compensation bool      `json:"compensation,omitempty"`
}

func (g *Gateway) status(j jobs.Job) JobStatus {
	now := g.srv.Clock().Now()
	st := JobStatus{JobID: j.ID, Job: j.Name, State: string(j.State), Progress: math.Round(j.Progress(now)*1000) / 1000,
		Step: j.Step + 1, Steps: len(j.Steps), Started: j.Started.UTC(), Reason: j.Reason, OnRestart: j.OnRestart,
		Applied: []JobApplied{}}
	if j.State == jobs.Running && j.Step < len(j.Steps) {
		s := j.Steps[j.Step]
		cs := &JobStepStatus{Capability: s.Capability, Value: s.Value, HoldS: s.Hold.Seconds()}
		if c, ok := g.set.Get(s.Capability); ok && c.Do != nil {
			cs.Tool = c.Do.Tool
		}
		st.CurrentStep = cs
	}
	if eta := j.ETA(); !eta.IsZero() {
		eta = eta.UTC()
		st.ETA = &eta
	}
	if !j.Finished.IsZero() {
		f := j.Finished.UTC()
		st.Finished = &f
	}
	if j.State == jobs.Running && j.Waiting != "" {
		st.Waiting = j.Waiting
		if !j.Deadline.IsZero() {
			d := j.Deadline.UTC()
			st.Deadline = &d
		}
	}
	for _, a := range j.Applied {
		st.Applied = append(st.Applied, JobApplied{Step: a.Step + 1, Capability: a.Capability, Value: a.Value, At: a.At.UTC(), Compensation: a.Compensation})
	}
	return st
}

// startBackground makes the job engine and the dead-man timers, when the
// manifest has jobs or the policy dead-man limits.
func (g *Gateway) startBackground() error {
	ctx, stop := context.WithCancel(context.Background())
	g.bgStop, g.bgCtx = stop, ctx
	var store JobStore
	if g.opts.JobStore != nil {
		store = g.opts.JobStore
	}
	if g.hasRevert() {
		o := jobs.DeadManOptions{Clock: g.srv.Clock(), Revert: g.revert, Note: g.noteRevert, Log: g.srv.Logger()}
		if store != nil {
			o.Store = store
		}
		dm, err := jobs.NewDeadMan(o)
		if err != nil {
			return err
		}
		g.deadman = dm
	}
	if len(g.opts.Jobs) > 0 {
		o := jobs.Options{Clock: g.srv.Clock(), Act: g.actuate, Log: g.srv.Logger(), Note: g.noteJob, Durable: store != nil}
		if store != nil {
			o.Store = store
		}
		g.engine = jobs.New(o)
		resumed, compensated, err := g.engine.Recover(ctx)
		if err != nil {
			return err
		}
		if resumed+compensated > 0 {
			g.srv.Logger().Warn("jobs the server stopped during", "resumed", resumed, "compensated", compensated)
		}
	}
	if g.deadman != nil {
		g.bgDone = make(chan struct{})
		go func() { defer close(g.bgDone); g.deadman.Run(ctx) }()
	}
	return nil
}

func (g *Gateway) hasRevert() bool {
	if g.opts.Policy == nil {
		return false
	}
	for _, a := range g.opts.Policy.Actions {
		if a.Revert != nil {
			return true
		}
	}
	return false
}

// Close stops the jobs (compensating those that will not resume after a
// restart, see jobs.Options.Durable) and the dead-man timers, or gives up
// when ctx ends. The timers stay recorded under --state.
func (g *Gateway) Close(ctx context.Context) error {
	var err error
	if g.engine != nil {
		err = g.engine.Close(ctx)
	}
	if g.bgStop != nil {
		g.bgStop()
	}
	if g.bgDone != nil {
		<-g.bgDone
	}
	g.refreshMu.Lock()
	g.refreshEnd = true
	g.refreshMu.Unlock()
	g.refreshes.Wait()
	return err
}

// beginOnce hands the start_* call's Begin to the first actuation only.
type beginOnce struct {
	mu sync.Mutex
	f  func(context.Context) error
}

func (b *beginOnce) take() func(context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	f := b.f
	b.f = nil
	return f
}

type beginKey struct{}

// stepError is a job step that the action path refused or failed.
type stepError struct{ r promcp.DoResult }

func (e *stepError) Error() string {
	if e.r.Reason != "" {
		return e.r.Reason
	}
	if e.r.Error != nil {
		return e.r.Error.Message
	}
	return string(e.r.Status)
}

// Is says which of the jobs package's errors the step's result is: a
// refusal wrote nothing (jobs.ErrNotActuated); one that asks for a
// person's approval waits for it (jobs.ErrAwaitingApproval).
func (e *stepError) Is(target error) bool {
	refused := e.r.Permission != "" && e.r.Permission != promcp.Allowed
	switch target {
	case jobs.ErrAwaitingApproval:
		return e.r.Permission == promcp.RequiresHumanApproval
	case jobs.ErrNotActuated:
		return refused || (e.r.Error != nil && (e.r.Error.Code == promcp.CodeRefused || e.r.Error.Code == promcp.CodeInvalidArgument))
	}
	return false
}

// actuate is a job step or compensation: an actuation through the one
// path (act), under key, acting as the job's caller. The start_* call's
// own attempt begins with its first actuation.
func (g *Gateway) actuate(ctx context.Context, j jobs.Job, key, capName string, value any) (any, error) {
	c, ok := g.set.Get(capName)
	if !ok || c.Do == nil {
		return nil, fmt.Errorf("%w: capability %s has no action", jobs.ErrNotActuated, capName)
	}
	caller := server.Caller{Name: j.Caller, Role: j.Role}
	ctx = server.WithCaller(ctx, caller)
	a := actuation{job: j.ID}
	if b, ok := ctx.Value(beginKey{}).(*beginOnce); ok {
		// The start_* call's attempt begins once its first step is
		// decided, with that step's.
		a.outer = func(ctx context.Context) error {
			if f := b.take(); f != nil {
				return f(ctx)
			}
			return nil
		}
	}
	r := g.act(ctx, c, server.Internal{Key: key, Caller: caller, Value: value}, a)
	if r.Status == promcp.StatusFailed {
		return nil, &stepError{r}
	}
	return r.AppliedValue, nil
}

// noteJob writes a job's event to the audit log, and frees the actuators
// of a job that ended (a resumed job takes them again).
func (g *Gateway) noteJob(ctx context.Context, event string, j jobs.Job) {
	switch event {
	case jobs.EventResumed:
		g.holds.take(j.ID, g.jobTools(j))
	case jobs.EventSucceeded, jobs.EventCancelled, jobs.EventFailed, jobs.EventCompensated:
		g.holds.release(j.ID)
	}
	body, _ := json.Marshal(g.status(j))
	tool := "start_" + j.Name
	// An error is logged by Audit; the actuations themselves are recorded
	// (attempt and result) on the one actuation path.
	_ = g.srv.Audit(ctx, audit.Record{Event: event, Caller: j.Caller, Role: j.Role, Tool: tool, Key: j.Key,
		Status: string(j.State), Reason: j.Reason, Result: body})
}

// jobTools are the do_* tools of j's steps.
func (g *Gateway) jobTools(j jobs.Job) []string {
	var out []string
	for _, s := range j.Steps {
		if c, ok := g.set.Get(s.Capability); ok && c.Do != nil && !slices.Contains(out, c.Do.Tool) {
			out = append(out, c.Do.Tool)
		}
	}
	return out
}

// serveJobs registers each job's start_*, read_status_* and do_cancel_*.
func (g *Gateway) serveJobs(srv *server.Server) error { return g.serveJobDefs(srv, g.opts.Jobs) }

// serveJobDefs registers the tools of the jobs defs on srv.
func (g *Gateway) serveJobDefs(srv *server.Server, defs []manifests.Job) error {
	for _, def := range defs {
		if err := srv.Do(g.startTool(def), g.startHandler(def)); err != nil {
			return fmt.Errorf("job %s: %w", def.Name, err)
		}
		st := server.ReadTool{Name: def.StatusTool(), Title: title("status_" + def.Name),
			Description: fmt.Sprintf("Status of the %s job: state, progress 0..1, the current step, the values applied so far and the ETA, as {value, unit, timestamp, quality}. job_id names one job; omitted, the latest.", def.Name),
			Value:       statusSchema,
			Source:      g.jobSource(def),
			Args: map[string]any{"job_id": map[string]any{"type": "string", "minLength": 1,
				"description": "The job_id that start_" + def.Name + " returned; omitted, the latest job."}}}
		if err := srv.Read(st, g.statusHandler(def)); err != nil {
			return fmt.Errorf("job %s: %w", def.Name, err)
		}
		ct := server.DoTool{BeginsItself: true, Name: def.CancelTool(), Title: title("cancel_" + def.Name),
			Description: fmt.Sprintf("Cancel a running %s job: it stops and its compensation runs (each step's undo, newest first) before this answers.", def.Name),
			Value:       map[string]any{"type": "string", "minLength": 1, "description": "The job_id that start_" + def.Name + " returned."},
			SideEffects: []string{"the job's compensation runs: its actuators return to the values before it"},
			Source:      g.jobSource(def)}
		if err := srv.Do(ct, g.cancelHandler(def)); err != nil {
			return fmt.Errorf("job %s: %w", def.Name, err)
		}
	}
	return nil
}

func (g *Gateway) jobSource(def manifests.Job) string {
	if c := g.jobCaps(def); len(c) > 0 {
		return c[0].Source
	}
	return ""
}

// jobCaps are the capabilities a job acts on, in first-use order.
func (g *Gateway) jobCaps(def manifests.Job) []*capabilities.Capability {
	var names []string
	if def.Kind == manifests.JobSteps {
		for _, s := range def.Steps {
			names = append(names, s.Capability)
		}
	} else {
		names = append(names, def.Capability)
	}
	var out []*capabilities.Capability
	seen := map[string]bool{}
	for _, n := range names {
		if c, ok := g.set.Get(n); ok && !seen[n] {
			seen[n] = true
			out = append(out, c)
		}
	}
	return out
}

func (g *Gateway) startTool(def manifests.Job) server.DoTool {
	caps := g.jobCaps(def)
	effects := def.SideEffects
	if effects == nil {
		for _, c := range caps {
			effects = append(effects, c.Do.SideEffects...)
		}
	}
	desc := def.Description
	if desc == "" {
		desc = "Start the " + strings.ReplaceAll(def.Name, "_", " ") + " job."
	}
	var value map[string]any
	switch def.Kind {
	case manifests.JobHold:
		desc += fmt.Sprintf(" Holds %s at %s for %s, then restores it.", caps[0].Name, server.FormatValue(def.Value), def.For)
		value = valueSchema(caps[0].Capability, true)
		value["description"] = fmt.Sprintf("The value held; omitted, %s.", server.FormatValue(def.Value))
	case manifests.JobRamp:
		desc += fmt.Sprintf(" Ramps %s to %s at %g %s/s.", caps[0].Name, server.FormatValue(def.Value), def.Rate, caps[0].Unit)
		value = valueSchema(caps[0].Capability, true)
		value["description"] = fmt.Sprintf("The target; omitted, %s.", server.FormatValue(def.Value))
	default:
		desc += fmt.Sprintf(" Runs %d steps, each through its capability's do_* (policy per step).", len(def.Steps))
		desc += " Takes no value: the steps are the manifest's."
		// value stays nil: previous_value and applied_value are the first
		// step's capability's, whatever its type.
	}
	desc += " Returns at once with job_id and the first status; poll " + def.StatusTool() + ", cancel with " + def.CancelTool() + "."
	return server.DoTool{BeginsItself: true, Name: def.StartTool(), Title: title(def.Name), Description: desc,
		Value: value, ValueOptional: true, SideEffects: nonNil(effects), Compensable: true, Source: g.jobSource(def),
		Await: g.await}
}

// statusSchema is the JSON Schema of JobStatus, read_status_*'s value.
var statusSchema = map[string]any{
	"type":     "object",
	"required": []string{"job_id", "job", "state", "progress", "step", "steps", "current_step", "applied", "started", "eta", "on_restart"},
	"properties": map[string]any{
		"job_id":       map[string]any{"type": "string"},
		"job":          map[string]any{"type": "string"},
		"state":        map[string]any{"enum": []string{"running", "succeeded", "cancelled", "failed", "compensated"}},
		"progress":     map[string]any{"type": "number", "minimum": 0, "maximum": 1, "description": "Share of the job's time done."},
		"step":         map[string]any{"type": "integer", "minimum": 1, "description": "The current step, 1-based."},
		"steps":        map[string]any{"type": "integer", "minimum": 1},
		"current_step": map[string]any{"type": []string{"object", "null"}, "description": "The step applied and held now; null once the job has ended."},
		"applied":      map[string]any{"type": "array", "description": "The values applied so far, compensations included, oldest first."},
		"started":      map[string]any{"type": "string", "format": "date-time"},
		"eta":          map[string]any{"type": []string{"string", "null"}, "format": "date-time", "description": "When the job ends; null once it has ended."},
		"finished":     map[string]any{"type": "string", "format": "date-time"},
		"reason":       map[string]any{"type": "string"},
		"on_restart":   map[string]any{"enum": []string{"compensate", "resume"}},
		"waiting":      map[string]any{"type": "string", "description": "What the current step waits for (a person's approval), until deadline."},
		"deadline":     map[string]any{"type": "string", "format": "date-time", "description": "When a step still waiting for approval fails the job."},
	},
}
