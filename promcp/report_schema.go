package promcp

import (
	"errors"
	"fmt"
)

// CheckSchema reports whether r, once encoded, is a document the can_do
// output schema (schemas/can_do.json) accepts: the schema's checks done on
// the Go value, without encoding and decoding it. It is exactly the schema
// (TestCheckSchemaEqualsSchema keeps them equal over generated reports);
// Validate adds what the contract says beyond it (feasible derived from
// the candidates, timestamps set, a reason that is not blank). A value
// json.Marshal cannot encode (NaN, a year past 9999) is not its concern:
// encoding fails first.
func (r *CapabilityReport) CheckSchema() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if r.QueryID == "" {
		bad("query_id is empty")
	}
	if r.Candidates == nil || r.Blocked == nil {
		bad("candidates and blocked must be lists")
	}
	if r.Context.RelatedReads == nil || r.Context.CurrentObservations == nil {
		bad("context.related_reads and context.current_observations must be present")
	}
	if r.Metadata.TotalLatencyMS < 0 {
		bad("metadata.total_latency_ms is negative")
	}
	for i := range r.Candidates {
		if err := r.Candidates[i].checkSchema(); err != nil {
			bad("candidates[%d]: %w", i, err)
		}
	}
	for i := range r.Blocked {
		b := &r.Blocked[i]
		if b.Capability == "" || b.Source == "" || b.Reason == "" {
			bad("blocked[%d]: capability, source and reason must not be empty", i)
		}
		if !b.Permission.Valid() || b.Permission == Allowed {
			bad("blocked[%d]: permission %q is not a blocking permission", i, b.Permission)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: can_do response: %w", ErrContract, errors.Join(errs...))
}

func (c *Candidate) checkSchema() error {
	switch {
	case c.Capability == "" || c.Source == "":
		return errors.New("capability and source must not be empty")
	case c.Confidence < 0 || c.Confidence > 1:
		return fmt.Errorf("confidence %v outside 0..1", c.Confidence)
	case !c.Permission.Valid():
		return fmt.Errorf("permission %q is not a proMCP permission", c.Permission)
	case c.CurrentState != nil && c.CurrentState.Quality != "" && !c.CurrentState.Quality.Valid():
		return fmt.Errorf("current_state.quality %q is not a proMCP quality", c.CurrentState.Quality)
	case c.Constraints.EnumValues == nil || c.SideEffects == nil:
		return errors.New("constraints.enum_values and side_effects must be lists")
	case c.Constraints.Step != nil && !(*c.Constraints.Step > 0):
		return fmt.Errorf("constraints.step %v is not positive", *c.Constraints.Step)
	case c.EstimatedLatencyMS < 0 || c.EstimatedEffectLagMS < 0:
		return errors.New("estimated_latency_ms and estimated_effect_lag_ms must not be negative")
	case c.RateLimit != nil && (!rateLimitMax(c.RateLimit.Max) || c.RateLimit.CurrentWindowRemaining < 0):
		return fmt.Errorf("rate_limit %q/%d: want max like \"6/hour\" and a remaining count not negative",
			c.RateLimit.Max, c.RateLimit.CurrentWindowRemaining)
	}
	return nil
}

// rateLimitMax is the schema's pattern "^[0-9]+/": digits, then a slash.
func rateLimitMax(s string) bool {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i > 0 && i < len(s) && s[i] == '/'
}
