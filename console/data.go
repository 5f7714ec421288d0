package console

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/notify"
	"github.com/promcp/promcp-device/promcp"
	"github.com/promcp/promcp-device/server"
)

// snapshotEvery is how long a snapshot is shown to every viewer of the
// same role before the tools are asked again: however many browsers poll,
// the gateway answers the console at most once a second (and its reads
// come from the cache within each capability's TTL).
const snapshotEvery = time.Second

// sweepTimeout bounds one sweep of the tools.
const sweepTimeout = 30 * time.Second

// contextShown is how many waiting requests get can_do's answer beside
// them (the newest); the others show without it.
const contextShown = 20

// snapshot is what the tools answered at one time.
type snapshot struct {
	Taken     time.Time
	Values    []valueRow
	Actuators []actuatorRow
}

// ByLocation groups the values by location, in the order the locations
// first appear; values without a location come last.
func (s *snapshot) ByLocation() []valueGroup {
	var out []valueGroup
	var none []valueRow
	for _, v := range s.Values {
		if v.Location == "" {
			none = append(none, v)
			continue
		}
		i := slices.IndexFunc(out, func(g valueGroup) bool { return g.Location == v.Location })
		if i < 0 {
			out = append(out, valueGroup{Location: v.Location})
			i = len(out) - 1
		}
		out[i].Rows = append(out[i].Rows, v)
	}
	if len(none) > 0 {
		out = append(out, valueGroup{Rows: none})
	}
	return out
}

type valueRow struct {
	Tool, Title, Value, Unit, Quality, Reason string
	At                                        time.Time
	// Capability names the capability (for its chart); Location and
	// Groups place it (the manifest's location: and tool groups).
	Capability, Location string
	Groups               []string
	Charted              bool // its history is kept and drawn
}

type actuatorRow struct {
	Tool, Title, Current, Rules string
	States                      []stateLine
	// Unit is the value's unit; Type its type (number, boolean, enum) and
	// Enum its choices, for the form that sets it by hand.
	Unit, Type string
	Enum       []string
	Min, Max   string
	Location   string
}

// valueGroup is the values of one location.
type valueGroup struct {
	Location string
	Rows     []valueRow
}

// stateLine is one can_do answer for an action: allowed, or blocked and why,
// and until when.
type stateLine struct {
	Permission, Reason, Remaining string
	Allowed                       bool
}

type snapshotCache struct {
	mu     sync.Mutex
	byRole map[string]*snapshot
}

// snapshot returns the values and actuator states as the viewer in ctx
// sees them, at most snapshotEvery old.
func (c *Console) snapshot(ctx context.Context) *snapshot {
	role := server.CallerFrom(ctx).Role
	now := c.cfg.Now()
	c.snap.mu.Lock()
	defer c.snap.mu.Unlock() // one sweep at a time: concurrent viewers wait for it and share it
	if s := c.snap.byRole[role]; s != nil && now.Sub(s.Taken) < snapshotEvery && !now.Before(s.Taken) {
		return s
	}
	s := &snapshot{Taken: now}
	// The sweep is shared: it does not end when the browser that started
	// it goes away.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sweepTimeout)
	defer cancel()
	for _, t := range c.cfg.Server.Tools() {
		switch t.Kind {
		case promcp.KindRead:
			s.Values = append(s.Values, c.readRow(ctx, t.MCP))
		case promcp.KindDo:
			s.Actuators = append(s.Actuators, c.actuatorRow(ctx, t.MCP, now))
		}
	}
	c.keepCurrent(s)
	if c.snap.byRole == nil {
		c.snap.byRole = map[string]*snapshot{}
	}
	c.snap.byRole[role] = s
	return s
}

