package server

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/promcp/promcp-device/promcp"
)

// ProvenanceKey is the _meta key under which every tool result says where
// it came from and why it can be trusted. The stamp is non-destructive:
// structuredContent and its text copy are left exactly as the contract
// says (unless the envelope is inline, see WithProvenance); clients that
// do not know the key ignore it.
const ProvenanceKey = "io.promcp/provenance"

// Placement is where the provenance envelope of each result goes.
type Placement string

const (
	// ProvenanceMeta puts the envelope (_tool, _toulmin, _tags) in the
	// _meta stamp (ProvenanceKey), beside the stamp's own keys: the body
	// is exactly the contract's. The default.
	ProvenanceMeta Placement = "meta"
	// ProvenanceInline puts the envelope in the result body, the seed's
	// form {...result, _tool, _toulmin, _tags}, and declares the three
	// properties in every tool's output schema (so tools/list shows them
	// and output-schema validation still passes). The _meta stamp keeps
	// its own keys.
	ProvenanceInline Placement = "inline"
)

// WithProvenance sets where the provenance envelope goes; the default is
// ProvenanceMeta.
func WithProvenance(p Placement) Option { return func(s *Server) { s.placement = p } }

// WithWarrant names the configuration the server runs, for the warrant of
// every envelope: the SHA-256 digests ("sha256:<hex>") of the manifest and
// of the policy file; "" for none.
func WithWarrant(manifest, policy string) Option {
	return func(s *Server) { s.manifestDigest, s.policyDigest = manifest, policy }
}

// provenance is the fixed part of a tool's stamp: which server and tool,
// of which triad kind, about which source (the device; for can_do, the
// gateway it answers for), under which contract and output schema (its
// promcp.SchemaDigest, which a client recomputes from tools/list), and
// where the envelope is. Every kind has the same keys.
func provenance(server, version string, kind promcp.Kind, tool mcp.Tool, source string, placement Placement) map[string]any {
	digest, err := promcp.SchemaDigest(tool.RawOutputSchema)
	if err != nil {
		digest = "" // register compiled the schema first: unreachable
	}
	if source == "" {
		source = server
	}
	return map[string]any{
		"server":        server + " " + version,
		"tool":          tool.Name,
		"kind":          string(kind),
		"contract":      "proMCP v0.2",
		"output_schema": digest,
		"source":        source,
		"placement":     string(placement),
	}
}

// withEnvelopeSchema declares the envelope's properties in an output
// schema, for ProvenanceInline.
func withEnvelopeSchema(out json.RawMessage) (json.RawMessage, error) {
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		return nil, err
	}
	props, _ := m["properties"].(map[string]any)
	if props == nil {
		props = map[string]any{}
		m["properties"] = props
	}
	maps.Copy(props, promcp.EnvelopeSchema())
	return json.Marshal(m)
}

