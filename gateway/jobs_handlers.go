package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/promcp/promcp-device/capabilities"
	"github.com/promcp/promcp-device/jobs"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/promcp"
	"github.com/promcp/promcp-device/server"
)

// startHandler runs start_<job>: it plans the steps from the values the
// capabilities hold now, then starts the job, whose first step goes through
// the capability's do_* path (policy, reservation) before it answers.
func (g *Gateway) startHandler(def manifests.Job) server.DoHandler {
	return func(ctx context.Context, req server.DoRequest) (promcp.DoResult, error) {
		if req.Recovering {
			return g.recoverStart(def, req), nil
		}
		if def.Kind == manifests.JobSteps && req.Value != nil {
			msg := def.StartTool() + " takes no value: its steps are the manifest's"
			return promcp.DoResult{Status: promcp.StatusFailed, Reason: msg,
				Error: &promcp.Error{Code: promcp.CodeInvalidArgument, Field: "value", Message: msg}}, nil
		}
		steps, prev, failed := g.plan(ctx, def, req.Value)
		if failed != nil {
			return *failed, nil
		}
		id := jobs.NewID()
		if tool, holder := g.holds.take(id, g.jobTools(jobs.Job{Steps: steps})); holder != "" {
			msg := fmt.Sprintf("%s is held by job %s until it ends: one job at a time on an actuator; cancel it, or wait for it", tool, holder)
			return promcp.DoResult{Status: promcp.StatusFailed, PreviousValue: prev, Permission: promcp.PolicyDenied, Reason: msg,
				Error: &promcp.Error{Code: promcp.CodeRefused, Message: msg}}, nil
		}
		once := &beginOnce{f: req.Begin}
		ctx = context.WithValue(ctx, beginKey{}, once)
		j, err := g.engine.Start(ctx, jobs.Job{ID: id, Name: def.Name, Key: req.IdempotencyKey, Steps: steps,
			OnRestart: def.OnRestart, Caller: req.Caller.Name, Role: req.Caller.Role})
		if err != nil || j.State != jobs.Running {
			g.holds.release(id)
		}
		if begin := once.take(); begin != nil && err == nil && j.State == jobs.Running {
			// The first step waits for approval: the job has started.
			if berr := begin(ctx); berr != nil {
				// Not recorded: the job does not run (nothing was written yet).
				_, _ = g.engine.Cancel(ctx, j.ID, "the start_* attempt could not be recorded: "+berr.Error())
				return promcp.DoResult{}, berr
			}
		}
		var se *stepError
		switch {
		case errors.As(err, &se):
			r := se.r
			r.Reason = "the job's first step was not applied: " + se.Error()
			r.Compensable, r.CompensationHint, r.AppliedValue = false, nil, nil
			if r.Status != promcp.StatusFailed {
				r.Status = promcp.StatusFailed
			}
			if j.ID != "" && (r.Permission == "" || r.Permission == promcp.Allowed) {
				r.JobID, r.Job = j.ID, g.status(j)
			}
			return r, nil
		case err != nil:
			return promcp.DoResult{}, err
		}
		return g.startResult(def, j, prev), nil
	}
}

// startResult is start_*'s answer for a job that started.
func (g *Gateway) startResult(def manifests.Job, j jobs.Job, prev any) promcp.DoResult {
	r := promcp.DoResult{Status: promcp.StatusSuccess, PreviousValue: prev, JobID: j.ID, Job: g.status(j),
		Compensable: true, CompensationHint: promcp.Hint(fmt.Sprintf("%s value=%s", def.CancelTool(), j.ID))}
	if len(j.Applied) > 0 {
		r.AppliedValue = j.Applied[0].Value
	}
	if j.Waiting != "" {
		r.Reason = fmt.Sprintf("started; step 1 waits for a person's approval until %s: %s", j.Deadline.UTC().Format(time.RFC3339), j.Waiting)
	}
	if c, ok := g.set.Get(j.Steps[0].Capability); ok && g.deadman != nil {
		if t, armed := g.deadman.Due(c.Do.Tool); armed {
			at := t.At.UTC()
			r.RevertAt = &at
		}
	}
	return r
}