func (c *Console) readRow(ctx context.Context, t mcp.Tool) valueRow {
	row := valueRow{Tool: t.Name, Title: t.Title, Capability: strings.TrimPrefix(t.Name, "read_")}
	if cp := c.capability(row.Capability); cp != nil {
		row.Location, row.Groups, row.Charted = cp.Location, c.groupsOf(cp.Name), true
	}
	var r promcp.ReadResult
	if err := c.call(ctx, t.Name, map[string]any{}, &r); err != nil {
		row.Quality, row.Reason = string(promcp.QualityError), err.Error()
		return row
	}
	row.Value, row.Unit, row.Quality, row.Reason, row.At = formatValue(r.Value), string(r.Unit), string(r.Quality), r.QualityReason, r.Timestamp
	if r.Error != nil && row.Reason == "" {
		row.Reason = r.Error.Message
	}
	if r.Quality == promcp.QualityError {
		row.Value = "—"
	}
	return row
}

func (c *Console) actuatorRow(ctx context.Context, t mcp.Tool, now time.Time) actuatorRow {
	row := actuatorRow{Tool: t.Name, Title: t.Title, Rules: c.rules(t.Name), Type: string(manifests.TypeNumber)}
	if cp := c.doCapability(t.Name); cp != nil {
		row.Unit, row.Type, row.Location = cp.Unit, string(cp.Type), cp.Location
		con := cp.Do.Constraints
		row.Enum = con.Enum
		if con.Min != nil {
			row.Min = formatValue(*con.Min)
		}
		if con.Max != nil {
			row.Max = formatValue(*con.Max)
		}
	}
	rep, err := c.canDo(ctx, t.Name, nil)
	if err != nil {
		row.States = []stateLine{{Permission: "error", Reason: err.Error()}}
		return row
	}
	row.States = states(rep, now)
	for _, cand := range rep.Candidates {
		if cand.CurrentState != nil {
			row.Current = withUnit(formatValue(cand.CurrentState.Value), row.Unit)
		}
	}
	return row
}

// keepCurrent gives each actuator whose can_do answer carried no current
// state (a blocked action, during a cooldown) the value its own read_*
// tool answered in the same sweep, so the card keeps showing it.
func (c *Console) keepCurrent(s *snapshot) {
	for i := range s.Actuators {
		a := &s.Actuators[i]
		if a.Current != "" {
			continue
		}
		cp := c.doCapability(a.Tool)
		if cp == nil {
			continue
		}
		for _, v := range s.Values {
			if v.Capability == cp.Name && v.Value != "" && v.Value != "—" {
				a.Current = withUnit(v.Value, v.Unit)
			}
		}
	}
}

// groupsOf lists the manifest's tool groups that hold the capability.
func (c *Console) groupsOf(capName string) []string {
	if c.cfg.Manifest == nil {
		return nil
	}
	var out []string
	for _, g := range c.cfg.Manifest.Groups {
		if slices.Contains(g.Members, capName) {
			out = append(out, g.Name)
		}
	}
	return out
}

// canDo asks can_do about one action (and value, when not nil).
func (c *Console) canDo(ctx context.Context, tool string, value any) (promcp.CapabilityReport, error) {
	intent := map[string]any{"action": tool}
	if value != nil {
		intent["value"] = value
	}
	var rep promcp.CapabilityReport
	err := c.call(ctx, "can_do", map[string]any{"intent": intent}, &rep)
	if err == nil && rep.Error != nil {
		err = fmt.Errorf("can_do: %s", rep.Error.Message)
	}
	return rep, err
}

// states turns a can_do report into lines: each candidate (allowed, with
// how long the answer holds and the rate limit left) and each block.
func states(rep promcp.CapabilityReport, now time.Time) []stateLine {
	var out []stateLine
	for _, cand := range rep.Candidates {
		l := stateLine{Permission: string(cand.Permission), Reason: humanize(cand.Reason), Allowed: cand.Permission == promcp.Allowed}
		if !cand.ValidUntil.IsZero() {
			l.Remaining = "holds for " + remaining(cand.ValidUntil, now)
		}
		if cand.RequiresConfirmation {
			l.Reason = strings.TrimPrefix(l.Reason+"; a person approves values beyond the policy's limit", "; ")
		}
		if rl := cand.RateLimit; rl != nil {
			l.Reason = strings.TrimPrefix(fmt.Sprintf("%s; %d of %s left", l.Reason, rl.CurrentWindowRemaining, rl.Max), "; ")
		}
		out = append(out, l)
	}
	for _, b := range rep.Blocked {
		l := stateLine{Permission: string(b.Permission), Reason: humanize(b.Reason)}
		if b.ValidUntil != nil && !strings.Contains(b.Reason, " more") { // "… is active for 4m41s more" says it already
			l.Remaining = "until " + clock(*b.ValidUntil) + ", in " + remaining(*b.ValidUntil, now)
		}
		out = append(out, l)
	}
	return out
}

