package server

import (
	"context"
	"fmt"
	"maps"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/promcp/promcp-device/promcp"
)

// canDoStanding is can_do's standing rebuttal: it holds for every answer.
const canDoStanding = "a reading, a reservation or another caller's action may change the policy's answer before do_* is called"

// standing is a tool's published standing part (promcp.Standing): the
// resource text a client hashes, and what each result refers to it by.
// Never changed once registered.
type standing struct {
	st     promcp.Standing
	text   string
	uri    string
	digest string
	rebRef string
}

// standingTemplate is the resource template of every tool's standing
// part: one entry in resources/templates/list, however many tools.
func standingTemplate() mcp.ResourceTemplate {
	return mcp.NewResourceTemplate(promcp.WarrantScheme+"{tool}", "warrant",
		mcp.WithTemplateDescription("The standing part of a tool's provenance envelope: the warrant (manifest and policy digests, driver, model, contract, output schema digest) and the standing rebuttal, the same for every result of the tool. Each result refers to it by URI and digest (the sha256 of this text); tools/list gives the digest in the tool's _meta."),
		mcp.WithTemplateMIMEType("application/json"))
}

// readStanding answers resources/read of a tool's standing part.
func (s *Server) readStanding(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	uri := req.Params.URI
	tool, _ := strings.CutPrefix(uri, promcp.WarrantScheme)
	sp := s.standing[tool]
	if sp == nil {
		return nil, fmt.Errorf("resource %s: no tool %q is served here", uri, tool)
	}
	return []mcp.ResourceContents{mcp.TextResourceContents{URI: sp.uri, MIMEType: "application/json", Text: sp.text}}, nil
}

// publish makes the standing part of tool (registered by register, whose
// provenance is known) and returns tool with its URI and digest in _meta
// (promcp.WarrantMetaKey).
func (s *Server) publish(tool mcp.Tool, decl Standing) mcp.Tool {
	digest, _ := s.provenance[tool.Name]["output_schema"].(string)
	st := promcp.Standing{Tool: tool.Name, Warrant: promcp.Warrant{Manifest: s.manifestDigest, Policy: s.policyDigest,
		Driver: decl.Driver, Model: decl.Model, Contract: "proMCP v0.2", OutputSchema: digest}, Rebuttal: decl.Rebuttal}
	text, sum := st.Encode()
	sp := &standing{st: st, text: string(text), uri: promcp.WarrantURI(tool.Name), digest: sum, rebRef: promcp.RebuttalRef(tool.Name)}
	s.standing[tool.Name] = sp
	fields := map[string]any{}
	if tool.Meta != nil {
		fields = maps.Clone(tool.Meta.AdditionalFields)
	}
	fields[promcp.WarrantMetaKey] = map[string]string{"uri": sp.uri, "digest": sp.digest}
	tool.Meta = &mcp.Meta{AdditionalFields: fields}
	return tool
}

// byReference replaces the parts of env that are tool's standing part by
// references to it: the warrant by the URI and digest (with the call's
// driver and model where they are not the standing ones), the standing
// rebuttal's lines by one item, promcp.RebuttalRef, where the first of
// them was. A rebuttal that lacks a standing line is left whole.
func (s *Server) byReference(env *promcp.Envelope, w promcp.Warrant) {
	sp := s.standing[env.Tool]
	if sp == nil {
		env.Toulmin.Warrant = w
		return
	}
	ref := &promcp.WarrantRef{Ref: sp.uri, Digest: sp.digest}
	if w != sp.st.Warrant {
		driver, model := w.Driver, w.Model
		ref.Driver, ref.Model = &driver, &model
	}
	env.Toulmin.Warrant = ref
	env.Toulmin.Rebuttal = referRebuttal(env.Toulmin.Rebuttal, sp.st.Rebuttal, sp.rebRef)
}

// referRebuttal returns lines with every line of std replaced by ref, at
// the first one's place, when all of std's lines are there; else lines.
// lines is not changed.
func referRebuttal(lines, std []string, ref string) []string {
	if len(std) == 0 || len(lines) < len(std) {
		return lines
	}
	first := -1
	for _, l := range std {
		i := indexOf(lines, l)
		if i < 0 {
			return lines
		}
		if first < 0 || i < first {
			first = i
		}
	}
	out := make([]string, 0, len(lines)-len(std)+1)
	for i, l := range lines {
		switch {
		case i == first:
			out = append(out, ref)
		case indexOf(std, l) >= 0:
		default:
			out = append(out, l)
		}
	}
	return out
}

func indexOf(xs []string, x string) int {
	for i, y := range xs {
		if y == x {
			return i
		}
	}
	return -1
}
