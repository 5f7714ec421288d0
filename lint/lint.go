// Package lint checks whether an MCP server's tools follow proMCP: the
// rules of the reference linter (github.com/alexlqi/promcp, promcp-lint)
// under the same codes, meanings and severities (N names, D descriptions,
// I inputs, R and SE response schemas, S the surface), plus rules of our
// own for what MCP itself carries (M: input and output schemas,
// annotations), for the answers of a live server (C: --call-reads) and for
// drift against a manifest (X). It reads a tool list (a JSON file, or
// tools/list of a live server over streamable HTTP or stdio) and never
// calls a do_* tool.
//
// Rules are tables, one file per family; Rules lists them all.
package lint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Severity is how much a finding matters: errors always fail, warnings
// fail under --strict, info never.
type Severity string

// The three severities, as the reference linter names them.
const (
	Error   Severity = "error"
	Warning Severity = "warning"
	Info    Severity = "info"
)

// A Finding is one broken rule: where (a tool's name, or "server" for the
// surface), which rule and why.
type Finding struct {
	Tool     string   `json:"tool"`
	Code     string   `json:"code"`
	Severity Severity `json:"severity"`
	Message  string   `json:"message"`
	// Suggestion is the proMCP name proposed for the tool (naming
	// findings on a server that does not follow proMCP); "" for none.
	Suggestion string `json:"suggestion,omitempty"`
}

// Rule describes one check.
type Rule struct {
	Code     string
	Severity Severity
	// Summary says what the rule asks for, in a line.
	Summary string
	// Ours is true for the rules this project adds (M, C, X); false for the
	// reference linter's.
	Ours bool
}

// toolRule checks one tool; it returns a message per breach.
type toolRule struct {
	Rule
	check func(t *Tool) []string
}

// surfaceRule checks the whole tool list.
type surfaceRule struct {
	Rule
	check func(ts []*Tool) []string
}

// Rules lists every rule, by code.
func Rules() []Rule {
	var rs []Rule
	for _, fam := range toolFamilies() {
		for _, r := range fam {
			rs = append(rs, r.Rule)
		}
	}
	for _, r := range surfaceRules {
		rs = append(rs, r.Rule)
	}
	rs = append(rs, dynamicRules...)
	rs = append(rs, driftRules...)
	slices.SortFunc(rs, func(a, b Rule) int { return strings.Compare(a.Code, b.Code) })
	return rs
}

func toolFamilies() [][]toolRule {
	return [][]toolRule{namingRules, descriptionRules, inputRules, responseRules, mcpRules}
}

