package promcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Intent is the structured query can_do answers: what the caller wants to do.
// Every field is optional; an empty intent matches every action.
type Intent struct {
	// SemanticTags are words the capability should carry ("cooling", "zone1").
	SemanticTags []string `json:"semantic_tags,omitempty"`
	// Action is what to do, as a tool name (do_set_fan_speed) or a verb
	// phrase (set fan speed).
	Action string `json:"action,omitempty"`
	// Target names the capability or device acted on (fan_speed, heater).
	Target string `json:"target,omitempty"`
	// Value is the value the caller intends to apply, checked against the
	// capability's constraints when present.
	Value any `json:"value,omitempty"`
	// Location narrows the match to a place (zone1).
	Location string `json:"location,omitempty"`
}

// CanDoRequest is the input of the can_do tool.
type CanDoRequest struct {
	Intent Intent `json:"intent"`
	// Scope is "local" (this gateway, the default) or "fleet". In JSON,
	// scope may instead be PhysMCP's list of device ids (ScopeDevices).
	Scope string `json:"scope,omitempty"`
	// ScopeDevices (extension) is PhysMCP's scope: the device ids
	// (candidates' device_id) that candidates and blocked actions are
	// restricted to; empty means every device. It is the JSON scope when
	// that is an array.
	ScopeDevices []string `json:"-"`
	// Query (extension) is PhysMCP v0.1's input, accepted beside Intent;
	// Resolve maps it to an Intent when Intent is empty.
	Query *PhysMCPQuery `json:"query,omitempty"`
	// TTL (extension) is PhysMCP's hop budget (1..5). A gateway answers for
	// itself: it is accepted and has no effect.
	TTL int `json:"ttl,omitempty"`
}

// canDoRequestJSON is CanDoRequest's wire form: scope a string (proMCP)
// or a list of device ids (PhysMCP).
type canDoRequestJSON struct {
	Intent Intent          `json:"intent"`
	Scope  json.RawMessage `json:"scope,omitempty"`
	Query  *PhysMCPQuery   `json:"query,omitempty"`
	TTL    int             `json:"ttl,omitempty"`
}

// UnmarshalJSON reads scope as proMCP's "local" or "fleet" or as
// PhysMCP's list of device ids.
func (r *CanDoRequest) UnmarshalJSON(data []byte) error {
	var w canDoRequestJSON
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*r = CanDoRequest{Intent: w.Intent, Query: w.Query, TTL: w.TTL}
	s := bytes.TrimSpace(w.Scope)
	switch {
	case len(s) == 0 || string(s) == "null":
	case s[0] == '[':
		if err := json.Unmarshal(s, &r.ScopeDevices); err != nil {
			return fmt.Errorf("scope: %w", err)
		}
	default:
		if err := json.Unmarshal(s, &r.Scope); err != nil {
			return fmt.Errorf("scope: want \"local\", \"fleet\" or a list of device ids: %w", err)
		}
	}
	return nil
}

// MarshalJSON writes scope as the list of device ids when ScopeDevices is
// set, else as Scope.
func (r CanDoRequest) MarshalJSON() ([]byte, error) {
	w := canDoRequestJSON{Intent: r.Intent, Query: r.Query, TTL: r.TTL}
	var err error
	switch {
	case len(r.ScopeDevices) > 0:
		w.Scope, err = json.Marshal(r.ScopeDevices)
	case r.Scope != "":
		w.Scope, err = json.Marshal(r.Scope)
	}
	if err != nil {
		return nil, err
	}
	return json.Marshal(w)
}

// PhysMCPQuery is the query of a PhysMCP can_do (PhysMCP v0.1 §4.3).
type PhysMCPQuery struct {
	SemanticTags []string `json:"semantic_tags,omitempty"`
	Location     string   `json:"location,omitempty"`
	// Direction is increase, decrease, set or toggle.
	Direction string `json:"direction,omitempty"`
	// Target is the property acted on (temperature, fan_speed).
	Target string `json:"target,omitempty"`
	Value  any    `json:"value,omitempty"`
}