// recoverStart answers a retry of a start_* call whose attempt never
// finished: the job record says whether it started.
func (g *Gateway) recoverStart(def manifests.Job, req server.DoRequest) promcp.DoResult {
	for _, j := range g.engine.List(def.Name) {
		if j.Key == req.IdempotencyKey {
			r := promcp.DoResult{Status: promcp.StatusSuccess, JobID: j.ID, Job: g.status(j),
				Reason: "an earlier attempt with this idempotency_key did not finish (the server stopped during it); this is the job it started, as it stands"}
			if len(j.Applied) > 0 {
				r.AppliedValue = j.Applied[0].Value
			}
			if j.State == jobs.Running {
				r.Compensable, r.CompensationHint = true, promcp.Hint(fmt.Sprintf("%s value=%s", def.CancelTool(), j.ID))
			}
			return r
		}
	}
	const why = "an earlier attempt with this idempotency_key did not finish (the server stopped during it) and started no job; start again with a new key"
	return promcp.DoResult{Status: promcp.StatusFailed, Reason: why, Error: &promcp.Error{Code: promcp.CodeRefused, Message: why}}
}

// plan builds the job's steps from the manifest and the values the
// capabilities hold now (a hold's restore, a ramp's start, a step's
// compensate: restore). It returns prev, the first capability's value.
func (g *Gateway) plan(ctx context.Context, def manifests.Job, override any) ([]jobs.Step, any, *promcp.DoResult) {
	current := map[string]any{}
	for _, c := range g.jobCaps(def) {
		r := c.Read(ctx)
		if r.Quality == promcp.QualityError {
			msg := fmt.Sprintf("%s cannot be read (%s): the job could not restore it, so it does not start", c.Name, r.Reason)
			return nil, nil, &promcp.DoResult{Status: promcp.StatusFailed, Reason: msg,
				Error: &promcp.Error{Code: promcp.CodeSourceUnreachable, Message: msg}}
		}
		current[c.Name] = r.Value
	}
	if override != nil && def.Kind != manifests.JobSteps {
		c, _ := g.set.Get(def.Capability)
		if msg := outOfRange(c, override); msg != "" {
			return nil, nil, &promcp.DoResult{Status: promcp.StatusFailed, Permission: promcp.OutOfRange, Reason: msg,
				Error: &promcp.Error{Code: promcp.CodeRefused, Field: "value", Message: msg}}
		}
	}
	switch def.Kind {
	case manifests.JobHold:
		v := def.Value
		if override != nil {
			v = override
		}
		restore := current[def.Capability]
		if def.HasRestore {
			restore = def.Restore
		}
		return []jobs.Step{
			{Capability: def.Capability, Value: v, Hold: def.For, Compensate: restore, HasCompensation: true},
			{Capability: def.Capability, Value: restore},
		}, current[def.Capability], nil
	case manifests.JobRamp:
		to := def.Value
		if override != nil {
			to = override
		}
		c, _ := g.set.Get(def.Capability)
		return rampSteps(c, current[def.Capability], to, def.Rate, def.Every), current[def.Capability], nil
	}
	var steps []jobs.Step
	for _, s := range def.Steps {
		st := jobs.Step{Capability: s.Capability, Value: s.Value, Hold: s.Hold, HasCompensation: s.HasCompensate, Compensate: s.Compensate}
		if s.CompensateRestore {
			st.Compensate = current[s.Capability]
		}
		steps = append(steps, st)
	}
	return steps, current[def.Steps[0].Capability], nil
}

// rampSteps moves c from from to to at rate per second, one write every
// every (1s when 0); the first step's compensation restores from.
func rampSteps(c *capabilities.Capability, from, to any, rate float64, every time.Duration) []jobs.Step {
	if every <= 0 {
		every = time.Second
	}
	f, _ := promcp.Number(from)
	t, _ := promcp.Number(to)
	stride := rate * every.Seconds()
	n := int(math.Ceil(math.Abs(t-f) / stride))
	n = max(1, min(n, manifests.MaxJobSteps))
	steps := make([]jobs.Step, 0, n)
	for k := 1; k <= n; k++ {
		v := f + math.Copysign(math.Min(stride*float64(k), math.Abs(t-f)), t-f)
		if k == n {
			v = t
		}
		if c.Type == manifests.TypeInteger {
			v = math.Round(v)
		}
		s := jobs.Step{Capability: c.Name, Value: v}
		if k < n {
			s.Hold = every
		}
		steps = append(steps, s)
	}
	steps[0].Compensate, steps[0].HasCompensation = from, true
	return steps
}

