package promcp

import (
	"encoding/json"
	"fmt"
	"slices"
)

// Quality says how far a read_* value can be trusted.
type Quality string

// The four quality values of proMCP v0.2.
const (
	// QualityGood: fresh and from a reliable source; safe to act on.
	QualityGood Quality = "good"
	// QualityStale: beyond its declared TTL and no fresher data is available.
	QualityStale Quality = "stale"
	// QualityDegraded: the source answers but operates outside normal parameters.
	QualityDegraded Quality = "degraded"
	// QualityError: the read failed; the value is absent or unreliable.
	QualityError Quality = "error"
)

// Qualities lists every valid Quality, best first.
func Qualities() []Quality {
	return []Quality{QualityGood, QualityStale, QualityDegraded, QualityError}
}

// Valid reports whether q is one of the four spec values.
func (q Quality) Valid() bool { return slices.Contains(Qualities(), q) }

// Status is the outcome of a do_* call.
type Status string

// The three status values of proMCP v0.2.
const (
	StatusSuccess Status = "success"
	StatusPartial Status = "partial"
	StatusFailed  Status = "failed"
)

// Statuses lists every valid Status.
func Statuses() []Status { return []Status{StatusSuccess, StatusPartial, StatusFailed} }

// Valid reports whether s is one of the three spec values.
func (s Status) Valid() bool { return slices.Contains(Statuses(), s) }

// Permission is the answer to "may this action run now", shared by can_do
// candidates, can_do blocked entries and refused do_* calls.
type Permission string

// The nine permission values of proMCP v0.2.
const (
	Allowed                Permission = "allowed"
	RequiresHumanApproval  Permission = "requires_human_approval"
	PolicyDenied           Permission = "policy_denied"
	RateLimited            Permission = "rate_limited"
	CooldownActive         Permission = "cooldown_active"
	OutOfRange             Permission = "out_of_range"
	PermissionInsufficient Permission = "permission_insufficient"
	SourceUnreachable      Permission = "source_unreachable"
	PartitionNoQuorum      Permission = "partition_no_quorum"
)

// Permissions lists the nine valid Permission values in spec order.
func Permissions() []Permission {
	return []Permission{Allowed, RequiresHumanApproval, PolicyDenied, RateLimited,
		CooldownActive, OutOfRange, PermissionInsufficient, SourceUnreachable, PartitionNoQuorum}
}

// Valid reports whether p is one of the nine spec values.
func (p Permission) Valid() bool { return slices.Contains(Permissions(), p) }

// Unit is the unit string of a value ("°C", "%", "bool"...). The empty Unit
// marshals as JSON null, which the spec uses for unitless values.
type Unit string

// MarshalJSON encodes the empty Unit as null.
func (u Unit) MarshalJSON() ([]byte, error) {
	if u == "" {
		return []byte("null"), nil
	}
	return json.Marshal(string(u))
}

// UnmarshalJSON decodes null as the empty Unit.
func (u *Unit) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*u = ""
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("unit: %w", err)
	}
	*u = Unit(s)
	return nil
}
