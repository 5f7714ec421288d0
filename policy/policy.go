// Package policy decides whether an action may run now. The same evaluation
// answers can_do and guards do_*: an agent that skips can_do gets the same
// refusal, with the same permission, as one that asks first.
//
// An evaluation is a pure function of the request: the action and value,
// the constraints and rules declared for it, the readings it depends on,
// the caller's role, the history of successful actuations, the approval
// presented, the peers reachable and the time. It touches no bus and keeps
// no state, so it can run anywhere, including on a fleet hub that fans out
// can_do. A refusal is a [Decision] value, never an error. History lives
// behind the [State] interface, updated only by successful actuations,
// which a [Reserver] commits.
//
// # Order of checks
//
// The first check that fails decides, in this order: role
// (permission_insufficient), value range, step, enum and maximum change
// (out_of_range, unless the rules clamp), the actuator's own reading
// (source_unreachable), quorum (partition_no_quorum), time windows and
// interlocks (policy_denied), cooldown (cooldown_active), rate limit
// (rate_limited), approval (requires_human_approval).
//
// Source health runs through all of it: the actuator's own reading and the
// readings its safety depends on (its inputs, the manifest's
// do.depends_on). A reading with quality error refuses the action
// (source_unreachable); one that is stale or degraded keeps it from being
// plainly allowed (requires_human_approval, naming the reading) unless a
// human approved it.
//
// # Safe value
//
// An actuator may declare a safe value (heater off, pump stopped). A move
// to it is checked for role and value only, and by the interlocks whose
// when selects it; cooldowns, rate limits, time windows, approvals, the
// maximum change, quorum and the health of the readings the action depends
// on never refuse it. An interlock without when does not apply to it: to
// refuse the safe direction, write the interlock for that direction.
//
// # Overlapping calls
//
// An evaluation alone is not enough once calls overlap: two callers that
// evaluate before either has written both see no cooldown, and an
// interlock between two actuators can be passed by both at once. A
// [Reserver] closes that gap. The decision and the reservation are one
// step: a caller reserves its actuator only if the decision, taken on the
// state of every actuator tied to it (pending reservations and committed
// actuations, see [View]), still allows it; the bus is written only under
// a reservation; the reservation is then committed (the actuation enters
// the history that cooldowns and rate limits read) or released (nothing
// happened).
//
// A pending reservation counts as an actuation for everybody else: it
// starts a cooldown and takes a place in the rate limit at once, and an
// interlock that watches its actuator sees the value being written as well
// as the one read. A caller whose decision would allow the action while a
// tied actuator is reserved waits until that reservation ends, then
// decides again on fresh readings.
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
	// ValidUntil is the earliest instant at which the answer could change;
	// for a refusal, when it may clear where that is known.
	ValidUntil time.Time
	// Value is the value to apply: the requested one, or the clamped one
	// when Clamped is true.
	Value   any
	Clamped bool
	// Readings are the read_* tools whose readings the decision used.
	Readings []string
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
	Compensable bool
	// Current is the latest reading of the actuator itself (its read tool
	// is CurrentRead), if any.
	Current     *Reading
	CurrentRead string
	// Inputs are the latest readings the action's safety depends on (the
	// manifest's do.depends_on).
	Inputs []Input
	// Readings are other capabilities' latest readings by read_* tool,
	// for interlocks.
	Readings map[string]Reading
	// Role is the caller's role.
	Role string
	// Rules are the action's policy; nil applies the defaults only.
	Rules *manifests.ActionPolicy
	// DefaultRoles may run an action whose rules name no roles; nil lets
	// every role but viewer.
	DefaultRoles []string
	// History holds the times of this action's successful actuations, in
	// any order; only those within the cooldown and rate windows matter.
	History []time.Time
	// Approved is true when a human approved this exact action, value and
	// idempotency key.
	Approved bool
	// Override is true when the call carries a valid emergency override
	// of this action (the policy's emergency block), used by a caller
	// whose role the emergency names (the gateway checks both): it lifts
	// the action's roles, time windows, cooldown, rate limit and
	// approval, never the value's range, an interlock, quorum or an
	// unreadable source. See manifests.Emergency.
	Override bool
	// Peers is how many gateways are reachable, this one included.
	Peers int
	Now   time.Time
	// SafeValue is the actuator's declared safe value, nil for none.
	SafeValue any
	// InProgress is the start of this action's reservation held by another
	// call (an actuation under way, counted in History), zero for none.
	InProgress time.Time
	// HistoryErr is why History could not be read whole (an unreadable
	// state file): an action whose cooldown or rate limit needs it is
	// refused, except a move to the safe value.
	HistoryErr error
	// PendingValues are the values reserved actions are writing now, by
	// the read_* tool of their actuator: an interlock that watches one
	// holds if either the reading or the pending value meets it.
	PendingValues map[string]any
}

