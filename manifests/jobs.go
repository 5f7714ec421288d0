package manifests

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// JobKind is how a job is built from its capabilities.
type JobKind string

// Job kinds.
const (
	// JobHold applies a value, holds it for a while, then restores.
	JobHold JobKind = "hold"
	// JobRamp moves a number capability to a target at a rate.
	JobRamp JobKind = "ramp"
	// JobSteps applies a sequence of steps, each with its compensation.
	JobSteps JobKind = "steps"
)

// Job restart behaviours (on_restart).
const (
	JobCompensate = "compensate"
	JobResume     = "resume"
)

// Job is a long-running action (top-level jobs:), served as start_<name>
// (a do_*), read_status_<name> (a read_*) and do_cancel_<name>.
type Job struct {
	Name        string
	Description string
	SideEffects []string
	Kind        JobKind
	// Capability is the capability a hold or a ramp acts on.
	Capability string
	// Value is a hold's value, a ramp's target; start_* may override it.
	Value any
	// For is how long a hold holds.
	For time.Duration
	// Restore is the value a hold restores; nil (HasRestore false) means
	// the value the capability held when the job started.
	Restore    any
	HasRestore bool
	// Rate is a ramp's speed, in the capability's unit per second; Every
	// is the time between its writes (1s when absent).
	Rate  float64
	Every time.Duration
	// Steps are the steps of a steps job.
	Steps []JobStep
	// OnRestart says what becomes of the job when the server stopped while
	// it ran: JobCompensate (the default) or JobResume.
	OnRestart string
}

// JobStep is one step of a steps job: Value applied to Capability, held
// for Hold. Compensate undoes it when the job is cancelled or fails later;
// CompensateRestore means the value the capability held when the job
// started.
type JobStep struct {
	Capability        string
	Value             any
	Hold              time.Duration
	Compensate        any
	HasCompensate     bool
	CompensateRestore bool
}

// Tools of a job.
func (j Job) StartTool() string  { return "start_" + j.Name }
func (j Job) StatusTool() string { return "read_status_" + j.Name }
func (j Job) CancelTool() string { return "do_cancel_" + j.Name }

