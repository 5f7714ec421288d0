package lint

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/promcp/promcp-device/promcp"
)

// compile compiles a JSON Schema as MCP clients would (draft 2020-12 by
// default).
func compile(name string, raw json.RawMessage) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	url := "mem:///" + name + ".json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	return c.Compile(url)
}

// triad applies check to read_*, do_* and can_do tools, with their kind.
func triad(check func(t *Tool, k promcp.Kind) []string) func(*Tool) []string {
	return func(t *Tool) []string {
		k, ok := promcp.KindOf(t.Name)
		if !ok {
			return nil
		}
		return check(t, k)
	}
}

// readKindsHint checks that read_* and can_do tools give the hint pick
// selects as true; msg says what is wrong, given the hint as found.
func readKindsHint(pick func(*Annotations) *bool, msg func(hint string, k promcp.Kind) string) func(*Tool) []string {
	return triad(func(t *Tool, k promcp.Kind) []string {
		if k == promcp.KindDo {
			return nil
		}
		var b *bool
		if t.Annotations != nil {
			b = pick(t.Annotations)
		}
		return when(b == nil || !*b, msg(hint(b), k))
	})
}

func hint(b *bool) string {
	if b == nil {
		return "not given"
	}
	return fmt.Sprint(*b)
}

// declaresCompensable reports whether a do_* tool says it can be undone:
// its output schema fixes compensable to true, or its description says
// "compensable" (not "not compensable" or "non-compensable").
func declaresCompensable(t *Tool) bool {
	c := sub(props(object(t.response())), "compensable")
	if e, _ := c["enum"].([]any); c["const"] == true || len(e) == 1 && e[0] == true {
		return true
	}
	ws := strings.FieldsFunc(strings.ToLower(t.Description), func(r rune) bool { return !unicode.IsLetter(r) })
	for i, w := range ws {
		if w == "compensable" && (i == 0 || ws[i-1] != "not" && ws[i-1] != "non") {
			return true
		}
	}
	return false
}

// mcpRules: our own rules for what MCP carries (M001–M008). I003 already
// asks do_* to declare idempotency_key; M004 checks its type.
var mcpRules = []toolRule{
	{Rule{"M001", Error, "every tool has an inputSchema, an object schema", true}, func(t *Tool) []string {
		if !given(t.InputSchema) {
			return []string{"No inputSchema: MCP requires one (an object schema, {\"type\": \"object\"} for no arguments)."}
		}
		return when(object(t.InputSchema)["type"] != "object", "inputSchema is not an object schema (\"type\": \"object\"): MCP tool arguments are a JSON object.")
	}},
	{Rule{"M002", Warning, "read_*, do_* and can_do declare an MCP outputSchema", true}, triad(func(t *Tool, _ promcp.Kind) []string {
		return when(!given(t.OutputSchema), "No outputSchema: MCP clients cannot check structuredContent against the proMCP contract (responseSchema is not sent over MCP).")
	})},
	{Rule{"M003", Error, "input and output schemas are valid JSON Schemas", true}, func(t *Tool) []string {
		var out []string
		for _, s := range []struct {
			field string
			raw   json.RawMessage
		}{{"inputSchema", t.InputSchema}, {"outputSchema", t.OutputSchema}, {"responseSchema", t.ResponseSchema}, {"response_schema", t.ResponseSchemaAlt}} {
			if !given(s.raw) {
				continue
			}
			if _, err := compile(s.field, s.raw); err != nil {
				out = append(out, fmt.Sprintf("%s is not a valid JSON Schema: %v", s.field, oneLine(err)))
			}
		}
		return out
	}},
	{Rule{"M004", Error, "a do_* idempotency_key is a string", true}, func(t *Tool) []string {
		if !isDo(t.Name) {
			return nil
		}
		k, ok := props(object(t.InputSchema))["idempotency_key"].(map[string]any)
		if !ok {
			return nil // I003
		}
		typ := k["type"]
		okType := typ == "string"
		if ts, isList := typ.([]any); isList {
			okType = slices.Contains(ts, any("string"))
		}
		return when(!okType, fmt.Sprintf("idempotency_key is declared with type %v; want \"string\" so any client can send the key it retries with.", typ))
	}},
	{Rule{"M005", Warning, "read_* and can_do are annotated readOnlyHint: true", true}, readKindsHint(
		func(a *Annotations) *bool { return a.ReadOnlyHint },
		func(h string, k promcp.Kind) string {
			return fmt.Sprintf("readOnlyHint is %s; a %s tool changes nothing, so say readOnlyHint: true (clients may then call it without asking).", h, k)
		})},
	{Rule{"M006", Warning, "read_* and can_do are annotated idempotentHint: true", true}, readKindsHint(
		func(a *Annotations) *bool { return a.IdempotentHint },
		func(h string, k promcp.Kind) string {
			return fmt.Sprintf("idempotentHint is %s; a %s tool can be repeated freely, so say idempotentHint: true.", h, k)
		})},
	{Rule{"M007", Error, "do_* is not annotated readOnlyHint: true", true}, triad(func(t *Tool, k promcp.Kind) []string {
		return when(k == promcp.KindDo && t.Annotations != nil && t.Annotations.ReadOnlyHint != nil && *t.Annotations.ReadOnlyHint,
			"readOnlyHint is true on a do_* tool: clients may run it without asking, yet it has side effects.")
	})},
	{Rule{"M008", Warning, "do_* is destructive unless it declares itself compensable", true}, triad(func(t *Tool, k promcp.Kind) []string {
		if k != promcp.KindDo || t.Annotations == nil || t.Annotations.DestructiveHint == nil || *t.Annotations.DestructiveHint {
			return nil
		}
		return when(!declaresCompensable(t), "destructiveHint is false but the tool does not declare itself compensable (outputSchema compensable const true, or \"compensable\" in its description).")
	})},
}

func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}