// IsSafe reports whether req moves its actuator to its declared safe
// value: TowardSafe of its value.
func (req Request) IsSafe() bool {
	return req.HasValue && TowardSafe(req.Value, req.SafeValue)
}

// TowardSafe is the one meaning of "a move toward safety": value is the
// actuator's declared safe value (safe non-nil, and SameValue). The policy,
// the fleet's shared rules, jobs and the dead-man all ask it. Such a move
// is checked for role, value range and the interlocks written for it only:
// cooldowns, rate limits, time windows, approvals, quorum and job holds
// never refuse it, and a full state disk does not stop it (see the
// gateway's actuation path).
func TowardSafe(value, safe any) bool {
	return safe != nil && value != nil && SameValue(value, safe)
}

// Tolerance is the one relative tolerance of "the same value", used by the
// policy, the gateway's read-back and the dead-man: two numbers are the
// same when they differ by at most Tolerance × max(1, |a|). A device that
// reads back a float32 register (about 7 significant digits) is within
// it; a deliberate change of one part in a million is not.
const Tolerance = 1e-6

// SameValue reports whether a and b are the same value: numbers within
// Tolerance (relative, at least absolute for |a| < 1), anything else
// equal.
func SameValue(a, b any) bool {
	fa, aok := promcp.Number(a)
	fb, bok := promcp.Number(b)
	if aok && bok {
		return math.Abs(fa-fb) <= Tolerance*math.Max(1, math.Abs(fa))
	}
	return a == b
}

// Input is a reading an action depends on, named by its read tool.
type Input struct {
	Name string
	Reading
}

// Evaluator runs the checks. The zero value is ready to use.
type Evaluator struct{}

// Evaluate answers whether req may run at req.Now. It runs the checks of
// the package doc in their order; the first that answers decides.
func (Evaluator) Evaluate(req Request) Decision {
	e := eval{req: req, until: req.Now.Add(MaxStaticValidity), value: req.Value}
	rules := req.Rules
	if rules == nil {
		rules = &manifests.ActionPolicy{Tool: req.Action}
	}
	checks := []func(*eval, *manifests.ActionPolicy) (Decision, bool){
		(*eval).role,             // permission_insufficient
		(*eval).checkValue,       // out_of_range (or clamp)
		(*eval).safeMove,         // a move to the safe value stops here
		(*eval).actuatorReadable, // source_unreachable
		(*eval).inputsReadable,   // source_unreachable
		(*eval).quorum,           // partition_no_quorum
		(*eval).inWindows,        // policy_denied
		(*eval).interlocksHold,   // policy_denied
		(*eval).historyReadable,  // policy_denied
		(*eval).cooldown,         // cooldown_active
		(*eval).rateLimit,        // rate_limited
		(*eval).approval,         // requires_human_approval
		(*eval).readingsGood,     // requires_human_approval
	}
	for _, check := range checks {
		if d, decided := check(&e, rules); decided {
			return d
		}
	}
	reason := ""
	if e.override {
		reason = "allowed under an emergency override, which lifts the action's roles, time windows, cooldown, rate limit and approval (never its range, interlocks or quorum)"
	}
	return e.answer(promcp.Allowed, reason, "", e.until)
}

// safeMove decides a move to the actuator's safe value: role and value
// were checked, and only the interlocks that select it still apply.
func (e *eval) safeMove(rules *manifests.ActionPolicy) (Decision, bool) {
	if !e.req.IsSafe() {
		return Decision{}, false
	}
	return e.safe(rules), true
}

// historyReadable refuses (fails closed) when the action has a cooldown
// or rate limit and its actuation history cannot be read: the limits
// cannot be checked. A move to the safe value stopped before this.
func (e *eval) historyReadable(rules *manifests.ActionPolicy) (Decision, bool) {
	if e.req.HistoryErr == nil || (rules.Cooldown <= 0 && rules.RateLimit == nil) {
		return Decision{}, false
	}
	return e.refuse(promcp.PolicyDenied,
		fmt.Sprintf("the actuation history of %s cannot be read, so its cooldown and rate limit cannot be checked: %v", e.req.Action, e.req.HistoryErr),
		"check the state directory (--state)"+e.safeHint(), e.req.Now.Add(time.Second)), true
}

