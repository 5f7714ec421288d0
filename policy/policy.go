// Package policy decides whether an action may run now. The same evaluation
// answers can_do and guards do_*: an agent that skips can_do gets the same
// refusal, with the same permission, as one that asks first.
//
// An evaluation is a pure function of the request (action, value,
// constraints, the readings it depends on, the caller and the time): it
// touches no bus and keeps no state, so it can run anywhere, including on a
// fleet hub that fans out can_do. A refusal is a [Decision] value, never an
// error.
//
// This version guards ranges (min, max, step, enum) and source health: the
// actuator's own reading and the readings its safety depends on (its
// inputs). A reading with quality error blocks the action
// (source_unreachable); one that is stale or degraded keeps it from being
// plainly allowed (requires_human_approval) until the policy issue's
// interlocks decide finer.
// Cooldowns, rate limits, time windows, roles, approval, interlocks and
// quorum plug in as further checks of the same shape.
package policy

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/promcp"
)

// Validity caps, after the spec's guidance: an answer that depends on a
// sensor reading holds for seconds, one that depends only on static
// configuration for minutes.
const (
	MaxSensorValidity = 5 * time.Second
	MaxStaticValidity = time.Minute
)

// Decision is the answer of an evaluation.
type Decision struct {
	Permission promcp.Permission
	// Reason says in one sentence why the action is not plainly allowed.
	Reason string
	// Details adds what a person needs to act on the refusal, if anything.
	Details string
	// ValidUntil is the earliest instant at which the answer could change.
	ValidUntil time.Time
}

// Allowed reports whether the decision lets the action run.
func (d Decision) Allowed() bool { return d.Permission == promcp.Allowed }

// Reading is an observation the decision may depend on.
type Reading struct {
	Value   any
	Time    time.Time
	Quality promcp.Quality
	// TTL is how long the reading stays fresh.
	TTL time.Duration
	// Reason explains a quality that is not good.
	Reason string
}

// Request is what to evaluate.
type Request struct {
	// Action is the do_* tool name.
	Action string
	Type   manifests.ValueType
	// Value is the value to apply; HasValue is false when can_do was asked
	// without one (then only the value-independent checks run).
	Value       any
	HasValue    bool
	Constraints manifests.Constraints
	Unit        string
	// Current is the latest reading of the actuator itself, if any.
	Current *Reading
	// Inputs are the latest readings the action's safety depends on (the
	// manifest's do.depends_on).
	Inputs []Input
	Now    time.Time
}

// Input is a reading an action depends on, named by its read tool.
type Input struct {
	Name string
	Reading
}

// Evaluator runs the checks. The zero value is ready to use.
type Evaluator struct{}

// Evaluate answers whether req may run at req.Now.
func (Evaluator) Evaluate(req Request) Decision {
	until := req.Now.Add(MaxStaticValidity)
	if c := req.Current; c != nil {
		v := min(MaxSensorValidity, max(c.TTL, time.Second))
		until = minTime(until, req.Now.Add(v))
		if c.Quality == promcp.QualityError {
			reason := "the actuator's state cannot be read"
			if c.Reason != "" {
				reason += ": " + c.Reason
			}
			return Decision{Permission: promcp.SourceUnreachable, Reason: reason,
				Details:    "check the device's wiring and bus; the action is refused while its source does not answer",
				ValidUntil: until}
		}
	}
	for _, in := range req.Inputs {
		until = minTime(until, req.Now.Add(min(MaxSensorValidity, max(in.TTL, time.Second))))
	}
	for _, in := range req.Inputs {
		if in.Quality == promcp.QualityError {
			reason := "the action depends on " + in.Name + ", which has no reliable value"
			if in.Reason != "" {
				reason += ": " + in.Reason
			}
			return Decision{Permission: promcp.SourceUnreachable, Reason: reason,
				Details:    "the action is refused until " + in.Name + " reads again; check that sensor's wiring and bus",
				ValidUntil: until}
		}
	}
	if req.HasValue {
		if reason := checkRange(req); reason != "" {
			return Decision{Permission: promcp.OutOfRange, Reason: reason,
				Details: describe(req.Constraints, req.Unit), ValidUntil: req.Now.Add(MaxStaticValidity)}
		}
	}
	var doubtful []string
	if c := req.Current; c != nil && c.Quality != promcp.QualityGood {
		doubtful = append(doubtful, doubt("the actuator's state", c))
	}
	for _, in := range req.Inputs {
		if in.Quality != promcp.QualityGood {
			doubtful = append(doubtful, doubt(in.Name, &in.Reading))
		}
	}
	if len(doubtful) > 0 {
		return Decision{Permission: promcp.RequiresHumanApproval,
			Reason:     "not plainly allowed: " + strings.Join(doubtful, "; "),
			Details:    "a reading the action depends on is not good: act only with a person's confirmation, or wait until it reads good",
			ValidUntil: until}
	}
	return Decision{Permission: promcp.Allowed, ValidUntil: until}
}