// finish makes the tool result of body, whose JSON is b: the envelope
// inline (ProvenanceInline) or in the stamp, and the stamp: with the
// digest of the body sent (promcp.BodyDigest of the text content, the
// same bytes as structuredContent) and how the body was checked against
// the contract before it was sent: "typed" (the typed check proven equal
// to the output schema), "json-schema" (the JSON Schema validator), or
// "replaced" (the handler's body broke the contract and this typed
// internal error was sent instead).
//
// The stamp is sent as JSON built here: the envelope and the two keys of
// the call, then the tool's fixed keys encoded once at registration
// (stampTail). A read tool keeps its last result (stampMemo): a call whose
// body equals it (a cached sample read again) is answered with the same
// bytes, neither the body nor the stamp encoded again (reuse).
func (s *Server) finish(tool string, body any, b []byte, isError bool, checked string) *mcp.CallToolResult {
	fixed := s.provenance[tool]
	p := map[string]any{"tool": tool}
	if fixed != nil {
		p = fixed
	}
	env := s.envelope(tool, p, body, checked)
	var e []byte
	if s.placement == ProvenanceInline {
		if e, err := json.Marshal(env); err == nil && len(b) >= 2 && b[len(b)-1] == '}' {
			// {...result, _tool, _toulmin, _tags}: the body's keys first,
			// unchanged; the body never holds keys starting with "_".
			joined := make([]byte, 0, len(b)+len(e))
			joined = append(joined, b[:len(b)-1]...)
			if len(b) > 2 {
				joined = append(joined, ',')
			}
			b = append(joined, e[1:]...)
		}
	} else {
		e, _ = json.Marshal(env) // strings, numbers and times: cannot fail
	}
	tail := s.stampTail[tool]
	if tail == nil {
		tail, _ = json.Marshal(p) // a tool registered without provenance: unreachable
		tail = tail[1:]
	}
	stamp := make([]byte, 0, len(e)+len(tail)+110)
	stamp = append(stamp, '{')
	if len(e) > 2 {
		stamp = append(append(stamp, e[1:len(e)-1]...), ',')
	}
	stamp = append(stamp, `"body":`...)
	stamp = strconv.AppendQuote(stamp, promcp.BodyDigest(b))
	stamp = append(stamp, `,"checked":`...)
	stamp = strconv.AppendQuote(stamp, checked)
	stamp = append(append(stamp, ','), tail...)
	m := &stampMemo{body: body, checked: checked, isError: isError,
		content:    []mcp.Content{mcp.NewTextContent(string(b))},
		structured: json.RawMessage(b), stamp: json.RawMessage(stamp)}
	if memo := s.stamps[tool]; memo != nil {
		memo.Store(m)
	}
	return m.result()
}

// reuse returns the result of tool's last call when body (checked as
// checked) equals that call's: the bytes encoded then, sent again. nil
// when there is none to reuse (not a read tool, or another body).
func (s *Server) reuse(tool string, body any, isError bool, checked string) *mcp.CallToolResult {
	memo := s.stamps[tool]
	if memo == nil {
		return nil
	}
	last := memo.Load()
	if last == nil || last.checked != checked || last.isError != isError || !reflect.DeepEqual(last.body, body) {
		return nil
	}
	return last.result()
}

// stampMemo is a read tool's last result: its body (the value, compared
// with the next call's) and what was sent, encoded once: the text content,
// the structured content (the same bytes) and the stamp, each already
// boxed as mcp-go holds it. Never changed once stored: every call gets its
// own CallToolResult and _meta map (mcp-go adds to _meta), sharing these.
type stampMemo struct {
	body       any
	checked    string
	isError    bool
	content    []mcp.Content
	structured any // json.RawMessage
	stamp      any // json.RawMessage

	wireOnce sync.Once // the members as written by the read front (readfront.go), encoded once
	wire     *wire
}

// result is the tool result sent for m.
func (m *stampMemo) result() *mcp.CallToolResult {
	return &mcp.CallToolResult{
		Content:           m.content,
		StructuredContent: m.structured,
		IsError:           m.isError,
		Result:            mcp.Result{Meta: &mcp.Meta{AdditionalFields: map[string]any{ProvenanceKey: m.stamp}}},
	}
}

// stampTail encodes the fixed keys of a tool's stamp once: the members of
// the object after its opening brace, closing it.
func stampTail(fixed map[string]any) []byte {
	b, _ := json.Marshal(fixed) // strings only
	return b[1:]
}