// actuatorReadable refuses when the actuator's own state cannot be read.
func (e *eval) actuatorReadable(*manifests.ActionPolicy) (Decision, bool) {
	c := e.req.Current
	if c == nil {
		return Decision{}, false
	}
	e.depend(e.req.CurrentRead, *c)
	if c.Quality != promcp.QualityError {
		return Decision{}, false
	}
	reason := "the actuator's state cannot be read"
	if c.Reason != "" {
		reason += ": " + c.Reason
	}
	return e.refuse(promcp.SourceUnreachable, reason,
		"check the device's wiring and bus; the action is refused while its source does not answer", e.until), true
}

// inputsReadable refuses when a reading the action depends on has no
// reliable value. Every input bounds valid_until first.
func (e *eval) inputsReadable(*manifests.ActionPolicy) (Decision, bool) {
	for _, in := range e.req.Inputs {
		e.depend(in.Name, in.Reading)
	}
	for _, in := range e.req.Inputs {
		if in.Quality == promcp.QualityError {
			reason := "the action depends on " + in.Name + ", which has no reliable value"
			if in.Reason != "" {
				reason += ": " + in.Reason
			}
			return e.refuse(promcp.SourceUnreachable, reason,
				"the action is refused until "+in.Name+" reads again; check that sensor's wiring and bus", e.until), true
		}
	}
	return Decision{}, false
}

// quorum refuses when fewer gateways than the rules need are reachable.
func (e *eval) quorum(rules *manifests.ActionPolicy) (Decision, bool) {
	q := rules.Quorum
	if q == nil || max(e.req.Peers, 1) >= q.MinPeers {
		return Decision{}, false
	}
	return e.refuse(promcp.PartitionNoQuorum,
		fmt.Sprintf("%d of the %d gateways this action needs are reachable", max(e.req.Peers, 1), q.MinPeers),
		"the action waits until enough peers are reachable", e.req.Now.Add(MaxSensorValidity)), true
}

func (e *eval) inWindows(rules *manifests.ActionPolicy) (Decision, bool) {
	if e.overridden() {
		return Decision{}, false
	}
	return e.windows(rules.Windows)
}

// overridden reports whether an emergency override lifts the pacing and
// scheduling rules (time windows, cooldown, rate limit, approval) of this
// request; it then says so in the answer's reason.
func (e *eval) overridden() bool {
	if e.req.Override {
		e.override = true
	}
	return e.req.Override
}

func (e *eval) interlocksHold(rules *manifests.ActionPolicy) (Decision, bool) {
	return e.interlocks(rules.Interlocks)
}

// cooldown refuses while the cooldown after the last actuation runs.
func (e *eval) cooldown(rules *manifests.ActionPolicy) (Decision, bool) {
	if rules.Cooldown <= 0 || !e.applies(rules.CooldownWhen) || e.overridden() {
		return Decision{}, false
	}
	req := e.req
	if last, ok := latest(req.History); ok && req.Now.Before(last.Add(rules.Cooldown)) {
		end := last.Add(rules.Cooldown)
		reason := fmt.Sprintf("cooldown of %s after the last actuation at %s is active for %s more",
			rules.Cooldown, last.UTC().Format(time.RFC3339), end.Sub(req.Now).Round(time.Second))
		if !req.InProgress.IsZero() && last.Equal(req.InProgress) {
			reason = fmt.Sprintf("another %s call is actuating now, and its cooldown of %s starts with it", req.Action, rules.Cooldown)
		}
		return e.refuse(promcp.CooldownActive, reason, "retry after valid_until"+e.safeHint(), end), true
	}
	// Allowed now; the next successful actuation starts a cooldown.
	e.cap(req.Now.Add(MaxStaticValidity))
	return Decision{}, false
}

