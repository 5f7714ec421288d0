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
				"description": "Oldest sample you accept, in ms; 0 asks for a new measurement. Omitted or over the tool's TTL: the TTL.",
			},
		},
		"additionalProperties": false,
	}
}

// readOutputSchema is the read kind's schema with the value and unit
// narrowed to what this tool returns, lean (see lean).
func readOutputSchema(t ReadTool) (json.RawMessage, error) {
	m, err := promcp.SchemaMap(promcp.KindRead)
	if err != nil {
		return nil, err
	}
	props := m["properties"].(map[string]any)
	if t.Value != nil {
		props["value"] = orNull(t.Value)
	}
	if t.Unit != "" {
		props["unit"] = map[string]any{"const": string(t.Unit)}
	} else {
		props["unit"] = map[string]any{"type": "null"}
	}
	return json.Marshal(lean(m))
}

// lean drops from a tool's output schema what only documents it: every
// "description" (the kinds' schemas in package promcp, with their
// descriptions, and docs/performance.md document the fields), and a
// property left with no keyword at all (it constrained nothing). The top
// "title" stays: it names the contract. What remains validates exactly
// what the documented schema does. An output schema is sent in every
// tools/list for every tool, and MCP clients use it to check
// structuredContent, not to describe the tool to a model (the tool's
// description and inputSchema do that): this halves tools/list.
func lean(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		switch {
		case k == "description":
			continue
		case k == "properties":
			props := map[string]any{}
			for name, p := range v.(map[string]any) {
				if pm, ok := p.(map[string]any); ok {
					if pm = lean(pm); len(pm) == 0 {
						continue
					}
					p = pm
				}
				props[name] = p
			}
			out[k] = props
			continue
		}
		out[k] = leanValue(v)
	}
	return out
}

func leanValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		return lean(v)
	case []any:
		l := make([]any, len(v))
		for i, e := range v {
			l[i] = leanValue(e)
		}
		return l
	}
	return v
}

// orNull is value's schema or null: {"type": [T, "null"]} when value
// says only its JSON type (and documents it), anyOf otherwise.
func orNull(value map[string]any) map[string]any {
	typ, ok := value["type"].(string)
	for k := range value {
		if k != "type" && k != "description" && k != "title" {
			ok = false
		}
	}
	if ok {
		return map[string]any{"type": []any{typ, "null"}}
	}
	return map[string]any{"anyOf": []any{value, map[string]any{"type": "null"}}}
}

// sharedSchema returns the schema build makes for key, made once per
// Server: a gateway's reads of one unit and value type, and its do_*
// tools of one value type, have the same output schema, and share its
// bytes.
func (s *Server) sharedSchema(key string, build func() (json.RawMessage, error)) (json.RawMessage, error) {
	s.schemaMu.Lock()
	defer s.schemaMu.Unlock()
	if b, ok := s.schemas[key]; ok {
		return b, nil
	}
	b, err := build()
	if err != nil {
		return nil, err
	}
	if s.schemas == nil {
		s.schemas = map[string]json.RawMessage{}
	}
	s.schemas[key] = b
	return b, nil
}

// schemaKey names what an output schema is made from.
func schemaKey(kind promcp.Kind, unit promcp.Unit, value map[string]any) string {
	v, _ := json.Marshal(value) // map keys sorted: the same value, the same text
	return string(kind) + "\x00" + string(unit) + "\x00" + string(v)
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
				"description": "Names this action for retries (see the description); omitted, the server makes one and returns it.",
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
		typed := orNull(withoutBounds(t.Value))
		for _, f := range []string{"applied_value", "previous_value"} {
			props[f] = typed
		}
	}
	return json.Marshal(lean(m))
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
