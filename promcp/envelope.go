package promcp

import (
	"strconv"
	"time"
)

// The provenance envelope of the tool-provenance seed
// (mcp-tool-provenance-architecture): every read_*, do_* and can_do result,
// errors included, carries one of fixed shape. promcp-device puts it in the
// result's _meta stamp by default and, on request, inline in the result
// body (the seed's {...result, _tool, _toulmin, _tags}).
//
// The seed vendors toulmin-argument v1.0.0 (ToulminArgument) and
// provenance-tags v1.0.0 (ArtifactTags); their sources were not available
// to us, so the five argument keys are Toulmin's own names (claim, grounds,
// warrant, qualifier, rebuttal) and the four tag dimensions are ours,
// documented on Tags.
const (
	// EnvelopeTool is the key of the tool's name.
	EnvelopeTool = "_tool"
	// EnvelopeToulmin is the key of the Toulmin argument (exactly
	// ToulminKeys).
	EnvelopeToulmin = "_toulmin"
	// EnvelopeTags is the key of the tag block (exactly TagKeys).
	EnvelopeTags = "_tags"
)

// ToulminKeys are the keys of _toulmin, exactly these on every result.
var ToulminKeys = []string{"claim", "grounds", "warrant", "qualifier", "rebuttal"}

// TagKeys are the four tag dimensions of _tags, exactly these on every
// result.
var TagKeys = []string{"origin", "bucket", "freshness", "check"}

// Envelope is the provenance envelope of one result.
type Envelope struct {
	Tool    string  `json:"_tool"`
	Toulmin Toulmin `json:"_toulmin"`
	Tags    Tags    `json:"_tags"`
}

// Toulmin is the argument a result makes.
type Toulmin struct {
	// Claim is the result as stated in words: "read_air_temperature:
	// 21.4 °C, quality good, sampled 2026-11-30T18:52:00Z".
	Claim string `json:"claim"`
	// Grounds is the evidence: *ReadGrounds, *DoGrounds or *CanDoGrounds.
	Grounds any `json:"grounds"`
	// Warrant is what connects the grounds to the claim: a Warrant, or
	// (as promcp-device sends it) a *WarrantRef to the tool's published
	// Standing, which ResolveEnvelope expands.
	Warrant any `json:"warrant"`
	// Qualifier is how far the claim holds.
	Qualifier Qualifier `json:"qualifier"`
	// Rebuttal lists what would make the claim wrong now; never null. An
	// item that is a RebuttalRef stands for the tool's standing rebuttal
	// (Standing.Rebuttal), which ResolveEnvelope splices in its place.
	Rebuttal []string `json:"rebuttal"`
}

// Warrant connects grounds to claim: the configuration the server runs
// (the manifest's and policy's SHA-256, "" when there is none) and the
// code that read or acted (driver and device model; for can_do and a
// refused do_*, "policy"), under which contract and output schema.
type Warrant struct {
	Manifest     string `json:"manifest"`
	Policy       string `json:"policy"`
	Driver       string `json:"driver"`
	Model        string `json:"model"`
	Contract     string `json:"contract"`
	OutputSchema string `json:"output_schema"`
}

// Qualifier says how far the claim holds: for read_* its quality, for do_*
// its status, for can_do "feasible" or "infeasible"; and why.
type Qualifier struct {
	Quality string `json:"quality"`
	Reason  string `json:"reason"`
}

// Tags are the four tag dimensions of a result.
type Tags struct {
	// Origin is where the result comes from: "device" (a bus transaction
	// or its cache), "policy" (an evaluation that touched no device: can_do,
	// a refused do_*), "server" (the server answered alone: bad arguments,
	// an internal error, a replayed or unreadable stored result).
	Origin string `json:"origin"`
	// Bucket is the tool's bucket in the seed's triage: "real_dispatch"
	// (do_*), "read_only" (read_* and can_do); promcp-device serves no
	// "native_only" tool.
	Bucket string `json:"bucket"`
	// Freshness is how old the evidence is: "live" (read or written by this
	// call), "cached" (a sample younger than the caller's max age), "stale"
	// (quality stale: the last good value past its TTL), "replayed" (a
	// do_* result stored under this idempotency key), "none" (no sample).
	Freshness string `json:"freshness"`
	// Check is how the body was checked against the contract before it
	// was sent: "typed", "json-schema" or "replaced" (the handler's body
	// broke the contract; this typed internal error was sent instead).
	Check string `json:"check"`
}

// ReadGrounds is the evidence of a read_* result: the device, bus, address
// and register read, the bytes the device sent (hex, "" when none), what
// those bytes are, the conversion applied, the sample time and the bus
// latency. A library tool without a binding leaves the device fields "".
type ReadGrounds struct {
	Source       string     `json:"source"`
	Device       string     `json:"device"`
	Bus          string     `json:"bus"`
	Address      string     `json:"address"`
	Register     string     `json:"register"`
	Raw          string     `json:"raw"`
	RawForm      string     `json:"raw_form"`
	Conversion   string     `json:"conversion"`
	SampledAt    *time.Time `json:"sampled_at"`
	BusLatencyMS float64    `json:"bus_latency_ms"`
	Cached       bool       `json:"cached"`
}