// doubt says why a reading is not good: "read_x is degraded (stuck: ...)".
func doubt(name string, r *Reading) string {
	s := name + " is " + string(r.Quality)
	if r.Reason != "" {
		s += " (" + r.Reason + ")"
	}
	return s
}

// CheckValue returns why v breaks a capability's type and constraints, or
// "" when it fits. The capability layer calls it again just before a write,
// so that a value outside the constraints never reaches a bus whatever the
// caller did before.
func CheckValue(t manifests.ValueType, c manifests.Constraints, unit string, v any) string {
	return checkRange(Request{Type: t, Constraints: c, Unit: unit, Value: v, HasValue: true})
}

// checkRange returns why req.Value breaks the constraints, or "".
func checkRange(req Request) string {
	c := req.Constraints
	switch req.Type {
	case manifests.TypeNumber, manifests.TypeInteger:
		f, ok := number(req.Value)
		if !ok {
			return fmt.Sprintf("value %v is not a number", req.Value)
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Sprintf("value %v is not a finite number", f)
		}
		if req.Type == manifests.TypeInteger && f != math.Trunc(f) {
			return fmt.Sprintf("value %v is not an integer", f)
		}
		if c.Min != nil && f < *c.Min {
			return fmt.Sprintf("value %v%s is below the minimum %v%s", f, sp(req.Unit), *c.Min, sp(req.Unit))
		}
		if c.Max != nil && f > *c.Max {
			return fmt.Sprintf("value %v%s is above the maximum %v%s", f, sp(req.Unit), *c.Max, sp(req.Unit))
		}
		if c.Step != nil && *c.Step > 0 {
			base := 0.0
			if c.Min != nil {
				base = *c.Min
			}
			k := (f - base) / *c.Step
			if math.Abs(k-math.Round(k)) > 1e-9*math.Max(1, math.Abs(k)) {
				return fmt.Sprintf("value %v is not on the step %v from %v", f, *c.Step, base)
			}
		}
	case manifests.TypeBoolean:
		if _, ok := req.Value.(bool); !ok {
			return fmt.Sprintf("value %v is not a boolean", req.Value)
		}
	case manifests.TypeEnum:
		s, ok := req.Value.(string)
		if !ok || !slices.Contains(c.Enum, s) {
			return fmt.Sprintf("value %v is not one of %s", req.Value, strings.Join(c.Enum, ", "))
		}
	}
	return ""
}

func describe(c manifests.Constraints, unit string) string {
	var parts []string
	if c.Min != nil {
		parts = append(parts, fmt.Sprintf("min %v%s", *c.Min, sp(unit)))
	}
	if c.Max != nil {
		parts = append(parts, fmt.Sprintf("max %v%s", *c.Max, sp(unit)))
	}
	if c.Step != nil {
		parts = append(parts, fmt.Sprintf("step %v", *c.Step))
	}
	if len(c.Enum) > 0 {
		parts = append(parts, "one of "+strings.Join(c.Enum, ", "))
	}
	if len(parts) == 0 {
		return ""
	}
	return "allowed: " + strings.Join(parts, ", ")
}

func sp(unit string) string {
	if unit == "" {
		return ""
	}
	return " " + unit
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	}
	return 0, false
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