// rateLimit refuses when the actuations in the last period reach the
// limit; otherwise the answer lasts until the oldest of them ages out.
func (e *eval) rateLimit(rules *manifests.ActionPolicy) (Decision, bool) {
	rl := rules.RateLimit
	if rl == nil || e.overridden() {
		return Decision{}, false
	}
	req := e.req
	var in []time.Time
	for _, t := range req.History {
		if t.After(req.Now.Add(-rl.Per)) && !t.After(req.Now) {
			in = append(in, t)
		}
	}
	slices.SortFunc(in, func(a, b time.Time) int { return a.Compare(b) })
	if len(in) >= rl.Max {
		reset := in[len(in)-rl.Max].Add(rl.Per)
		reason := fmt.Sprintf("rate limit of %d actuations per %s reached", rl.Max, rl.Per)
		if !req.InProgress.IsZero() {
			reason += ", counting the one in progress"
		}
		return e.refuse(promcp.RateLimited, reason, "retry after valid_until"+e.safeHint(), reset), true
	}
	if len(in) > 0 {
		// The answer can change when the oldest counted actuation ages out.
		e.cap(in[0].Add(rl.Per))
	}
	return Decision{}, false
}

// approval asks for a person's approval when the rules want one and the
// request carries none.
func (e *eval) approval(rules *manifests.ActionPolicy) (Decision, bool) {
	reason := approvalNeeded(rules.Approval, e.req, e.value)
	if reason == "" || e.req.Approved || e.overridden() {
		return Decision{}, false
	}
	how := "a person who holds the gateway's approval key runs `promcp-device approve` for this tool, value and idempotency_key, and you pass the token as approval; an answer through your MCP client does not approve this action"
	if rules.Approval.Via == manifests.ViaElicitation {
		how = "confirm through your MCP client when it asks, or pass an approval from `promcp-device approve`"
	}
	return e.answer(promcp.RequiresHumanApproval, reason, how, e.until), true
}

// readingsGood keeps the action from being plainly allowed while a reading
// it depends on is stale or degraded, unless a person approved it.
func (e *eval) readingsGood(*manifests.ActionPolicy) (Decision, bool) {
	doubts := doubtful(e.req)
	if len(doubts) == 0 || e.req.Approved || e.overridden() {
		return Decision{}, false
	}
	return e.answer(promcp.RequiresHumanApproval, "not plainly allowed: "+strings.Join(doubts, "; "),
		"a reading the action depends on is not good: act only with a person's confirmation, or wait until it reads good", e.until), true
}

// CheckValue returns why v breaks a capability's type and constraints, or
// "" when it fits. The capability layer calls it again just before a write,
// so that a value outside the constraints never reaches a bus whatever the
// caller did before.
func CheckValue(t manifests.ValueType, c manifests.Constraints, unit string, v any) string {
	return checkRange(t, c, unit, v)
}

type eval struct {
	req      Request
	until    time.Time
	value    any
	clamped  bool
	readings []string
	override bool // an emergency override was used
}

// safe decides a move to the safe value: role and value have passed; only
// an interlock written for this direction (its when selects the value)
// refuses it.
func (e *eval) safe(rules *manifests.ActionPolicy) Decision {
	var ils []manifests.Interlock
	for _, il := range rules.Interlocks {
		if il.When != nil {
			ils = append(ils, il)
		}
	}
	if d, refused := e.interlocks(ils); refused {
		return d
	}
	if c := e.req.Current; c != nil {
		e.depend(e.req.CurrentRead, *c)
	}
	return e.answer(promcp.Allowed,
		fmt.Sprintf("%v is the safe value of %s: cooldowns, rate limits, time windows and approvals do not apply", e.value, e.req.Action),
		"", e.until)
}

// safeHint tells a refused caller that the safe direction stays open.
func (e *eval) safeHint() string {
	if e.req.SafeValue == nil {
		return ""
	}
	return fmt.Sprintf("; moving to the safe value %v is not limited by this", e.req.SafeValue)
}

func (e *eval) cap(t time.Time) {
	if t.After(e.req.Now) && t.Before(e.until) {
		e.until = t
	}
}

func (e *eval) depend(tool string, r Reading) {
	e.cap(e.req.Now.Add(min(MaxSensorValidity, max(r.TTL, time.Second))))
	if tool != "" && !slices.Contains(e.readings, tool) {
		e.readings = append(e.readings, tool)
	}
}

func (e *eval) answer(p promcp.Permission, reason, details string, until time.Time) Decision {
	return Decision{Permission: p, Reason: reason, Details: details, ValidUntil: until,
		Value: e.value, Clamped: e.clamped, Readings: e.readings}
}

func (e *eval) refuse(p promcp.Permission, reason, details string, until time.Time) Decision {
	if !until.After(e.req.Now) {
		until = e.req.Now.Add(MaxSensorValidity)
	}
	return e.answer(p, reason, details, until)
}