// DoGrounds is the evidence of a do_* result: the write (device, register
// or pin, the value asked for, the value written, the value read back and
// its quality) and the decision (the policy's permission and reason,
// whether the actuator was reserved, whether a human approved, whether the
// value was clamped). Written and Readback are null when nothing was
// written or read back.
type DoGrounds struct {
	Source          string     `json:"source"`
	Device          string     `json:"device"`
	Bus             string     `json:"bus"`
	Address         string     `json:"address"`
	Register        string     `json:"register"`
	Requested       any        `json:"requested"`
	Written         any        `json:"written"`
	Readback        any        `json:"readback"`
	ReadbackQuality string     `json:"readback_quality"`
	ReadbackAt      *time.Time `json:"readback_at"`
	Decision        Decision   `json:"decision"`
}

// Decision is the policy's answer to a do_* call.
type Decision struct {
	// Permission is the policy's answer; "" when no policy was asked (the
	// call was refused before: role, arguments, shutdown).
	Permission Permission `json:"permission"`
	Reason     string     `json:"reason"`
	Reserved   bool       `json:"reserved"`
	Approved   bool       `json:"approved"`
	Clamped    bool       `json:"clamped"`
}

// CanDoGrounds is the evidence of a can_do result: the policy evaluation
// of the intent: how many actions it weighed, matched and blocked.
type CanDoGrounds struct {
	Intent     any    `json:"intent"`
	Scope      string `json:"scope"`
	Evaluated  string `json:"evaluated"`
	Candidates int    `json:"candidates"`
	Blocked    int    `json:"blocked"`
}

// Evidence is what a handler knows of how its result came to be, beyond
// the body: the server puts it in the provenance envelope. It is not part
// of the body and never sent as such. A handler that leaves it nil gets
// grounds with only the tool's source.
type Evidence struct {
	// Grounds is *ReadGrounds for a read_*, *DoGrounds for a do_*.
	Grounds any
	// Driver and Model are the warrant's code: the driver package and the
	// device model.
	Driver, Model string
	// Rebuttal lists what would make the result wrong now.
	Rebuttal []string
	// Origin and Freshness are the tags; "" lets the server decide.
	Origin, Freshness string
}

// EnvelopeSchema is the JSON Schema of the envelope's properties, as a
// tool's output schema declares them when the envelope is inline.
func EnvelopeSchema() map[string]any {
	str := map[string]any{"type": "string"}
	obj := func(desc string, keys []string, props map[string]any) map[string]any {
		return map[string]any{"type": "object", "description": desc, "required": keys,
			"properties": props, "additionalProperties": false}
	}
	toulmin := map[string]any{
		"claim":     map[string]any{"type": "string", "description": "The result as stated."},
		"grounds":   map[string]any{"type": "object", "description": "The evidence: what was read or written, and the decision."},
		"warrant":   map[string]any{"type": "object", "description": "The configuration and code connecting the grounds to the claim: by reference, {ref, digest} to the tool's standing part (resources/read of ref; its sha256 is digest), with driver and model where this call's differ."},
		"qualifier": map[string]any{"type": "object", "description": "How far the claim holds: quality (read), status (do), feasible (can_do), and why."},
		"rebuttal":  map[string]any{"type": "array", "items": str, "description": "What would make the claim wrong now; the item <warrant ref>#rebuttal stands for the tool's standing rebuttal."},
	}
	tags := map[string]any{}
	for _, k := range TagKeys {
		tags[k] = str
	}
	return map[string]any{
		EnvelopeTool:    map[string]any{"type": "string", "description": "Provenance: the tool that answered."},
		EnvelopeToulmin: obj("Provenance: the Toulmin argument of this result (exactly five keys).", ToulminKeys, toulmin),
		EnvelopeTags:    obj("Provenance: the four tag dimensions of this result.", TagKeys, tags),
	}
}

// IsStamped reports whether m (a decoded JSON object: a result body or a
// _meta stamp) carries a complete envelope: _tool a non-empty string,
// _toulmin an object with exactly ToulminKeys, _tags an object with exactly
// TagKeys. When not, why says what is wrong.
func IsStamped(m map[string]any) (ok bool, why string) {
	if t, _ := m[EnvelopeTool].(string); t == "" {
		return false, "no " + EnvelopeTool
	}
	for _, b := range []struct {
		key  string
		want []string
	}{{EnvelopeToulmin, ToulminKeys}, {EnvelopeTags, TagKeys}} {
		o, isObj := m[b.key].(map[string]any)
		if !isObj {
			return false, "no " + b.key + " object"
		}
		if len(o) != len(b.want) {
			return false, b.key + " has " + strconv.Itoa(len(o)) + " keys, want exactly " + strconv.Itoa(len(b.want))
		}
		for _, k := range b.want {
			if _, has := o[k]; !has {
				return false, b.key + " lacks " + k
			}
		}
	}
	return true, ""
}