// Resolve maps a PhysMCP query to the intent when the request gives no
// intent: semantic_tags, location, target and value carry over as they
// are; direction becomes the intent's action together with the target
// ("increase temperature"), whose verb is filler to the matcher, so that
// an action is matched by what it acts on and the direction says what the
// caller wants done (see ImpliedTarget). An intent, when given, wins.
func (r *CanDoRequest) Resolve() {
	q := r.Query
	if q == nil || !r.Intent.empty() {
		return
	}
	r.Intent = Intent{SemanticTags: q.SemanticTags, Location: q.Location, Target: q.Target, Value: q.Value}
	if q.Direction != "" {
		r.Intent.Action = strings.TrimSpace(q.Direction + " " + q.Target)
	}
}

func (i Intent) empty() bool {
	return len(i.SemanticTags) == 0 && i.Action == "" && i.Target == "" && i.Value == nil && i.Location == ""
}

// ImpliedTarget is PhysMCP's context.implied_target: what the query asks of
// its target, given the target's current value ("decrease
// temperature_zone_3 below current 26.8"); "" when the query says no
// direction or target.
func (q *PhysMCPQuery) ImpliedTarget(current any, hasCurrent bool) string {
	if q == nil || q.Direction == "" || q.Target == "" {
		return ""
	}
	cur := ""
	if hasCurrent {
		cur = fmt.Sprint(current)
	}
	switch {
	case q.Direction == "increase" && cur != "":
		return fmt.Sprintf("increase %s above current %s", q.Target, cur)
	case q.Direction == "decrease" && cur != "":
		return fmt.Sprintf("decrease %s below current %s", q.Target, cur)
	case q.Direction == "set" && q.Value != nil:
		return fmt.Sprintf("set %s to %v", q.Target, q.Value)
	case q.Direction == "toggle" && cur != "":
		return fmt.Sprintf("toggle %s from current %s", q.Target, cur)
	}
	return q.Direction + " " + q.Target
}

// State is a capability's current observation inside a can_do candidate.
type State struct {
	Value     any       `json:"value"`
	Unit      Unit      `json:"unit"`
	Timestamp time.Time `json:"timestamp"`
	// Quality (extension) is the quality of the reading behind Value.
	Quality Quality `json:"quality,omitempty"`
}

// Constraints are the bounds a value must respect. Nil Min and Max and an
// empty EnumValues mean unconstrained.
type Constraints struct {
	Min        *float64 `json:"min"`
	Max        *float64 `json:"max"`
	Unit       Unit     `json:"unit"`
	EnumValues []string `json:"enum_values"`
	// Step (extension): valid values are Min + k*Step.
	Step *float64 `json:"step,omitempty"`
}

// Candidate is an action that matched the intent, with its permission now.
type Candidate struct {
	Capability         string      `json:"capability"`
	Source             string      `json:"source"`
	Confidence         float64     `json:"confidence"`
	Permission         Permission  `json:"permission"`
	CurrentState       *State      `json:"current_state"`
	Constraints        Constraints `json:"constraints"`
	SideEffects        []string    `json:"side_effects"`
	ValidUntil         time.Time   `json:"valid_until"`
	EstimatedLatencyMS int64       `json:"estimated_latency_ms"`
	// Reason (extension) says why the permission is not plainly allowed.
	Reason string `json:"reason,omitempty"`
	// RequiresConfirmation (extension) is true when Confidence is below
	// 0.7: the match is uncertain and the spec says a confirmation step
	// SHOULD come before do_*. An orchestrator must not treat it as
	// confirmed.
	RequiresConfirmation bool `json:"requires_confirmation,omitempty"`
	// DeviceID (PhysMCP extension) is the device (here the gateway) that
	// serves the action.
	DeviceID string `json:"device_id,omitempty"`
	// MatchReasons (PhysMCP extension) say why the action matched:
	// "tag_overlap: cooling, ventilation", "location_match: zone_3",
	// "currently_online".
	MatchReasons []string `json:"match_reasons,omitempty"`
	// RateLimit (PhysMCP extension) is the action's rate limit and what is
	// left of it now; nil when the policy sets none.
	RateLimit *CandidateRateLimit `json:"rate_limit,omitempty"`
	// EstimatedEffectLagMS (PhysMCP extension) is how long the device takes
	// to apply a write (the action's settle time); omitted when zero.
	EstimatedEffectLagMS int64 `json:"estimated_effect_lag_ms,omitempty"`
	// RevertAt (extension) is when the gateway would revert the actuator
	// under its dead-man limit: the armed timer's time, or, when none is
	// armed, now plus the limit (acting now arms it); omitted when the
	// action has no limit.
	RevertAt *time.Time `json:"revert_at,omitempty"`
}