func (e *eval) role(rules *manifests.ActionPolicy) (Decision, bool) {
	if e.overridden() {
		// The gateway checked that the caller holds a role the policy's
		// emergency names (PhysMCP's admin is above its operator).
		return Decision{}, false
	}
	roles := rules.Roles
	if roles == nil {
		roles = e.req.DefaultRoles
	}
	ok := false
	if roles == nil {
		ok = e.req.Role != "viewer" && e.req.Role != ""
	} else {
		ok = slices.Contains(roles, e.req.Role)
	}
	if ok {
		return Decision{}, false
	}
	who := e.req.Role
	if who == "" {
		who = "none"
	}
	want := "any role but viewer"
	if roles != nil {
		want = strings.Join(roles, ", ")
	}
	return e.refuse(promcp.PermissionInsufficient,
		fmt.Sprintf("role %s may not run %s", who, e.req.Action),
		"roles allowed: "+want, e.req.Now.Add(MaxStaticValidity)), true
}

func (e *eval) checkValue(rules *manifests.ActionPolicy) (Decision, bool) {
	req := e.req
	if !req.HasValue {
		return Decision{}, false
	}
	c := req.Constraints
	numeric := req.Type == manifests.TypeNumber || req.Type == manifests.TypeInteger
	if rules.Clamp && numeric {
		if f, ok := promcp.Number(req.Value); ok && !math.IsNaN(f) && !math.IsInf(f, 0) {
			g := f
			if c.Min != nil {
				g = max(g, *c.Min)
			}
			if c.Max != nil {
				g = min(g, *c.Max)
			}
			if cur, ok := currentNumber(req.Current); ok && rules.MaxChange != nil && !req.IsSafe() {
				g = min(max(g, cur-*rules.MaxChange), cur+*rules.MaxChange)
			}
			if g != f {
				e.value, e.clamped = g, true
			}
		}
	}
	if reason := checkRange(req.Type, c, req.Unit, e.value); reason != "" {
		return e.refuse(promcp.OutOfRange, reason, describe(c, req.Unit), req.Now.Add(MaxStaticValidity)), true
	}
	if rules.MaxChange != nil && numeric && !req.IsSafe() {
		if cur, ok := currentNumber(req.Current); ok {
			e.depend(req.CurrentRead, *req.Current)
			f, _ := promcp.Number(e.value)
			if math.Abs(f-cur) > *rules.MaxChange+1e-9 {
				return e.refuse(promcp.OutOfRange,
					fmt.Sprintf("a change from %v to %v%s exceeds the maximum change of %v%s per write", cur, f, sp(req.Unit), *rules.MaxChange, sp(req.Unit)),
					fmt.Sprintf("allowed now: %v to %v%s", cur-*rules.MaxChange, cur+*rules.MaxChange, sp(req.Unit)), e.until), true
			}
		}
	}
	return Decision{}, false
}

// applies reports whether a rule limited by when applies to the requested
// value. Without a value (can_do asked generally) a limited rule does not
// apply; do_* always has one.
func (e *eval) applies(when *manifests.ValueCondition) bool {
	if when == nil {
		return true
	}
	if !e.req.HasValue {
		return false
	}
	holds, _ := conditionHolds(when.Above, when.Below, when.Equals, e.value)
	return holds
}

func (e *eval) interlocks(ils []manifests.Interlock) (Decision, bool) {
	for _, il := range ils {
		if !e.applies(il.When) {
			continue
		}
		r, ok := e.req.Readings[il.Read]
		if !ok {
			return e.refuse(promcp.PolicyDenied, il.Reason+": no reading of "+il.Read+" is available (interlocks fail closed)",
				"the action is refused until "+il.Read+" can be read", e.req.Now.Add(MaxSensorValidity)), true
		}
		e.depend(il.Read, r)
		if r.Quality != promcp.QualityGood {
			why := string(r.Quality)
			if r.Reason != "" {
				why += ": " + r.Reason
			}
			return e.refuse(promcp.PolicyDenied,
				fmt.Sprintf("%s: %s is %s, and interlocks fail closed", il.Reason, il.Read, why),
				"the action is refused until "+il.Read+" reads good", e.until), true
		}
		if holds, desc := conditionHolds(il.Above, il.Below, il.Equals, r.Value); holds {
			return e.refuse(promcp.PolicyDenied, fmt.Sprintf("%s (%s %s)", il.Reason, il.Read, desc),
				"the action is refused while the condition holds", e.until), true
		}
		if pv, ok := e.req.PendingValues[il.Read]; ok {
			if holds, desc := conditionHolds(il.Above, il.Below, il.Equals, pv); holds {
				return e.refuse(promcp.PolicyDenied,
					fmt.Sprintf("%s (%s is being set now: the value being written %s)", il.Reason, il.Read, desc),
					"an action in progress may make the condition hold; ask again once it has finished", e.req.Now.Add(time.Second)), true
			}
		}
	}
	return Decision{}, false
}