// envelope is the provenance envelope of body, a result of tool.
func (s *Server) envelope(tool string, p map[string]any, body any, checked string) *promcp.Envelope {
	source, _ := p["source"].(string)
	digest, _ := p["output_schema"].(string)
	env := &promcp.Envelope{Tool: tool}
	w := promcp.Warrant{Manifest: s.manifestDigest, Policy: s.policyDigest, Contract: "proMCP v0.2", OutputSchema: digest}
	env.Tags.Check = checked
	var ev *promcp.Evidence
	switch r := body.(type) {
	case promcp.ReadResult:
		ev = r.Evidence
		readEnvelope(env, r, source)
	case promcp.DoResult:
		ev = r.Evidence
		doEnvelope(env, r, source)
	case promcp.CapabilityReport:
		ev = r.Evidence
		w.Driver, w.Model = "policy", "policy"
		canDoEnvelope(env, r)
	}
	if ev != nil {
		if ev.Driver != "" {
			w.Driver, w.Model = ev.Driver, ev.Model
		}
		if ev.Rebuttal != nil {
			env.Toulmin.Rebuttal = append(ev.Rebuttal, env.Toulmin.Rebuttal...)
		}
		if ev.Origin != "" {
			env.Tags.Origin = ev.Origin
		}
		if ev.Freshness != "" {
			env.Tags.Freshness = ev.Freshness
		}
	}
	if checked == "replaced" {
		env.Tags.Origin, env.Tags.Freshness = "server", "none"
	}
	if env.Toulmin.Rebuttal == nil {
		env.Toulmin.Rebuttal = []string{}
	}
	s.byReference(env, w)
	return env
}

func readEnvelope(env *promcp.Envelope, r promcp.ReadResult, source string) {
	t := &env.Toulmin
	env.Tags.Bucket = "read_only"
	ts := r.Timestamp.UTC().Format(time.RFC3339Nano)
	g, _ := evidenceGrounds[*promcp.ReadGrounds](r.Evidence)
	if g == nil {
		g = &promcp.ReadGrounds{Source: source}
	}
	if r.Quality == promcp.QualityError {
		g.SampledAt = nil
		msg := r.QualityReason
		if r.Error != nil {
			msg = r.Error.Message
		}
		t.Claim = fmt.Sprintf("%s has no value: %s", env.Tool, msg)
		t.Qualifier = promcp.Qualifier{Quality: string(r.Quality), Reason: msg}
		env.Tags.Origin, env.Tags.Freshness = "device", "none"
		if r.Error != nil && r.Error.Code != promcp.CodeSourceUnreachable {
			env.Tags.Origin = "server"
		}
		t.Rebuttal = []string{"a read of the source now may succeed: retry " + env.Tool}
	} else {
		if g.SampledAt == nil {
			ts := r.Timestamp.UTC()
			g.SampledAt = &ts
		}
		unit := ""
		if r.Unit != "" {
			unit = " "
		}
		t.Claim = env.Tool + " = " + FormatValue(r.Value) + unit + string(r.Unit) + ", quality " + string(r.Quality) + ", sampled " + ts
		reason := r.QualityReason
		if reason == "" && r.Quality == promcp.QualityGood {
			reason = "sampled within its freshness and every health rule passed"
		}
		t.Qualifier = promcp.Qualifier{Quality: string(r.Quality), Reason: reason}
		env.Tags.Origin, env.Tags.Freshness = "device", "live"
		switch {
		case r.Quality == promcp.QualityStale:
			env.Tags.Freshness = "stale"
		case g.Cached:
			env.Tags.Freshness = "cached"
		}
	}
	t.Grounds = g
}

