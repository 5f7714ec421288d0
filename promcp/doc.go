// Package promcp is the proMCP v0.2 contract: the typed response shapes of the
// three tool kinds (read_*, do_*, can_do), their enums, their JSON Schemas, and
// validation that refuses a response the spec does not allow.
//
// The package has no MCP dependency. The server package turns these values into
// MCP tool results; a custom server may use them directly.
//
// # Shapes
//
//   - [ReadResult]: {value, unit, timestamp, quality}
//   - [DoResult]: {status, idempotency_key, applied_value, previous_value,
//     side_effects, compensable, compensation_hint, timestamp}
//   - [CapabilityReport]: {query_id, feasible, candidates, blocked, context, metadata}
//
// Every shape may carry extension fields (the spec's superset rule): a read
// carries quality_reason, a do carries permission and reason when it was
// refused, and any shape carries error when the call failed. Extensions never
// remove or redefine a spec field.
//
// # Validation
//
// Each shape has a Validate method that returns an error wrapping
// [ErrContract] when the value would break the spec: a do result that is
// compensable without a compensation hint, a candidate without valid_until, a
// report whose feasible flag disagrees with its candidates, an unknown enum
// value. The JSON Schemas in schemas/ say the same thing to clients; [Schema]
// returns them.
package promcp