// outOfRange says why v is outside c's constraints, or "".
func outOfRange(c *capabilities.Capability, v any) string {
	f, ok := promcp.Number(v)
	if !ok || c == nil || c.Do == nil {
		return ""
	}
	k := c.Do.Constraints
	switch {
	case k.Min != nil && f < *k.Min:
		return fmt.Sprintf("%v is below %s's minimum %v", v, c.Name, *k.Min)
	case k.Max != nil && f > *k.Max:
		return fmt.Sprintf("%v is above %s's maximum %v", v, c.Name, *k.Max)
	}
	return ""
}

// statusHandler runs read_status_<job>.
func (g *Gateway) statusHandler(def manifests.Job) server.ReadHandler {
	return func(ctx context.Context, req server.ReadRequest) (promcp.ReadResult, error) {
		id, _ := req.Args["job_id"].(string)
		var j jobs.Job
		var err error
		if id == "" {
			var ok bool
			if j, ok = g.engine.Latest(def.Name); !ok {
				err = fmt.Errorf("no %s job has run on this gateway; start one with %s", def.Name, def.StartTool())
			}
		} else if j, err = g.engine.Get(id); err == nil && j.Name != def.Name {
			err = fmt.Errorf("%s is a %s job, not %s: read it with read_status_%s", id, j.Name, def.Name, j.Name)
		}
		if err != nil {
			return promcp.ReadResult{Quality: promcp.QualityError, QualityReason: "unknown job",
				Error: &promcp.Error{Code: promcp.CodeInvalidArgument, Field: "job_id", Message: err.Error()}}, nil
		}
		res := promcp.ReadResult{Value: asObject(g.status(j)), Timestamp: g.srv.Clock().Now(), Quality: promcp.QualityGood}
		if j.State == jobs.Failed {
			res.Quality, res.QualityReason = promcp.QualityDegraded, "the job failed: "+j.Reason
		}
		return res, nil
	}
}

// cancelHandler runs do_cancel_<job>: it cancels the job and waits for its
// compensation.
func (g *Gateway) cancelHandler(def manifests.Job) server.DoHandler {
	return func(ctx context.Context, req server.DoRequest) (promcp.DoResult, error) {
		id, _ := req.Value.(string)
		j, err := g.engine.Get(id)
		if err == nil && j.Name != def.Name {
			err = fmt.Errorf("%s is a %s job, not %s", id, j.Name, def.Name)
		}
		if err != nil {
			return promcp.DoResult{Status: promcp.StatusFailed, Reason: err.Error(),
				Error: &promcp.Error{Code: promcp.CodeInvalidArgument, Field: "value", Message: err.Error()}}, nil
		}
		if req.Recovering || j.State != jobs.Running {
			msg := fmt.Sprintf("job %s is %s: nothing to cancel", id, j.State)
			r := promcp.DoResult{Status: promcp.StatusFailed, PreviousValue: string(j.State), JobID: id, Job: g.status(j), Reason: msg,
				Error: &promcp.Error{Code: promcp.CodeInvalidArgument, Field: "value", Message: msg}}
			if req.Recovering && j.State == jobs.Cancelled {
				r = promcp.DoResult{Status: promcp.StatusSuccess, AppliedValue: string(j.State), JobID: id, Job: g.status(j),
					Reason: "an earlier attempt with this key did not finish; the job stands cancelled"}
			}
			return r, nil
		}
		if req.Begin != nil {
			if err := req.Begin(ctx); err != nil {
				return promcp.DoResult{}, err
			}
		}
		ended, err := g.engine.Cancel(ctx, id, "cancelled with "+def.CancelTool())
		r := promcp.DoResult{Status: promcp.StatusSuccess, PreviousValue: string(jobs.Running), AppliedValue: string(ended.State),
			JobID: id, Job: g.status(ended), Reason: ended.Reason}
		switch {
		case errors.Is(err, jobs.ErrEnded):
			r.Status, r.Reason = promcp.StatusFailed, fmt.Sprintf("job %s ended (%s) before the cancel took effect", id, ended.State)
			r.Error = &promcp.Error{Code: promcp.CodeRefused, Message: r.Reason}
		case err != nil:
			r.Status, r.Reason = promcp.StatusPartial, "cancelled; its compensation has not finished: "+err.Error()
		case compensationFailed(ended):
			r.Status = promcp.StatusPartial
		}
		return r, nil
	}
}

func compensationFailed(j jobs.Job) bool {
	return strings.Contains(j.Reason, "compensating step")
}