// Annotations are the MCP tool annotations; nil fields were not given.
type Annotations struct {
	ReadOnlyHint    *bool `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool `json:"openWorldHint,omitempty"`
}

// Tool is one tool as tools/list or a tool-list file gives it.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
	// OutputSchema is the MCP output schema; ResponseSchema the field
	// proMCP linters read (also spelt response_schema).
	OutputSchema      json.RawMessage `json:"outputSchema,omitempty"`
	ResponseSchema    json.RawMessage `json:"responseSchema,omitempty"`
	ResponseSchemaAlt json.RawMessage `json:"response_schema,omitempty"`
	Annotations       *Annotations    `json:"annotations,omitempty"`
	// Meta is the tool's _meta: promcp-device gives there the URI and
	// digest of the tool's standing part (promcp.WarrantMetaKey).
	Meta map[string]json.RawMessage `json:"_meta,omitempty"`
}

// label is the name findings are reported under.
func (t *Tool) label() string {
	if t.Name == "" {
		return "(unnamed)"
	}
	return t.Name
}

// response is the response schema the R rules read: outputSchema, else
// responseSchema, else response_schema; nil when none is given.
func (t *Tool) response() json.RawMessage {
	for _, s := range []json.RawMessage{t.OutputSchema, t.ResponseSchema, t.ResponseSchemaAlt} {
		if given(s) {
			return s
		}
	}
	return nil
}

func given(s json.RawMessage) bool {
	return len(bytes.TrimSpace(s)) > 0 && !bytes.Equal(bytes.TrimSpace(s), []byte("null"))
}

// object decodes a schema (or part of one) as a JSON object; anything else
// is an empty object.
func object(raw json.RawMessage) map[string]any {
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil || m == nil {
		return map[string]any{}
	}
	return m
}

// sub returns m[key] as an object, or an empty one.
func sub(m map[string]any, key string) map[string]any {
	if v, ok := m[key].(map[string]any); ok {
		return v
	}
	return map[string]any{}
}

// props is a schema's "properties".
func props(schema map[string]any) map[string]any { return sub(schema, "properties") }

// enum is a schema's "enum" values that are strings.
func enum(schema map[string]any) []string {
	var out []string
	if vs, ok := schema["enum"].([]any); ok {
		for _, v := range vs {
			if s, ok := v.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// ParseTools reads a tool list: a JSON array of tools, or an object with
// a "tools" array (as tools/list answers and `tools --json` prints).
func ParseTools(data []byte) ([]*Tool, error) {
	data = bytes.TrimSpace(data)
	var list []json.RawMessage
	switch {
	case len(data) > 0 && data[0] == '[':
		if err := json.Unmarshal(data, &list); err != nil {
			return nil, fmt.Errorf("tool list: %w", err)
		}
	case len(data) > 0 && data[0] == '{':
		var obj struct {
			Tools *[]json.RawMessage `json:"tools"`
		}
		if err := json.Unmarshal(data, &obj); err != nil {
			return nil, fmt.Errorf("tool list: %w", err)
		}
		if obj.Tools == nil {
			return nil, errors.New(`tool list: an object must have a "tools" array`)
		}
		list = *obj.Tools
	default:
		return nil, errors.New(`tool list: want a JSON array of tools or {"tools": [...]}`)
	}
	tools := make([]*Tool, 0, len(list))
	for i, raw := range list {
		var t Tool
		if err := json.Unmarshal(raw, &t); err != nil {
			return nil, fmt.Errorf("tool list: tools[%d]: %w", i, err)
		}
		tools = append(tools, &t)
	}
	if len(tools) == 0 {
		return nil, errors.New("tool list: no tools")
	}
	return tools, nil
}

// Report is the outcome of a lint: findings about the surface as a whole
// and, per tool in the order served, its findings.
type Report struct {
	Target string
	Server []Finding
	Tools  []ToolReport
	// Calls counts the tool calls CallReads made.
	Calls int
	// Stderr is what a stdio server wrote on its standard error while it
	// was linted (Session.Finish): reported in its own section, never
	// mixed with the findings.
	Stderr string
}

// ToolReport is one tool's findings.
type ToolReport struct {
	Name     string    `json:"name"`
	Findings []Finding `json:"findings"`
}

// Check applies every static rule to tools.
func Check(target string, tools []*Tool) *Report {
	r := &Report{Target: target}
	for _, t := range tools {
		tr := ToolReport{Name: t.label(), Findings: []Finding{}}
		for _, fam := range toolFamilies() {
			for _, rule := range fam {
				for _, msg := range rule.check(t) {
					f := Finding{Tool: t.label(), Code: rule.Code, Severity: rule.Severity, Message: msg}
					withSuggestion(&f, t)
					tr.Findings = append(tr.Findings, f)
				}
			}
		}
		r.Tools = append(r.Tools, tr)
	}
	for _, rule := range surfaceRules {
		for _, msg := range rule.check(tools) {
			r.Server = append(r.Server, Finding{Tool: "server", Code: rule.Code, Severity: rule.Severity, Message: msg})
		}
	}
	return r
}

// add records a finding about tool (or "server").
func (r *Report) add(tool string, rule Rule, msg string) {
	f := Finding{Tool: tool, Code: rule.Code, Severity: rule.Severity, Message: msg}
	if tool == "server" {
		r.Server = append(r.Server, f)
		return
	}
	for i := range r.Tools {
		if r.Tools[i].Name == tool {
			r.Tools[i].Findings = append(r.Tools[i].Findings, f)
			return
		}
	}
	r.Tools = append(r.Tools, ToolReport{Name: tool, Findings: []Finding{f}})
}

// All returns every finding, server first.
func (r *Report) All() []Finding {
	out := slices.Clone(r.Server)
	for _, t := range r.Tools {
		out = append(out, t.Findings...)
	}
	return out
}

// Count returns the number of findings of each severity.
func (r *Report) Count() (errs, warnings, info int) {
	for _, f := range r.All() {
		switch f.Severity {
		case Error:
			errs++
		case Warning:
			warnings++
		default:
			info++
		}
	}
	return
}

// Pass reports whether the lint passes: no error, and no warning when
// strict.
func (r *Report) Pass(strict bool) bool {
	e, w, _ := r.Count()
	return e == 0 && (!strict || w == 0)
}