// CandidateRateLimit is a candidate's rate limit in PhysMCP's shape.
type CandidateRateLimit struct {
	// Max is the limit as PhysMCP writes it: "6/hour", "1/min".
	Max string `json:"max"`
	// CurrentWindowRemaining is how many actuations the window still allows.
	CurrentWindowRemaining int `json:"current_window_remaining"`
}

// Blocked is an action that matched the intent but cannot run now.
type Blocked struct {
	Capability string     `json:"capability"`
	Source     string     `json:"source"`
	Permission Permission `json:"permission"`
	Reason     string     `json:"reason"`
	Details    *string    `json:"details"`
	// ValidUntil (extension) is when the block may clear, where known.
	ValidUntil *time.Time `json:"valid_until,omitempty"`
	// DeviceID (PhysMCP extension) is the device (here the gateway) that
	// serves the action, as on a candidate.
	DeviceID string `json:"device_id,omitempty"`
}

// ReportContext lists the observations the decisions depended on.
type ReportContext struct {
	RelatedReads        []string               `json:"related_reads"`
	CurrentObservations map[string]Observation `json:"current_observations"`
	// Location (PhysMCP extension) is the location the query asked about.
	Location string `json:"location,omitempty"`
	// ImpliedTarget (PhysMCP extension) is what a PhysMCP query's direction
	// asks of its target (see PhysMCPQuery.ImpliedTarget).
	ImpliedTarget string `json:"implied_target,omitempty"`
}

// Observation is one reading in ReportContext, keyed by its read_* tool.
type Observation struct {
	Value     any       `json:"value"`
	Unit      Unit      `json:"unit"`
	Timestamp time.Time `json:"timestamp"`
	Quality   Quality   `json:"quality"`
}

// ReportMetadata times the can_do answer.
type ReportMetadata struct {
	Timestamp      time.Time `json:"timestamp"`
	TotalLatencyMS int64     `json:"total_latency_ms"`
	// Note (extension) explains an empty report, such as an intent that
	// matched no capability.
	Note string `json:"note,omitempty"`
	// MeshMetadata (PhysMCP extension) is set on a fleet can_do: its
	// fields appear in metadata beside these.
	*MeshMetadata
}

// MeshMetadata is PhysMCP's metadata of a can_do answered by the fleet's
// floating coordinator.
type MeshMetadata struct {
	// CoordinatorNode is the node that coordinated the query.
	CoordinatorNode string `json:"coordinator_node"`
	// PeersConsulted is how many gateways were asked.
	PeersConsulted int `json:"peers_consulted"`
	// ResponsesReceived is how many answered within the budget.
	ResponsesReceived int `json:"responses_received"`
	// ResponsesDroppedLate is how many answers came after the budget and
	// were dropped (those seen before the coordinator stopped listening).
	ResponsesDroppedLate int `json:"responses_dropped_late"`
	// MeshSizeEstimate is how many gateways are registered in the fleet.
	MeshSizeEstimate int `json:"mesh_size_estimate"`
	// PartitionState is healthy, suspected_partition or isolated.
	PartitionState string `json:"partition_state"`
}

// CapabilityReport is the response of can_do.
type CapabilityReport struct {
	QueryID    string         `json:"query_id"`
	Feasible   bool           `json:"feasible"`
	Candidates []Candidate    `json:"candidates"`
	Blocked    []Blocked      `json:"blocked"`
	Context    ReportContext  `json:"context"`
	Metadata   ReportMetadata `json:"metadata"`
	// Error (extension) explains a query that could not be answered.
	Error *Error `json:"error,omitempty"`

	// Evidence is not sent in the body: the server puts it in the result's
	// provenance envelope (Grounds a *CanDoGrounds).
	Evidence *Evidence `json:"-"`
	// Memo (not sent) is set by a handler on an answer it may give again
	// unchanged: the server keeps the answer's encoding there and fills in
	// only the per-call parts (query_id, metadata's timestamp and latency)
	// when the same Memo comes back. Nil: every answer is encoded anew.
	Memo *Memo `json:"-"`
}

