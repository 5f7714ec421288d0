package sitetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/promcp/promcp-device/audit"
	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/server"
	"github.com/promcp/promcp-device/sim"
)

// Env is a gateway opened for a site test: the MCP server an agent would
// talk to, and the simulated world under it.
type Env struct {
	MCP   *mcpserver.MCPServer
	World *sim.World
	Close func() error
	// Desk holds the calls waiting for a person's approval, which approve
	// and deny steps decide; the Opener gives one when t.Decides().
	Desk *server.Desk
}

// Opener opens t's manifest on the simulator on clk, with its policy,
// recording do_* audit records in aud, the way `serve --sim` does.
type Opener func(ctx context.Context, t *Test, clk *clock.Manual, aud server.Auditor) (*Env, error)

// Result is what running one test gave.
type Result struct {
	Test  *Test
	Steps []StepResult
	// Err is set when the test could not run at all (its gateway did not
	// open): no step ran.
	Err      error
	Duration time.Duration // wall time
}

// Failed counts the failed steps.
func (r *Result) Failed() int {
	n := 0
	for _, s := range r.Steps {
		if s.Failed() {
			n++
		}
	}
	return n
}

// StepResult is one step's outcome.
type StepResult struct {
	Step   *Step
	Index  int       // from 1
	At     time.Time // the simulated time when the step ran
	Title  string    // what the step did
	Got    string    // a summary of the answer
	Checks []Check
	// Body is the call's answer (nil for other steps).
	Body     map[string]any
	Duration time.Duration
}

// Failed says whether a check of the step failed.
func (s StepResult) Failed() bool {
	for _, c := range s.Checks {
		if c.Fail != "" {
			return true
		}
	}
	return false
}

// Check is one expectation of a step and what came back.
type Check struct {
	What, Want, Got string
	Fail            string // "" when it held; else why not
}

// runner holds one test's run.
type runner struct {
	ctx   context.Context
	t     *Test
	c     *client.Client
	clk   *clock.Manual
	world *sim.World
	desk  *server.Desk
	aud   *audit.Recorder
	seen  int
	vars  map[string]any
}

// Run runs t on a gateway that open opens, step by step, on a manual
// clock starting at t.Start: every step runs whatever the ones before
// gave, so that the report shows each difference.
func Run(ctx context.Context, t *Test, open Opener) *Result {
	began := time.Now()
	res := &Result{Test: t}
	defer func() { res.Duration = time.Since(began) }()
	clk := clock.NewManual(t.Start)
	aud := &audit.Recorder{}
	env, err := open(ctx, t, clk, aud)
	if err != nil {
		res.Err = err
		return res
	}
	defer env.Close()
	if t.Faults != nil {
		if err := env.World.Play(t.Faults); err != nil {
			res.Err = fmt.Errorf("scenario %s: %w", t.Scenario, err)
			return res
		}
	}
	c, err := client.NewInProcessClient(env.MCP)
	if err == nil {
		err = c.Start(ctx)
	}
	if err == nil {
		_, err = c.Initialize(ctx, mcp.InitializeRequest{})
	}
	if err != nil {
		res.Err = fmt.Errorf("mcp client: %w", err)
		return res
	}
	defer c.Close()
	r := &runner{ctx: ctx, t: t, c: c, clk: clk, world: env.World, desk: env.Desk, aud: aud, vars: map[string]any{}}
	for i := range t.Steps {
		if ctx.Err() != nil {
			res.Err = ctx.Err()
			break
		}
		began := time.Now()
		sr := r.step(&t.Steps[i])
		sr.Index, sr.Duration = i+1, time.Since(began)
		res.Steps = append(res.Steps, sr)
	}
	return res
}

func (r *runner) step(st *Step) StepResult {
	sr := StepResult{Step: st, At: r.clk.Now()}
	switch {
	case st.Advance > 0:
		r.clk.Advance(st.Advance)
		sr.Title = "advance " + st.Advance.String()
		sr.Got = "clock now " + r.clk.Now().Format("2006-01-02 15:04:05 MST")
	case st.AdvanceTo != "":
		r.advanceTo(st, &sr)
	case st.Set != nil:
		sr.Title = "set " + describeSet(st.Set)
		if err := r.set(st.Set); err != nil {
			sr.Checks = append(sr.Checks, Check{What: "set", Want: "applied", Got: err.Error(), Fail: "error"})
		} else {
			sr.Got = "done"
		}
	case st.Call != "":
		r.call(st, &sr)
	case st.Decide != nil:
		r.decide(st.Decide, &sr)
	}
	if st.Name != "" {
		sr.Title = st.Name + ": " + sr.Title
	}
	return sr
}