// call runs a tool of the gateway in process, as the caller in ctx, and
// decodes its typed body into out.
func (c *Console) call(ctx context.Context, name string, args map[string]any, out any) error {
	st := c.cfg.Server.MCP().GetTool(name)
	if st == nil {
		return fmt.Errorf("%s is not served", name)
	}
	var req mcp.CallToolRequest
	req.Params.Name, req.Params.Arguments = name, args
	res, err := st.Handler(ctx, req)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	for _, ct := range res.Content {
		if tc, ok := mcp.AsTextContent(ct); ok {
			if err := json.Unmarshal([]byte(tc.Text), out); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			return nil
		}
	}
	return fmt.Errorf("%s answered no body", name)
}

// requestView is a waiting (or decided) request as the console shows it,
// with what can_do answers about it now.
type requestView struct {
	server.Request
	ValueText string
	Remaining string
	Own       bool   // the viewer asked for it: no buttons
	Why       string // why it needs a person, in a person's words
	Context   []stateLine
	Observed  []string // the readings can_do related to it
}

func (c *Console) requests(ctx context.Context, now time.Time) []requestView {
	if c.cfg.Desk == nil {
		return nil
	}
	me := server.CallerFrom(ctx)
	var out []requestView
	asked := 0
	for _, r := range c.cfg.Desk.Requests() {
		v := requestView{Request: r, ValueText: formatValue(r.Value), Remaining: remaining(r.Expires, now), Own: r.Caller.Name == me.Name,
			Why: notify.Why(r.Tool, r.Reason)}
		if cp := c.doCapability(r.Tool); cp != nil {
			v.ValueText = withUnit(v.ValueText, cp.Unit)
		}
		if r.State == server.Waiting && asked < contextShown {
			asked++
			if rep, err := c.canDo(ctx, r.Tool, r.Value); err != nil {
				v.Context = []stateLine{{Permission: "error", Reason: err.Error()}}
			} else {
				v.Context = states(rep, now)
				for name, o := range rep.Context.CurrentObservations {
					v.Observed = append(v.Observed, fmt.Sprintf("%s = %s (%s)", name, withUnit(formatValue(o.Value), string(o.Unit)), o.Quality))
				}
				slices.Sort(v.Observed)
			}
		}
		out = append(out, v)
	}
	return out
}

// formatValue writes a value for people: numbers plainly, booleans as
// on/off, strings as they are.
func formatValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "—"
	case bool:
		if x {
			return "on"
		}
		return "off"
	case float64:
		return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", x), "0"), ".")
	case string:
		return x
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// remaining writes how long until t, to the second, for people.
func remaining(t, now time.Time) string {
	return notify.Duration(t.Sub(now))
}

// clock writes a time as the console does everywhere: a 24-hour clock in
// the gateway's time zone, with the zone.
func clock(t time.Time) string { return notify.Clock(t) }

// rfc3339 and goDuration find the machine's times in a reason.
var (
	rfc3339 = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`)
	})
	goDuration = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`\b(\d+h)?(\d+m)?\d+(\.\d+)?(s|ms)\b|\b\d+h(\d+m)?\b|\b\d+m\b`)
	})
)

// humanize writes the times in a reason the policy gave for people:
// "at 2026-12-01T17:49:41Z is active for 4m41s more" becomes "at 17:49:41
// UTC is active for 4 min 41 s more".
func humanize(reason string) string {
	reason = rfc3339().ReplaceAllStringFunc(reason, func(s string) string {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return s
		}
		return clock(t)
	})
	return goDuration().ReplaceAllStringFunc(reason, func(s string) string {
		d, err := time.ParseDuration(s)
		if err != nil || d < time.Second {
			return s
		}
		return notify.Duration(d)
	})
}
