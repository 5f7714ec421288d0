// Package surface classifies a served tool surface into the proMCP triad
// and checks it against its source of truth, the manifest: every served
// tool classified exactly once, none missing, none unexpected. It is the
// drift gate of the tool-provenance seed: run it in CI against a live
// server (`promcp-device lint --manifest FILE --url URL`, rules X001 and
// X002 of package lint, or the older `tools --manifest FILE --check URL`)
// or in tests.
package surface

import (
	"slices"

	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/promcp"
)

// Triage is a surface split by kind. Each name lands in exactly one list;
// Unclassified holds names that are no proMCP tool, Duplicates names served
// more than once.
type Triage struct {
	Read, Do, CanDo []string
	Unclassified    []string
	Duplicates      []string
}

// Classify splits served tool names by their kind.
func Classify(served []string) Triage {
	var t Triage
	seen := map[string]bool{}
	for _, name := range served {
		if seen[name] {
			if !slices.Contains(t.Duplicates, name) {
				t.Duplicates = append(t.Duplicates, name)
			}
			continue
		}
		seen[name] = true
		kind, ok := promcp.KindOf(name)
		switch {
		case !ok:
			t.Unclassified = append(t.Unclassified, name)
		case kind == promcp.KindRead:
			t.Read = append(t.Read, name)
		case kind == promcp.KindDo:
			t.Do = append(t.Do, name)
		default:
			t.CanDo = append(t.CanDo, name)
		}
	}
	for _, l := range [][]string{t.Read, t.Do, t.CanDo, t.Unclassified, t.Duplicates} {
		slices.Sort(l)
	}
	return t
}

// Expected returns the tools m should serve: read_<name> per capability,
// each do tool, and can_do, sorted.
func Expected(m *manifests.Manifest) []string {
	names := []string{"can_do"}
	for _, c := range m.Capabilities {
		names = append(names, "read_"+c.Name)
		if c.Do != nil {
			names = append(names, c.Do.Tool)
		}
	}
	slices.Sort(names)
	return names
}

// Report is the outcome of a drift check.
type Report struct {
	Triage
	// Missing are expected tools not served; Unexpected are served tools
	// not expected.
	Missing, Unexpected []string
}

// OK reports whether the surface matches exactly, each tool classified
// once, with exactly one can_do.
func (r Report) OK() bool {
	return len(r.Missing) == 0 && len(r.Unexpected) == 0 && len(r.Unclassified) == 0 &&
		len(r.Duplicates) == 0 && len(r.CanDo) == 1
}

// Check compares the served names with the expected ones.
func Check(expected, served []string) Report {
	r := Report{Triage: Classify(served)}
	for _, e := range expected {
		if !slices.Contains(served, e) {
			r.Missing = append(r.Missing, e)
		}
	}
	for _, s := range served {
		if !slices.Contains(expected, s) && !slices.Contains(r.Unexpected, s) {
			r.Unexpected = append(r.Unexpected, s)
		}
	}
	slices.Sort(r.Missing)
	slices.Sort(r.Unexpected)
	return r
}

// Seeds is the triage in the tool-provenance seed's three buckets, each
// served tool in exactly one: real_dispatch (do_*: acts on a device),
// read_only (read_* and can_do: run on the server, read devices and
// policy, change nothing) and native_only (answered without the server
// dispatching anything; promcp-device serves none). Unclassified tools
// fit no bucket: they are drift, not a fourth bucket.
type Seeds struct {
	RealDispatch []string `json:"real_dispatch"`
	ReadOnly     []string `json:"read_only"`
	NativeOnly   []string `json:"native_only"`
}

// Seeds returns t in the seed's buckets.
func (t Triage) Seeds() Seeds {
	ro := append(slices.Clone(t.Read), t.CanDo...)
	slices.Sort(ro)
	return Seeds{RealDispatch: append([]string{}, t.Do...), ReadOnly: ro, NativeOnly: []string{}}
}

// Summary is the seed's honest split: how many classified tools execute
// on the server, and how many are native only.
func (s Seeds) Summary() (executesServerSide, nativeOnly int) {
	return len(s.RealDispatch) + len(s.ReadOnly), len(s.NativeOnly)
}