// Capabilities returns the names of the capabilities the job acts on, in
// first-use order, each once.
func (j Job) Capabilities() []string {
	names := []string{j.Capability}
	if j.Kind == JobSteps {
		names = names[:0]
		for _, s := range j.Steps {
			names = append(names, s.Capability)
		}
	}
	var out []string
	for _, n := range names {
		if n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// MaxJobSteps bounds the writes of one job (a ramp's included).
const MaxJobSteps = 1000

var (
	jobKeys     = []string{"name", "description", "side_effects", "hold", "ramp", "steps", "on_restart"}
	jobHoldKeys = []string{"capability", "value", "for", "restore"}
	jobRampKeys = []string{"capability", "to", "rate", "every"}
	jobStepKeys = []string{"capability", "value", "hold", "compensate"}
)

func (o obj) job(j *Job) {
	j.Name = o.name()
	j.Description = o.str("description")
	j.SideEffects = o.strs("side_effects")
	kinds := 0
	if h, ok := o.sub("hold", jobHoldKeys); ok {
		kinds++
		j.Kind = JobHold
		j.Capability = h.requiredStr("capability", "the capability held")
		j.Value = h.requiredScalar("value", "the value held")
		j.For = h.dur("for")
		h.require("for", `how long, such as "15m"`)
		if h.has("restore") {
			j.Restore, j.HasRestore = h.scalar("restore"), true
		}
	}
	if r, ok := o.sub("ramp", jobRampKeys); ok {
		kinds++
		j.Kind = JobRamp
		j.Capability = r.requiredStr("capability", "the capability ramped")
		j.Value = r.requiredScalar("to", "the target value")
		numIf(r, "rate", &j.Rate, positive, ": %g (want more than 0, in the capability's unit per second)")
		r.require("rate", "the speed, in the capability's unit per second")
		j.Every = r.dur("every")
	}
	if o.has("steps") {
		kinds++
		j.Kind = JobSteps
		j.Steps = list(o, "steps", jobStepKeys, obj.jobStep)
	}
	if kinds != 1 && !o.d.bad[o.path] {
		o.d.add(o.path, ErrMissing, "exactly one of hold, ramp or steps (got %d)", kinds)
	}
	if s, ok := o.d.oneOfValue(o.f["on_restart"], o.at("on_restart"), JobCompensate, JobResume); ok {
		j.OnRestart = s
	}
}

func (o obj) jobStep(s *JobStep) {
	s.Capability = o.requiredStr("capability", "the capability acted on")
	s.Value = o.requiredScalar("value", "the value applied")
	s.Hold = o.dur("hold")
	if o.has("compensate") {
		s.HasCompensate = true
		s.Compensate = o.scalar("compensate")
		if s.Compensate == "restore" {
			s.Compensate, s.CompensateRestore = nil, true
		}
	}
}

// checkJobs checks each job's references against the capabilities: the
// capability exists and has a do:, the values fit its type and
// constraints, a ramp acts on a number, and the job's tools are unique.
func (c *checker) checkJobs() {
	tools := map[string]string{"can_do": ""}
	for i, cp := range c.m.Capabilities {
		tools["read_"+cp.Name] = index("capabilities", i)
		if cp.Do != nil {
			tools[cp.Do.Tool] = index("capabilities", i)
		}
	}
	names := map[string]string{}
	for i := range c.m.Jobs {
		j := &c.m.Jobs[i]
		path := index("jobs", i)
		if j.Name != "" && c.unique(names, "job name", j.Name, join(path, "name")) {
			for _, t := range []string{j.StartTool(), j.StatusTool(), j.CancelTool()} {
				c.tool(tools, t, join(path, "name"))
			}
		}
		switch j.Kind {
		case JobHold:
			if cp := c.jobCapability(j.Capability, join(path, "hold.capability")); cp != nil {
				c.jobValue(cp, j.Value, join(path, "hold.value"))
				if j.HasRestore {
					c.jobValue(cp, j.Restore, join(path, "hold.restore"))
				}
			}
			if j.For <= 0 && c.d.has(join(path, "hold.for")) {
				c.d.add(join(path, "hold.for"), ErrRange, ": %s (want more than 0)", j.For)
			}
		case JobRamp:
			c.checkRamp(j, path)
		case JobSteps:
			if len(j.Steps) == 0 && !c.d.bad[join(path, "steps")] {
				c.d.add(join(path, "steps"), ErrMissing, "steps (want at least one)")
			}
			for k, s := range j.Steps {
				sp := index(join(path, "steps"), k)
				if cp := c.jobCapability(s.Capability, join(sp, "capability")); cp != nil {
					c.jobValue(cp, s.Value, join(sp, "value"))
					if s.HasCompensate && !s.CompensateRestore {
						c.jobValue(cp, s.Compensate, join(sp, "compensate"))
					}
				}
			}
		}
	}
}

func (c *checker) checkRamp(j *Job, path string) {
	cp := c.jobCapability(j.Capability, join(path, "ramp.capability"))
	if cp == nil {
		return
	}
	if cp.Type != TypeNumber && cp.Type != TypeInteger {
		c.d.add(join(path, "ramp.capability"), ErrNotAllowed, ": capability %q is %s (a ramp wants a number or integer capability)", cp.Name, cp.Type)
		return
	}
	c.jobValue(cp, j.Value, join(path, "ramp.to"))
	every := j.Every
	if every == 0 {
		every = time.Second
	}
	if every < 0 {
		c.d.add(join(path, "ramp.every"), ErrRange, ": %s (want more than 0)", every)
		return
	}
	k := cp.Do.Constraints
	if j.Rate > 0 && k.Min != nil && k.Max != nil {
		if n := math.Ceil((*k.Max - *k.Min) / (j.Rate * every.Seconds())); n > MaxJobSteps {
			c.d.add(join(path, "ramp.rate"), ErrRange, ": %g (a ramp over the whole range would take %d writes; want at most %d)", j.Rate, int(n), MaxJobSteps)
		}
	}
}

// jobCapability returns the capability named name, which a job acts on:
// it must exist and have a do:.
func (c *checker) jobCapability(name, path string) *Capability {
	if name == "" {
		return nil
	}
	for i := range c.m.Capabilities {
		cp := &c.m.Capabilities[i]
		if cp.Name != name {
			continue
		}
		if cp.Do == nil {
			c.d.add(path, ErrNotAllowed, ": capability %q has no do: (a job acts only on capabilities with an action)", name)
			return nil
		}
		return cp
	}
	var acts []string
	for _, cp := range c.m.Capabilities {
		if cp.Do != nil {
			acts = append(acts, cp.Name)
		}
	}
	c.d.add(path, ErrBadReference, "capability %q (%s)", name, candidates("capability with a do:", acts))
	return nil
}

func (c *checker) jobValue(cp *Capability, v any, path string) {
	if v == nil || c.d.bad[path] {
		return
	}
	if kind, why := safeValueProblem(cp.Type, cp.Do.Constraints, v); why != "" {
		c.d.add(path, kind, ": %s", why)
	}
}

// String names the job's kind and tools, for lint output.
func (j Job) String() string {
	return fmt.Sprintf("%s job %s (%s, %s, %s)", j.Kind, j.Name, j.StartTool(), j.StatusTool(), j.CancelTool())
}
