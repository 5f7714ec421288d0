package server

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/promcp/promcp-device/promcp"
)

func readInputSchema() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"max_age_ms": map[string]any{
				"type": "integer", "minimum": 0,
				"description": "Oldest sample you accept, in milliseconds; 0 asks for a new measurement. Omitted, or more than the tool's freshness (TTL), means the TTL. The timestamp is always the sample's.",
			},
		},
		"additionalProperties": false,
	}
}

// readOutputSchema is the read kind's schema with the value and unit
// narrowed to what this tool returns.
func readOutputSchema(t ReadTool) (json.RawMessage, error) {
	m, err := promcp.SchemaMap(promcp.KindRead)
	if err != nil {
		return nil, err
	}
	props := m["properties"].(map[string]any)
	if t.Value != nil {
		props["value"] = map[string]any{"anyOf": []any{t.Value, map[string]any{"type": "null"}},
			"description": "The observed value; null when quality is error."}
	}
	if t.Unit != "" {
		props["unit"] = map[string]any{"const": string(t.Unit)}
	} else {
		props["unit"] = map[string]any{"type": "null"}
	}
	return json.Marshal(m)
}

// MaxKeyLength is the most characters an idempotency_key may have (the
// input schema's maxLength); the HTTP transport refuses a longer one before
// the body is decoded.
const MaxKeyLength = 200

func doInputSchema(value map[string]any) map[string]any {
	if value == nil {
		value = map[string]any{}
	}
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"value": value,
			"idempotency_key": map[string]any{
				"type": "string", "minLength": 1, "maxLength": MaxKeyLength,
				"description": "Names this action. Retrying with the same key and arguments returns the first result and actuates once; omit it and the server makes one (returned in the result).",
			},
		},
		"required":             []string{"value"},
		"additionalProperties": false,
	}
}

func doOutputSchema(t DoTool) (json.RawMessage, error) {
	m, err := promcp.SchemaMap(promcp.KindDo)
	if err != nil {
		return nil, err
	}
	if t.Value != nil {
		props := m["properties"].(map[string]any)
		typed := withoutBounds(t.Value)
		for _, f := range []string{"applied_value", "previous_value"} {
			old, _ := props[f].(map[string]any)
			props[f] = map[string]any{"anyOf": []any{typed, map[string]any{"type": "null"}}, "description": old["description"]}
		}
	}
	return json.Marshal(m)
}

func canDoInputSchema() map[string]any {
	str := func(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"intent": map[string]any{
				"type":        "object",
				"description": "What you want to do. Every field is optional; the more you give, the sharper the match.",
				"properties": map[string]any{
					"semantic_tags": map[string]any{"type": "array", "items": map[string]any{"type": "string"},
						"description": "Words the capability should carry, such as [\"heating\", \"temperature\"]."},
					"action":   str("The action: a do_* tool name or a phrase such as \"turn on heater\"."),
					"target":   str("The capability or device acted on, such as \"heater\"."),
					"value":    map[string]any{"description": "The value you intend to apply; checked against the constraints."},
					"location": str("Where, such as \"zone1\"."),
				},
				"additionalProperties": false,
			},
			"scope": map[string]any{"default": "local",
				"anyOf": []any{
					map[string]any{"enum": []string{"local", "fleet"}},
					map[string]any{"type": "array", "items": map[string]any{"type": "string", "minLength": 1}, "minItems": 1},
				},
				"description": "local: this gateway; fleet: every gateway reachable (a single gateway answers for itself); or PhysMCP's list of device ids (the candidates' device_id) to restrict candidates and blocked actions to."},
			"query": map[string]any{
				"type":        "object",
				"description": "PhysMCP's query, accepted instead of intent: semantic_tags, location, target and value as in intent; direction (increase, decrease, set, toggle) with the target.",
				"properties": map[string]any{
					"semantic_tags": map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
					"location":      str("Where, such as \"zone_3\"."),
					"direction":     map[string]any{"enum": []string{"increase", "decrease", "set", "toggle"}},
					"target":        str("The property acted on, such as \"temperature\"."),
					"value":         map[string]any{"description": "Optional target value."},
				},
				"required":             []string{"semantic_tags"},
				"additionalProperties": false,
			},
			"ttl": map[string]any{"type": "integer", "minimum": 1, "maximum": 5, "default": 3,
				"description": "PhysMCP's hop budget; this gateway answers for itself, so it has no effect."},
		},
		"anyOf":                []any{map[string]any{"required": []string{"intent"}}, map[string]any{"required": []string{"query"}}},
		"additionalProperties": false,
	}
}

// withoutBounds drops the keywords that bound a value, keeping its type.
func withoutBounds(value map[string]any) map[string]any {
	if value == nil {
		return map[string]any{}
	}
	m := maps.Clone(value)
	for _, k := range []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "enum", "const"} {
		delete(m, k)
	}
	return m
}

func annotations(kind promcp.Kind, compensable bool, title string) mcp.ToolAnnotation {
	t, f := true, false
	a := mcp.ToolAnnotation{Title: title, OpenWorldHint: &f, IdempotentHint: &t}
	switch kind {
	case promcp.KindRead, promcp.KindCanDo:
		a.ReadOnlyHint, a.DestructiveHint = &t, &f
	case promcp.KindDo:
		destructive := !compensable
		a.ReadOnlyHint, a.DestructiveHint = &f, &destructive
	}
	return a
}

func doDescriptionSuffix(t DoTool, keyTTL time.Duration) string {
	var b strings.Builder
	if len(t.SideEffects) > 0 {
		b.WriteString("\n\nSide effects: " + strings.Join(t.SideEffects, "; ") + ".")
	}
	if t.Compensable {
		b.WriteString("\nCompensable: call this tool again with the previous value (the result's compensation_hint) to reverse it.")
	} else {
		b.WriteString("\nNot compensable: call can_do first.")
	}
	fmt.Fprintf(&b, "\nIdempotent by idempotency_key: a retry with the same key and arguments returns the first result without actuating again, for %s.", humanDuration(keyTTL))
	return b.String()
}

func humanDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "the server's lifetime"
	case d%time.Hour == 0:
		return fmt.Sprintf("%d hours", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%d minutes", d/time.Minute)
	}
	return d.String()
}