func doEnvelope(env *promcp.Envelope, r promcp.DoResult, source string) {
	t := &env.Toulmin
	env.Tags.Bucket = "real_dispatch"
	g, _ := evidenceGrounds[*promcp.DoGrounds](r.Evidence)
	if g == nil {
		// No evidence: a library handler, a replay (evidence is not kept),
		// or a call the server answered alone.
		g = &promcp.DoGrounds{Source: source, Decision: promcp.Decision{Permission: r.Permission, Reason: r.Reason}}
		if r.Status != promcp.StatusFailed {
			g.Readback = r.AppliedValue
		}
	}
	ts := r.Timestamp.UTC().Format(time.RFC3339Nano)
	switch r.Status {
	case promcp.StatusFailed:
		t.Claim = fmt.Sprintf("%s failed at %s: %s", env.Tool, ts, r.Reason)
	default:
		t.Claim = fmt.Sprintf("%s %s at %s: the device holds %s (before: %s)", env.Tool, r.Status, ts,
			FormatValue(r.AppliedValue), FormatValue(r.PreviousValue))
	}
	t.Qualifier = promcp.Qualifier{Quality: string(r.Status), Reason: r.Reason}
	t.Grounds = g
	env.Tags.Origin, env.Tags.Freshness = "device", "live"
	if r.Error != nil && (r.Error.Code == promcp.CodeRefused || r.Error.Code == promcp.CodeInvalidArgument ||
		r.Error.Code == promcp.CodeIdempotencyConflict || r.Error.Code == promcp.CodeInternal) {
		env.Tags.Origin, env.Tags.Freshness = "server", "none"
	}
	if r.Replayed {
		env.Tags.Origin, env.Tags.Freshness = "server", "replayed"
		t.Rebuttal = append(t.Rebuttal, "replayed: this is the stored result of an earlier call with idempotency_key "+r.IdempotencyKey+"; the device may have changed since")
	}
	if r.Status != promcp.StatusFailed {
		t.Rebuttal = append(t.Rebuttal, "another caller, an automation or a hand on the device may change it after "+ts)
	}
	if r.CompensationHint != nil {
		t.Rebuttal = append(t.Rebuttal, "reversible: "+*r.CompensationHint)
	}
}

func canDoEnvelope(env *promcp.Envelope, r promcp.CapabilityReport) {
	t := &env.Toulmin
	env.Tags.Bucket, env.Tags.Origin, env.Tags.Freshness = "read_only", "policy", "live"
	g, _ := evidenceGrounds[*promcp.CanDoGrounds](r.Evidence)
	if g == nil {
		g = &promcp.CanDoGrounds{}
	}
	g.Candidates, g.Blocked = len(r.Candidates), len(r.Blocked)
	if g.Evaluated == "" {
		g.Evaluated = "every action's policy (role, constraints, interlocks, source health, cooldown, rate limit, approval)"
	}
	t.Grounds = g
	q := "infeasible"
	if r.Feasible {
		q = "feasible"
	}
	ts := r.Metadata.Timestamp.UTC().Format(time.RFC3339Nano)
	reason := fmt.Sprintf("%d candidate(s) allowed or conditional, %d blocked", len(r.Candidates), len(r.Blocked))
	if r.Error != nil {
		reason = r.Error.Message
		env.Tags.Origin, env.Tags.Freshness = "server", "none"
	}
	t.Claim = fmt.Sprintf("can_do at %s: %s: %s", ts, q, reason)
	t.Qualifier = promcp.Qualifier{Quality: q, Reason: reason}
	var until time.Time
	var unsure []string
	for _, c := range r.Candidates {
		if !c.ValidUntil.IsZero() && (until.IsZero() || c.ValidUntil.Before(until)) {
			until = c.ValidUntil
		}
		if c.Confidence < 0.7 {
			unsure = append(unsure, c.Capability)
		}
	}
	if !until.IsZero() {
		t.Rebuttal = append(t.Rebuttal, "the answer may change after "+until.UTC().Format(time.RFC3339Nano)+" (the earliest valid_until)")
	}
	if len(unsure) > 0 {
		t.Rebuttal = append(t.Rebuttal, "confidence below 0.7, not a confirmed match: "+strings.Join(unsure, ", "))
	}
	t.Rebuttal = append(t.Rebuttal, canDoStanding)
}

// evidenceGrounds returns ev's grounds as a T, if they are one. The
// envelope fills in what the handler left out: the grounds are the call's.
func evidenceGrounds[T interface {
	*promcp.ReadGrounds | *promcp.DoGrounds | *promcp.CanDoGrounds
}](ev *promcp.Evidence) (T, bool) {
	if ev == nil {
		return nil, false
	}
	g, ok := ev.Grounds.(T)
	return g, ok && g != nil
}
