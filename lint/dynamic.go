package lint

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/promcp/promcp-device/internal/mcpread"
	"github.com/promcp/promcp-device/promcp"
)

// ProvenanceKey is the _meta key of the provenance stamp promcp-device puts
// on every result (server.ProvenanceKey; the cmd tests check they agree).
const ProvenanceKey = "io.promcp/provenance"

// CallTimeout bounds each call of CallReads: a tool that does not answer
// in time is a C001 finding, not a hung lint.
const CallTimeout = 30 * time.Second

// MaxCanDoProbes bounds the can_do calls of CallReads: one with an empty
// intent, then one naming each do_* tool, up to this many.
const MaxCanDoProbes = 32

// dynamicRules: ours, for the answers of a live server (--call-reads).
var dynamicRules = []Rule{
	{"C000", Info, "a read_* that needs arguments is not called", true},
	{"C001", Error, "read_* and can_do answer with structuredContent", true},
	{"C002", Error, "each answer meets the proMCP contract of its kind", true},
	{"C003", Error, "each answer validates against the tool's own outputSchema", true},
	{"C004", Warning, "each answer carries the provenance stamp in _meta (" + ProvenanceKey + ") with all its keys", true},
	{"C005", Error, "the provenance stamp agrees with the answer: its tool, kind, output_schema digest (recomputed from tools/list) and body digest (of the text content)", true},
	{"C006", Warning, "each answer carries the seed's provenance envelope, complete (is_stamped: _tool, _toulmin with exactly claim, grounds, warrant, qualifier, rebuttal, _tags with exactly origin, bucket, freshness, check), in the _meta stamp or inline in the body, naming the tool called", true},
	{"C007", Error, "each reference in the envelope (the warrant's ref and a standing rebuttal item) resolves by resources/read to the tool's standing part, whose SHA-256 is the digest the reference gives and tools/list gives in the tool's _meta (" + promcp.WarrantMetaKey + ")", true},
}

// StampKeys are the keys of a complete provenance stamp, the same on every
// kind. The envelope's keys (promcp.EnvelopeTool, EnvelopeToulmin,
// EnvelopeTags) are there too when it is not inline: C006 checks them.
var StampKeys = []string{"body", "checked", "contract", "kind", "output_schema", "server", "source", "tool"}

func dynamicRule(code string) Rule {
	for _, r := range dynamicRules {
		if r.Code == code {
			return r
		}
	}
	panic("lint: no dynamic rule " + code)
}

// CallReads calls every read_* that takes no required argument and can_do
// (with an empty intent, then naming each do_* tool), never a do_*, and
// adds to r what the answers break: the proMCP contract of their kind
// (its JSON Schema and the promcp package's checks), the tool's own
// outputSchema, and the provenance stamp.
func (s *Session) CallReads(ctx context.Context, r *Report) error {
	v, err := promcp.NewValidator()
	if err != nil {
		return err
	}
	s.schemas = map[string][]byte{}
	s.standing, s.texts = map[string]string{}, map[string][]byte{}
	var dos []string
	for _, t := range s.Tools {
		s.schemas[t.Name] = t.OutputSchema
		var ref struct{ URI, Digest string }
		if raw, ok := t.Meta[promcp.WarrantMetaKey]; ok && json.Unmarshal(raw, &ref) == nil && ref.URI != "" {
			s.standing[ref.URI] = ref.Digest
		}
		if k, ok := promcp.KindOf(t.Name); ok && k == promcp.KindDo {
			dos = append(dos, t.Name)
		}
	}
	for _, t := range s.Tools {
		k, ok := promcp.KindOf(t.Name)
		if !ok || k == promcp.KindDo {
			continue
		}
		var own func(b []byte) error
		if given(t.OutputSchema) {
			if sch, err := compile(t.Name, t.OutputSchema); err == nil {
				own = func(b []byte) error {
					var inst any
					if err := json.Unmarshal(b, &inst); err != nil {
						return err
					}
					return sch.Validate(inst)
				}
			}
		}
		if k == promcp.KindRead {
			if req := required(t.InputSchema); len(req) > 0 {
				r.add(t.Name, dynamicRule("C000"), fmt.Sprintf("not called: it requires %s.", strings.Join(req, ", ")))
				continue
			}
			s.probe(ctx, r, v, t.Name, k, map[string]any{}, "", own)
			continue
		}
		s.probe(ctx, r, v, t.Name, k, map[string]any{"intent": map[string]any{"semantic_tags": []string{}}}, "empty intent", own)
		for i, do := range dos {
			if i >= MaxCanDoProbes {
				break
			}
			s.probe(ctx, r, v, t.Name, k, map[string]any{"intent": map[string]any{"action": do, "semantic_tags": []string{}}}, "intent.action "+do, own)
		}
	}
	return nil
}

func required(input json.RawMessage) []string {
	var out []string
	if rs, ok := object(input)["required"].([]any); ok {
		for _, x := range rs {
			out = append(out, fmt.Sprint(x))
		}
	}
	return out
}