// advanceTo moves the clock to the step's instant; one not after now
// fails the step (the clock does not go back).
func (r *runner) advanceTo(st *Step, sr *StepResult) {
	var missing []string
	v := expand(st.AdvanceTo, r.vars, &missing)
	sr.Title = "advance to " + show(v)
	s, _ := v.(string)
	at, err := time.Parse(time.RFC3339Nano, s)
	switch {
	case len(missing) > 0:
		sr.Checks = append(sr.Checks, Check{What: "advance_to", Want: "${" + missing[0] + "} captured by an earlier step", Got: "not captured", Fail: "missing"})
	case err != nil:
		sr.Checks = append(sr.Checks, Check{What: "advance_to", Want: "an RFC 3339 time", Got: show(v), Fail: "not a time"})
	case !at.After(r.clk.Now()):
		sr.Checks = append(sr.Checks, Check{What: "advance_to", Want: "a time after " + r.clk.Now().Format(time.RFC3339), Got: at.Format(time.RFC3339), Fail: "in the past"})
	default:
		r.clk.Advance(at.Sub(r.clk.Now()))
		sr.Got = "clock now " + r.clk.Now().Format("2006-01-02 15:04:05 MST")
	}
}

func (r *runner) call(st *Step, sr *StepResult) {
	var missing []string
	args, _ := expand(st.Args, r.vars, &missing).(map[string]any)
	if args == nil {
		args = map[string]any{}
	}
	who := r.t.Caller
	if st.As != nil {
		who = *st.As
	}
	sr.Title = fmt.Sprintf("call %s %s as %s (%s)", st.Call, show(args), who.Name, who.Role)
	if len(missing) > 0 {
		sr.Checks = append(sr.Checks, Check{What: "captures", Want: "${" + missing[0] + "} captured by an earlier step", Got: "not captured", Fail: "missing"})
		return
	}
	r.seen = len(r.aud.Records())
	ctx := server.WithCaller(r.ctx, server.Caller{Name: who.Name, Role: who.Role})
	res, err := r.callTool(ctx, st.Call, args)
	if err != nil {
		sr.Checks = append(sr.Checks, Check{What: "call", Want: "an answer", Got: err.Error(), Fail: "error"})
		return
	}
	body, isErr := bodyOf(res)
	sr.Body = body
	sr.Got = summary(st.Call, body, isErr, r.clk.Now().Location())
	all := r.aud.Records()
	records := all[r.seen:] // this step's
	r.seen = len(all)
	if st.Expect != nil {
		sr.Checks = r.expect(st.Expect, body, isErr, records)
	}
	for name, p := range st.Capture {
		v, ok := lookup(body, p)
		if !ok {
			sr.Checks = append(sr.Checks, Check{What: "capture " + name, Want: p + " present", Got: "absent", Fail: "absent"})
			continue
		}
		r.vars[name] = v
	}
}

// MaxWait is the most simulated time a call may wait on the clock (a
// do_* call's settle time): while the call is in flight, the runner
// advances the clock to each instant the gateway waits for, up to this.
const MaxWait = time.Minute

// callTool calls name while advancing the clock to each instant that the
// call (not something that waited before it) waits for: simulated time
// passes exactly as the gateway asks, so the answer is the same on every
// run.
func (r *runner) callTool(ctx context.Context, name string, args map[string]any) (*mcp.CallToolResult, error) {
	idle := r.clk.Waiting()
	limit := r.clk.Now().Add(MaxWait)
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := r.c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: args}})
		done <- answer{res, err}
	}()
	poll := time.NewTicker(time.Millisecond)
	defer poll.Stop()
	for {
		select {
		case a := <-done:
			return a.res, a.err
		case <-poll.C:
			if r.clk.Waiting() <= idle {
				continue
			}
			if at, ok := r.clk.NextWake(); ok && !at.After(limit) {
				r.clk.Advance(at.Sub(r.clk.Now()))
			}
		}
	}
}

// bodyOf is a tool result's structured body (or its text, parsed as
// JSON), and whether the result is an error.
func bodyOf(res *mcp.CallToolResult) (map[string]any, bool) {
	var body map[string]any
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		_ = json.Unmarshal(b, &body)
	}
	if body == nil {
		for _, c := range res.Content {
			if tc, ok := c.(mcp.TextContent); ok {
				if json.Unmarshal([]byte(tc.Text), &body) != nil {
					body = map[string]any{"text": tc.Text}
				}
				break
			}
		}
	}
	return body, res.IsError
}

func (r *runner) expect(e *Expect, body map[string]any, isErr bool, records []audit.Record) []Check {
	var out []Check
	if e.IsError != nil {
		c := Check{What: "is_error", Want: fmt.Sprint(*e.IsError), Got: fmt.Sprint(isErr)}
		if isErr != *e.IsError {
			c.Fail = "differs"
		}
		out = append(out, c)
	}
	for _, fc := range e.Body {
		m := fc.M
		if m.HasEquals {
			var missing []string
			m.Equals = expand(m.Equals, r.vars, &missing)
		}
		got, found := lookup(body, fc.Path)
		c := Check{What: fc.Path, Want: m.String(), Got: "absent"}
		if found {
			c.Got = show(got)
		}
		c.Fail = m.Match(got, found)
		out = append(out, c)
	}
	out = append(out, canDoChecks(e, body)...)
	for _, want := range e.Audit {
		out = append(out, auditCheck(want, records))
	}
	return out
}