// conditionHolds reports whether v is above, below or equal to the
// condition's bounds, and describes v. A number compared with above or
// below that is not a number holds (fail closed).
func conditionHolds(above, below *float64, equals, v any) (bool, string) {
	if equals != nil {
		a, aok := promcp.Number(equals)
		b, bok := promcp.Number(v)
		if aok && bok {
			return a == b, fmt.Sprintf("is %v", v)
		}
		return equals == v, fmt.Sprintf("is %v", v)
	}
	f, ok := promcp.Number(v)
	if !ok {
		return true, fmt.Sprintf("is %v, not a number", v)
	}
	if above != nil && f > *above {
		return true, fmt.Sprintf("is %v, above %v", f, *above)
	}
	if below != nil && f < *below {
		return true, fmt.Sprintf("is %v, below %v", f, *below)
	}
	return false, ""
}

func approvalNeeded(a *manifests.Approval, req Request, value any) string {
	if a == nil {
		return ""
	}
	switch {
	case a.Always:
		return req.Action + " always needs a human's approval"
	case a.NotCompensable && !req.Compensable:
		return req.Action + " cannot be reversed, so it needs a human's approval"
	}
	if !req.HasValue {
		return "" // a threshold needs a value; can_do asked without one
	}
	f, ok := promcp.Number(value)
	if !ok {
		return ""
	}
	if a.Above != nil && f > *a.Above {
		return fmt.Sprintf("%s with a value above %v%s needs a human's approval", req.Action, *a.Above, sp(req.Unit))
	}
	if a.Below != nil && f < *a.Below {
		return fmt.Sprintf("%s with a value below %v%s needs a human's approval", req.Action, *a.Below, sp(req.Unit))
	}
	return ""
}

// doubtful lists the readings the action depends on that are neither good
// nor error (those refuse earlier).
func doubtful(req Request) []string {
	var out []string
	if c := req.Current; c != nil && c.Quality != promcp.QualityGood {
		out = append(out, doubt("the actuator's state", c))
	}
	for _, in := range req.Inputs {
		if in.Quality != promcp.QualityGood {
			out = append(out, doubt(in.Name, &in.Reading))
		}
	}
	return out
}

// doubt says why a reading is not good: "read_x is degraded (stuck: ...)".
func doubt(name string, r *Reading) string {
	s := name + " is " + string(r.Quality)
	if r.Reason != "" {
		s += " (" + r.Reason + ")"
	}
	return s
}

func currentNumber(r *Reading) (float64, bool) {
	if r == nil || r.Quality == promcp.QualityError {
		return 0, false
	}
	return promcp.Number(r.Value)
}

func latest(ts []time.Time) (time.Time, bool) {
	var last time.Time
	for _, t := range ts {
		if t.After(last) {
			last = t
		}
	}
	return last, !last.IsZero()
}

// checkRange returns why v breaks the type and constraints, or "".
func checkRange(t manifests.ValueType, c manifests.Constraints, unit string, v any) string {
	switch t {
	case manifests.TypeNumber, manifests.TypeInteger:
		f, ok := promcp.Number(v)
		if !ok {
			return fmt.Sprintf("value %v is not a number", v)
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Sprintf("value %v is not a finite number", f)
		}
		if t == manifests.TypeInteger && f != math.Trunc(f) {
			return fmt.Sprintf("value %v is not an integer", f)
		}
		if c.Min != nil && f < *c.Min {
			return fmt.Sprintf("value %v%s is below the minimum %v%s", f, sp(unit), *c.Min, sp(unit))
		}
		if c.Max != nil && f > *c.Max {
			return fmt.Sprintf("value %v%s is above the maximum %v%s", f, sp(unit), *c.Max, sp(unit))
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
		if _, ok := v.(bool); !ok {
			return fmt.Sprintf("value %v is not a boolean", v)
		}
	case manifests.TypeEnum:
		s, ok := v.(string)
		if !ok || !slices.Contains(c.Enum, s) {
			return fmt.Sprintf("value %v is not one of %s", v, strings.Join(c.Enum, ", "))
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
