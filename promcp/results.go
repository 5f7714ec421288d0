package promcp

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// ErrContract is wrapped by every Validate error: the value would break the
// proMCP contract and must not be sent.
var ErrContract = errors.New("promcp contract violation")

// Error is the extension field that explains a failed call in machine terms.
// It rides inside the typed body of the tool's kind, never instead of it.
type Error struct {
	// Code is a stable snake_case class: see the Code* constants.
	Code string `json:"code"`
	// Message is for people: what is wrong and, where known, what was expected.
	Message string `json:"message"`
	// Field names the tool argument at fault ("value", "intent.action"), if any.
	Field string `json:"field,omitempty"`
}

// Error codes carried in [Error].Code.
const (
	CodeInvalidArgument     = "invalid_argument"
	CodeIdempotencyConflict = "idempotency_conflict"
	CodeSourceUnreachable   = "source_unreachable"
	CodeRefused             = "refused"
	CodeInternal            = "internal"
)

func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%s: %s: %s", e.Code, e.Field, e.Message)
	}
	return e.Code + ": " + e.Message
}

// ReadResult is the response of a read_* tool.
type ReadResult struct {
	// Value is the observed value, or nil when Quality is error.
	Value any `json:"value"`
	// Unit is the value's unit; empty (JSON null) for unitless values.
	Unit Unit `json:"unit"`
	// Timestamp is when the value was sampled, not when it was served.
	Timestamp time.Time `json:"timestamp"`
	// Quality says how far Value can be trusted.
	Quality Quality `json:"quality"`
	// QualityReason (extension) says briefly why Quality is not good.
	QualityReason string `json:"quality_reason,omitempty"`
	// Error (extension) explains a failed read.
	Error *Error `json:"error,omitempty"`

	// Evidence is not sent in the body: the server puts it in the result's
	// provenance envelope (its grounds, warrant and rebuttal).
	Evidence *Evidence `json:"-"`
}

// Validate reports whether r can be sent as a read_* response.
func (r ReadResult) Validate() error {
	var errs []error
	if !r.Quality.Valid() {
		errs = append(errs, fmt.Errorf("quality %q is not one of good, stale, degraded, error", r.Quality))
	}
	if r.Timestamp.IsZero() {
		errs = append(errs, errors.New("timestamp is missing"))
	}
	if r.Quality == QualityGood && r.Value == nil {
		errs = append(errs, errors.New("quality good with a null value"))
	}
	if r.Quality != QualityError && r.Error != nil {
		errs = append(errs, fmt.Errorf("error %q on a read whose quality is %s", r.Error.Code, r.Quality))
	}
	if err := checkNumber("value", r.Value); err != nil {
		errs = append(errs, err)
	}
	return contract("read", errs)
}

// DoResult is the response of a do_* tool.
type DoResult struct {
	Status         Status `json:"status"`
	IdempotencyKey string `json:"idempotency_key"`
	// AppliedValue is the value the device holds after the action, or nil
	// when the action does not set a measurable value or nothing was applied.
	AppliedValue any `json:"applied_value"`
	// PreviousValue is the value before the action, or nil when unknown.
	PreviousValue any `json:"previous_value"`
	// SideEffects are the declared effects of the action; never nil.
	SideEffects []string `json:"side_effects"`
	Compensable bool     `json:"compensable"`
	// CompensationHint names the tool and value that reverse the action. It
	// is required when Compensable is true.
	CompensationHint *string   `json:"compensation_hint"`
	Timestamp        time.Time `json:"timestamp"`

	// Permission (extension) is the policy answer that refused the call; it
	// is set only when Status is failed because of policy or a bad value.
	Permission Permission `json:"permission,omitempty"`
	// Reason (extension) says in words why the call did not succeed.
	Reason string `json:"reason,omitempty"`
	// RequestedValue (extension) is the value asked for when policy clamped
	// it to AppliedValue.
	RequestedValue any `json:"requested_value,omitempty"`
	// Replayed (extension) is true when this is the stored result of an
	// earlier call with the same idempotency key: nothing was actuated now.
	Replayed bool `json:"replayed,omitempty"`
	// Recovered (extension) is true when an earlier attempt with this key
	// started and never finished (the server stopped): the server did not
	// actuate again but read the device back, and Status and AppliedValue
	// say what it found.
	Recovered bool `json:"recovered,omitempty"`
	// Error (extension) explains a failed call.
	Error *Error `json:"error,omitempty"`
	// Success (PhysMCP extension) is PhysMCP's do_* answer: true when Status
	// is success. The server fills it on every do_* result.
	Success *bool `json:"success,omitempty"`

	// RevertAt (extension) is when the gateway will revert the actuator
	// to its safe value under the action's dead-man limit (policy max_on
	// or revert) unless a new do_* renews it; omitted when none is armed.
	RevertAt *time.Time `json:"revert_at,omitempty"`
	// JobID (extension) is the job a start_* call started, for its
	// read_status_* and do_cancel_* tools.
	JobID string `json:"job_id,omitempty"`
	// Job (extension) is the job's status when the call answered (the
	// read_status_* value).
	Job any `json:"job,omitempty"`

	// Evidence is not sent in the body (nor kept for replay): the server
	// puts it in the result's provenance envelope.
	Evidence *Evidence `json:"-"`
}

// Validate reports whether r can be sent as a do_* response.
func (r DoResult) Validate() error {
	var errs []error
	if !r.Status.Valid() {
		errs = append(errs, fmt.Errorf("status %q is not one of success, partial, failed", r.Status))
	}
	if strings.TrimSpace(r.IdempotencyKey) == "" {
		errs = append(errs, errors.New("idempotency_key is missing"))
	}
	if r.SideEffects == nil {
		errs = append(errs, errors.New("side_effects is null (want a list, possibly empty)"))
	}
	if r.Compensable && (r.CompensationHint == nil || strings.TrimSpace(*r.CompensationHint) == "") {
		errs = append(errs, errors.New("compensable is true without a compensation_hint"))
	}
	if r.Timestamp.IsZero() {
		errs = append(errs, errors.New("timestamp is missing"))
	}
	if r.Permission != "" && !r.Permission.Valid() {
		errs = append(errs, fmt.Errorf("permission %q is not a proMCP permission", r.Permission))
	}
	if r.Status == StatusSuccess && r.Permission != "" && r.Permission != Allowed {
		errs = append(errs, fmt.Errorf("status success with permission %s", r.Permission))
	}
	for _, f := range []struct {
		name string
		v    any
	}{{"applied_value", r.AppliedValue}, {"previous_value", r.PreviousValue}} {
		if err := checkNumber(f.name, f.v); err != nil {
			errs = append(errs, err)
		}
	}
	return contract("do", errs)
}

// Hint returns a pointer to s, for DoResult.CompensationHint.
func Hint(s string) *string { return &s }

func contract(kind string, errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s response: %w", ErrContract, kind, errors.Join(errs...))
}

// checkNumber refuses NaN and infinities, which JSON cannot carry.
func checkNumber(field string, v any) error {
	if f, ok := Number(v); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
		return fmt.Errorf("%s is %v, which JSON cannot carry", field, f)
	}
	return nil
}