// Normalize fills what the contract requires and the caller may leave out:
// empty lists instead of nil, and Feasible derived from the candidates.
func (r *CapabilityReport) Normalize() {
	if r.Candidates == nil {
		r.Candidates = []Candidate{}
	}
	if r.Blocked == nil {
		r.Blocked = []Blocked{}
	}
	if r.Context.RelatedReads == nil {
		r.Context.RelatedReads = []string{}
	}
	if r.Context.CurrentObservations == nil {
		r.Context.CurrentObservations = map[string]Observation{}
	}
	for i := range r.Candidates {
		c := &r.Candidates[i]
		if c.SideEffects == nil {
			c.SideEffects = []string{}
		}
		if c.Constraints.EnumValues == nil {
			c.Constraints.EnumValues = []string{}
		}
	}
	r.Feasible = r.anyAllowed()
}

func (r CapabilityReport) anyAllowed() bool {
	for _, c := range r.Candidates {
		if c.Permission == Allowed {
			return true
		}
	}
	return false
}

// Validate reports whether r can be sent as a can_do response.
func (r CapabilityReport) Validate() error {
	var errs []error
	if strings.TrimSpace(r.QueryID) == "" {
		errs = append(errs, errors.New("query_id is missing"))
	}
	if r.Feasible != r.anyAllowed() {
		errs = append(errs, fmt.Errorf("feasible is %t but %s", r.Feasible, map[bool]string{
			true: "a candidate is allowed", false: "no candidate is allowed"}[r.anyAllowed()]))
	}
	if r.Candidates == nil || r.Blocked == nil {
		errs = append(errs, errors.New("candidates and blocked must be lists, possibly empty"))
	}
	if r.Context.RelatedReads == nil || r.Context.CurrentObservations == nil {
		errs = append(errs, errors.New("context.related_reads and context.current_observations must be present"))
	}
	if r.Metadata.Timestamp.IsZero() {
		errs = append(errs, errors.New("metadata.timestamp is missing"))
	}
	for i, c := range r.Candidates {
		// at is formatted only for an error: a valid report allocates nothing.
		at := func() string { return fmt.Sprintf("candidates[%d] (%s)", i, c.Capability) }
		if c.Capability == "" || c.Source == "" {
			errs = append(errs, fmt.Errorf("%s: capability and source are required", at()))
		}
		if c.ValidUntil.IsZero() {
			errs = append(errs, fmt.Errorf("%s: valid_until is missing", at()))
		}
		if !c.Permission.Valid() {
			errs = append(errs, fmt.Errorf("%s: permission %q is not a proMCP permission", at(), c.Permission))
		}
		if c.Confidence < 0 || c.Confidence > 1 || c.Confidence != c.Confidence {
			errs = append(errs, fmt.Errorf("%s: confidence %v outside 0..1", at(), c.Confidence))
		}
		if c.SideEffects == nil || c.Constraints.EnumValues == nil {
			errs = append(errs, fmt.Errorf("%s: side_effects and constraints.enum_values must be lists", at()))
		}
		if c.EstimatedLatencyMS < 0 {
			errs = append(errs, fmt.Errorf("%s: estimated_latency_ms is negative", at()))
		}
		if c.CurrentState != nil && c.CurrentState.Timestamp.IsZero() {
			errs = append(errs, fmt.Errorf("%s: current_state.timestamp is missing", at()))
		}
	}
	for i, b := range r.Blocked {
		at := func() string { return fmt.Sprintf("blocked[%d] (%s)", i, b.Capability) }
		if b.Capability == "" || b.Source == "" {
			errs = append(errs, fmt.Errorf("%s: capability and source are required", at()))
		}
		if !b.Permission.Valid() || b.Permission == Allowed {
			errs = append(errs, fmt.Errorf("%s: permission %q is not a blocking permission", at(), b.Permission))
		}
		if strings.TrimSpace(b.Reason) == "" {
			errs = append(errs, fmt.Errorf("%s: reason is missing", at()))
		}
	}
	return contract("can_do", errs)
}