// probe calls one tool and checks its answer.
func (s *Session) probe(ctx context.Context, r *Report, v *promcp.Validator, name string, k promcp.Kind, args map[string]any, what string, own func([]byte) error) {
	at := ""
	if what != "" {
		at = " (" + what + ")"
	}
	add := func(code, msg string) { r.add(name, dynamicRule(code), msg+at) }
	r.Calls++
	cctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	res, err := s.c.CallTool(cctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: args}})
	if err != nil {
		add("C001", "call failed: "+oneLine(err))
		return
	}
	if res.StructuredContent == nil {
		msg := "answer has no structuredContent"
		for _, c := range res.Content {
			if tc, ok := c.(mcp.TextContent); ok {
				msg += ": " + clip(tc.Text, 120)
				break
			}
		}
		add("C001", msg)
		return
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		add("C001", "structuredContent is not JSON: "+err.Error())
		return
	}
	if err := contract(v, k, b); err != nil {
		add("C002", "answer breaks the proMCP "+string(k)+" contract: "+clip(oneLine(err), 300))
	}
	if own != nil {
		if err := own(b); err != nil {
			add("C003", "answer does not validate against the tool's outputSchema: "+clip(oneLine(err), 300))
		}
	}
	var stamp map[string]any
	if res.Meta != nil {
		stamp, _ = res.Meta.AdditionalFields[ProvenanceKey].(map[string]any)
	}
	s.checkEnvelope(ctx, name, stamp, b, add)
	if stamp == nil {
		add("C004", "answer has no provenance stamp in _meta."+ProvenanceKey)
		return
	}
	var absent []string
	for _, key := range StampKeys {
		if _, ok := stamp[key]; !ok {
			absent = append(absent, key)
		}
	}
	if len(absent) > 0 {
		add("C004", "provenance stamp lacks "+strings.Join(absent, ", "))
	}
	var wrong []string
	if v, ok := stamp["tool"]; ok && v != name {
		wrong = append(wrong, fmt.Sprintf("tool %v, not %s", v, name))
	}
	if v, ok := stamp["kind"]; ok && v != string(k) {
		wrong = append(wrong, fmt.Sprintf("kind %v, not %s", v, k))
	}
	if v, ok := stamp["output_schema"]; ok && own != nil {
		if d, err := promcp.SchemaDigest(s.schemas[name]); err == nil && v != d {
			wrong = append(wrong, fmt.Sprintf("output_schema %v, but tools/list gives %s", v, d))
		}
	}
	if v, ok := stamp["body"]; ok && len(res.Content) > 0 {
		if tc, isText := res.Content[0].(mcp.TextContent); isText && v != promcp.BodyDigest([]byte(tc.Text)) {
			wrong = append(wrong, fmt.Sprintf("body %v, but the text content hashes to %s", v, promcp.BodyDigest([]byte(tc.Text))))
		}
	}
	if len(wrong) > 0 {
		add("C005", "provenance stamp disagrees: "+strings.Join(wrong, "; "))
	}
}

// checkEnvelope checks the seed's envelope (is_stamped) of the answer to
// tool: inline in the body b, or in the _meta stamp. An answer with neither
// a stamp nor an inline envelope is C004's alone.
func (s *Session) checkEnvelope(ctx context.Context, tool string, stamp map[string]any, b []byte, add func(code, msg string)) {
	var body map[string]any
	_ = json.Unmarshal(b, &body)
	inline := body[promcp.EnvelopeTool] != nil || body[promcp.EnvelopeToulmin] != nil || body[promcp.EnvelopeTags] != nil
	where, env := "_meta."+ProvenanceKey, stamp
	if inline {
		where, env = "the body (inline)", body
	} else if stamp == nil {
		return
	}
	if ok, why := promcp.IsStamped(env); !ok {
		add("C006", "the provenance envelope in "+where+" is not complete: "+why)
		return
	}
	if env[promcp.EnvelopeTool] != tool {
		add("C006", fmt.Sprintf("the provenance envelope in %s names %v, not %s", where, env[promcp.EnvelopeTool], tool))
	}
	read := func(uri string) ([]byte, error) { return s.readResource(ctx, uri) }
	if _, err := promcp.ResolveEnvelope(env, read, s.standing); err != nil {
		add("C007", "the provenance envelope in "+where+" does not resolve: "+clip(oneLine(err), 300))
	}
}

// readResource returns the text of the resource uri (resources/read),
// each URI read once per session.
func (s *Session) readResource(ctx context.Context, uri string) ([]byte, error) {
	if b, ok := s.texts[uri]; ok {
		return b, nil
	}
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	b, err := mcpread.Text(ctx, s.c, uri)
	if err != nil {
		return nil, err
	}
	s.texts[uri] = b
	return s.texts[uri], nil
}

// contract checks an answer against its kind's JSON Schema and the typed
// checks of the promcp package.
func contract(v *promcp.Validator, k promcp.Kind, b []byte) error {
	if err := v.Validate(string(k), b); err != nil {
		return err
	}
	var typed interface{ Validate() error }
	switch k {
	case promcp.KindRead:
		var x promcp.ReadResult
		if err := json.Unmarshal(b, &x); err != nil {
			return err
		}
		typed = x
	case promcp.KindCanDo:
		var x promcp.CapabilityReport
		if err := json.Unmarshal(b, &x); err != nil {
			return err
		}
		typed = x
	default:
		var x promcp.DoResult
		if err := json.Unmarshal(b, &x); err != nil {
			return err
		}
		typed = x
	}
	return typed.Validate()
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