// canDoChecks checks the candidate, blocked and not_listed expectations
// against a can_do answer's lists (an action matches by its capability,
// the tool's name or the capability's).
func canDoChecks(e *Expect, body map[string]any) []Check {
	cands, blocked := listed(body, "candidates"), listed(body, "blocked")
	var out []Check
	for _, name := range e.Candidates {
		c := Check{What: "candidate " + name, Want: "a candidate", Got: where(name, cands, blocked)}
		if !contains(cands, name) {
			c.Fail = "not a candidate"
		}
		out = append(out, c)
	}
	for _, name := range e.Blocked {
		c := Check{What: "blocked " + name, Want: "blocked", Got: where(name, cands, blocked)}
		if !contains(blocked, name) {
			c.Fail = "not blocked"
		}
		out = append(out, c)
	}
	for _, name := range e.NotListed {
		c := Check{What: "not listed " + name, Want: "neither candidate nor blocked", Got: where(name, cands, blocked)}
		if contains(cands, name) || contains(blocked, name) {
			c.Fail = "listed"
		}
		out = append(out, c)
	}
	return out
}

func where(name string, cands, blocked []string) string {
	switch {
	case contains(cands, name):
		return "a candidate"
	case contains(blocked, name):
		return "blocked"
	}
	return fmt.Sprintf("not listed (candidates %v, blocked %v)", cands, blocked)
}

// listed returns the capability names in body's list key, with their
// permission where it is not allowed ("do_set_vent" and
// "do_set_vent:policy_denied" both match).
func listed(body map[string]any, key string) []string {
	l, _ := body[key].([]any)
	var out []string
	for _, e := range l {
		m, _ := e.(map[string]any)
		name, _ := m["capability"].(string)
		out = append(out, name)
		if p, _ := m["permission"].(string); p != "" {
			out = append(out, name+":"+p)
		}
	}
	return out
}

func auditCheck(want map[string]any, records []audit.Record) Check {
	c := Check{What: "audit", Want: show(want)}
	var got []string
	for _, rec := range records {
		b, _ := json.Marshal(rec)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		ok := true
		for k, v := range want {
			if !equal(v, m[k]) {
				ok = false
			}
		}
		if ok {
			c.Got = show(pick(m, want))
			return c
		}
		got = append(got, show(pick(m, map[string]any{"event": 0, "tool": 0, "permission": 0, "status": 0})))
	}
	c.Fail = "no such record"
	c.Got = fmt.Sprintf("%d records: %v", len(records), got)
	if len(records) == 0 {
		c.Got = "no audit record from this call"
	}
	return c
}

func pick(m map[string]any, keys map[string]any) map[string]any {
	out := map[string]any{}
	for k := range keys {
		if v, ok := m[k]; ok && v != "" {
			out[k] = v
		}
	}
	return out
}

func (r *runner) set(s *Set) error {
	w := r.world
	switch {
	case s.Temperature != nil:
		return w.SetZoneTemperature(s.Zone, *s.Temperature)
	case s.Outside != nil:
		return w.SetZoneOutside(s.Zone, *s.Outside)
	case s.On != nil:
		return w.Drive(r.pin(s.Device), *s.On)
	case s.Input != nil:
		return w.SetInput(s.Device, *s.Input, *s.Volts)
	case s.Pulse != nil:
		return w.SetPulseRate(s.Device, *s.Pulse)
	case s.Online != nil:
		return w.SetMQTTOnline(s.Device, *s.Online)
	case s.Values != nil:
		var errs []error
		for _, k := range slices.Sorted(maps.Keys(s.Values)) {
			errs = append(errs, w.SetMQTTValue(s.Device, k, s.Values[k]))
		}
		return errors.Join(errs...)
	case s.Fault != nil:
		return w.Inject(s.Device, *s.Fault)
	case s.Clear:
		w.Clear(s.Device)
	}
	return nil
}

func (r *runner) pin(device string) string {
	for _, d := range r.t.Loaded.Devices {
		if d.Name == device {
			return d.Pin
		}
	}
	return device
}

func describeSet(s *Set) string {
	switch {
	case s.Temperature != nil:
		return fmt.Sprintf("zone %s temperature = %g °C", s.Zone, *s.Temperature)
	case s.Outside != nil:
		return fmt.Sprintf("zone %s outside = %g °C", s.Zone, *s.Outside)
	case s.On != nil:
		return fmt.Sprintf("%s on=%v", s.Device, *s.On)
	case s.Input != nil:
		return fmt.Sprintf("%s input %d = %g V", s.Device, *s.Input, *s.Volts)
	case s.Pulse != nil:
		return fmt.Sprintf("%s pulse_rate = %g Hz", s.Device, *s.Pulse)
	case s.Online != nil:
		return fmt.Sprintf("%s online=%v", s.Device, *s.Online)
	case s.Values != nil:
		return fmt.Sprintf("%s values %s", s.Device, show(s.Values))
	case s.Fault != nil:
		return fmt.Sprintf("%s fault %s", s.Device, s.Fault.Kind)
	}
	return fmt.Sprintf("%s fault cleared", s.Device)
}
