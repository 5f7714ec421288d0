package promcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// The envelope by reference (issue 28): what is the same in every result
// of a tool, its warrant (manifest and policy digests, driver, model,
// contract, output schema digest) and its standing rebuttal, is published
// once per tool as a resource, a Standing at WarrantURI(tool), whose
// digest tools/list gives in the tool's _meta (WarrantMetaKey). Each
// result keeps the envelope's fixed shape but carries, as its warrant, a
// WarrantRef (the URI and the digest, and the driver and model where this
// call's differ), and in its rebuttal the item RebuttalRef(tool) in place
// of the standing lines. A client resolves both with ResolveEnvelope,
// which checks the digest of what resources/read returns.
const (
	// WarrantScheme is the URI prefix of the standing part of a tool.
	WarrantScheme = "promcp://warrant/"
	// WarrantMetaKey is the key in a tool's _meta (tools/list) of its
	// standing part: {"uri": WarrantURI(tool), "digest": "sha256:<hex>"}.
	WarrantMetaKey = "io.promcp/warrant"
)

// WarrantURI is the URI of tool's standing part.
func WarrantURI(tool string) string { return WarrantScheme + tool }

// RebuttalRef is the rebuttal item that stands for tool's standing
// rebuttal.
func RebuttalRef(tool string) string { return WarrantURI(tool) + "#rebuttal" }

// Standing is the part of a tool's envelope that is the same in every
// result: published once at WarrantURI(Tool), referenced from each result.
type Standing struct {
	Tool    string  `json:"tool"`
	Warrant Warrant `json:"warrant"`
	// Rebuttal is what would make any result of the tool wrong; never
	// null.
	Rebuttal []string `json:"rebuttal"`
}

// Encode returns the resource text of s (its JSON, no HTML escaping, no
// trailing newline) and the digest of that text (BodyDigest): the bytes a
// client hashes to check a reference.
func (s Standing) Encode() (text []byte, digest string) {
	if s.Rebuttal == nil {
		s.Rebuttal = []string{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // strings only: cannot fail
	text = bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	return text, BodyDigest(text)
}

// WarrantRef is a result's warrant by reference: the standing part's URI
// and digest, and the driver and model of this call where its warrant is
// not the published one (a refused do_* was decided by "policy", not by the
// device's driver).
type WarrantRef struct {
	Ref    string  `json:"ref"`
	Digest string  `json:"digest"`
	Driver *string `json:"driver,omitempty"`
	Model  *string `json:"model,omitempty"`
}

// ResolveEnvelope expands the references of env, a decoded envelope (a
// _meta stamp or an inline body): a warrant with "ref" becomes the
// published warrant (with the call's driver and model where given) and a
// rebuttal item that is a RebuttalRef becomes the standing rebuttal's
// lines. read returns the text of a resource (resources/read); each text
// must hash to the digest the reference gives, name the tool, and, where
// want (the digests of tools/list by URI) has an entry, equal it. It
// reports whether env held a reference.
func ResolveEnvelope(env map[string]any, read func(uri string) ([]byte, error), want map[string]string) (bool, error) {
	t, _ := env[EnvelopeToulmin].(map[string]any)
	if t == nil {
		return false, fmt.Errorf("no %s object", EnvelopeToulmin)
	}
	ref, _ := t["warrant"].(map[string]any)
	uri, _ := ref["ref"].(string)
	rebuttal, _ := t["rebuttal"].([]any)
	if uri == "" {
		for _, r := range rebuttal {
			if s, _ := r.(string); strings.HasPrefix(s, WarrantScheme) {
				return true, fmt.Errorf("rebuttal item %q refers to a standing part, but the warrant is not a reference", s)
			}
		}
		return false, nil
	}
	digest, _ := ref["digest"].(string)
	if w, ok := want[uri]; ok && w != digest {
		return true, fmt.Errorf("warrant %s: digest %s, but tools/list gives %s", uri, digest, w)
	}
	text, err := read(uri)
	if err != nil {
		return true, fmt.Errorf("warrant %s: %w", uri, err)
	}
	if got := BodyDigest(text); got != digest {
		return true, fmt.Errorf("warrant %s: the resource hashes to %s, the reference says %s", uri, got, digest)
	}
	var st Standing
	if err := json.Unmarshal(text, &st); err != nil {
		return true, fmt.Errorf("warrant %s: %w", uri, err)
	}
	if tool, _ := env[EnvelopeTool].(string); tool != "" && st.Tool != tool {
		return true, fmt.Errorf("warrant %s is the standing part of %s, not of %s", uri, st.Tool, tool)
	}
	var w map[string]any
	b, _ := json.Marshal(st.Warrant)
	_ = json.Unmarshal(b, &w)
	for _, k := range []string{"driver", "model"} {
		if v, ok := ref[k]; ok {
			w[k] = v
		}
	}
	t["warrant"] = w
	out := make([]any, 0, len(rebuttal)+len(st.Rebuttal))
	for _, r := range rebuttal {
		s, _ := r.(string)
		switch {
		case s == RebuttalRef(st.Tool):
			for _, line := range st.Rebuttal {
				out = append(out, line)
			}
		case strings.HasPrefix(s, WarrantScheme):
			return true, fmt.Errorf("rebuttal item %q does not refer to %s", s, RebuttalRef(st.Tool))
		default:
			out = append(out, r)
		}
	}
	t["rebuttal"] = out
	return true, nil
}