// await runs a start_* call made as an MCP task: it waits for the job to
// end, sending progress at most once per tick of the server's clock (1 s,
// or 1 % of the job's time when longer) and only when it moved; a
// cancelled ctx (tasks/cancel) cancels the job and runs its compensation.
func (g *Gateway) await(ctx context.Context, first promcp.DoResult, progress func(done, total float64, message string)) promcp.DoResult {
	done := g.engine.Done(first.JobID)
	if done == nil {
		return first
	}
	j, _ := g.engine.Get(first.JobID)
	tick := max(time.Second, j.Total()/100)
	last, lastStep := -1.0, -1
	for {
		j, _ = g.engine.Get(first.JobID)
		if p := j.Progress(g.srv.Clock().Now()); p-last >= 0.01 || j.Step != lastStep {
			progress(p, 1, fmt.Sprintf("%s: step %d of %d, %s", j.Name, j.Step+1, len(j.Steps), j.State))
			last, lastStep = p, j.Step
		}
		select {
		case <-done:
			return g.awaited(first, done)
		case <-ctx.Done():
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			_, _ = g.engine.Cancel(cctx, first.JobID, "the MCP task was cancelled (tasks/cancel)")
			cancel()
			return g.awaited(first, done)
		case <-g.srv.Clock().After(tick):
		}
	}
}

// awaited is a task's final result: the job as it ended.
func (g *Gateway) awaited(first promcp.DoResult, done <-chan struct{}) promcp.DoResult {
	j, _ := g.engine.Get(first.JobID)
	r := first
	r.Job, r.Timestamp = g.status(j), time.Time{}
	r.Compensable, r.CompensationHint = false, nil
	if n := len(j.Applied); n > 0 {
		r.AppliedValue = j.Applied[n-1].Value
	}
	switch j.State {
	case jobs.Succeeded:
		r.Reason = "the job ran to its end"
	default:
		r.Status, r.Reason = promcp.StatusPartial, fmt.Sprintf("the job ended %s: %s", j.State, j.Reason)
	}
	select {
	case <-done:
	default:
		r.Reason = "the job is still ending: " + r.Reason
	}
	return r
}

// asObject is v as a JSON object (map), as a read_* value of type object.
func asObject(v any) map[string]any {
	b, _ := json.Marshal(v)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}

// canStart answers can_do for an intent whose action names a job's
// start_* (on the surface that serves it): the job's first step decided as
// start_* would decide it now, reported under the start_* tool with the
// job's side effects.
func (s *scope) canStart(ctx context.Context, req promcp.CanDoRequest) (promcp.CapabilityReport, bool) {
	g := s.g
	if g.engine == nil {
		return promcp.CapabilityReport{}, false
	}
	a := strings.TrimSpace(req.Intent.Action)
	for _, def := range g.opts.Jobs {
		if a != def.StartTool() && a != def.Name || !s.servesJob(def) {
			continue
		}
		steps, _, failed := g.plan(ctx, def, req.Intent.Value)
		b := &reportBuilder{g: g, s: s, seen: map[string]bool{}, rep: promcp.CapabilityReport{
			Context: promcp.ReportContext{RelatedReads: []string{}, CurrentObservations: map[string]promcp.Observation{}},
		}}
		tool := g.startTool(def)
		if failed != nil {
			b.rep.Blocked = append(b.rep.Blocked, promcp.Blocked{Capability: tool.Name, Source: tool.Source,
				Permission: cmpOr(failed.Permission, promcp.SourceUnreachable), Reason: failed.Reason})
			return b.rep, true
		}
		c, _ := g.set.Get(steps[0].Capability)
		intent := req.Intent
		intent.Value = steps[0].Value
		b.add(ctx, match{c: c, score: 1}, intent)
		for i := range b.rep.Candidates {
			b.rep.Candidates[i].Capability, b.rep.Candidates[i].SideEffects = tool.Name, tool.SideEffects
			b.rep.Candidates[i].MatchReasons = append(b.rep.Candidates[i].MatchReasons, "job_first_step: "+c.Do.Tool)
		}
		for i := range b.rep.Blocked {
			b.rep.Blocked[i].Capability = tool.Name
			b.rep.Blocked[i].Reason = "its first step (" + c.Do.Tool + ") is not allowed now: " + b.rep.Blocked[i].Reason
		}
		b.rep.Metadata.Note = fmt.Sprintf("%s decided on its first step, %s value=%s; each later step is decided by its own action's policy when it runs",
			def.StartTool(), c.Do.Tool, server.FormatValue(steps[0].Value))
		return b.rep, true
	}
	return promcp.CapabilityReport{}, false
}

func cmpOr(p, def promcp.Permission) promcp.Permission {
	if p == "" {
		return def
	}
	return p
}
