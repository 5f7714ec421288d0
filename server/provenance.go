package server

import (
	"encoding/json"
	"maps"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/promcp/promcp-device/promcp"
)

// ProvenanceKey is the _meta key under which every tool result says where
// it came from and why it can be trusted. The stamp is non-destructive:
// structuredContent and its text copy are left exactly as the contract
// says; clients that do not know the key ignore it.
const ProvenanceKey = "io.promcp/provenance"

// provenance is the fixed part of a tool's stamp: which server and tool,
// of which triad kind, about which source (the device; for can_do, the
// gateway it answers for), under which contract and output schema (its
// promcp.SchemaDigest, which a client recomputes from tools/list). Every
// kind has the same keys.
func provenance(server, version string, kind promcp.Kind, tool mcp.Tool, source string) map[string]any {
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
	}
}

// stamp adds the tool's provenance to res, with the digest of the body it
// stamps (promcp.BodyDigest of structuredContent, the same bytes as the
// text content) and how the body was checked against the contract before
// it was sent: "typed" (the typed check proven equal to the output
// schema), "json-schema" (the JSON Schema validator), or "replaced" (the
// handler's body broke the contract and this typed internal error was sent
// instead).
func (s *Server) stamp(tool string, res *mcp.CallToolResult, checked string) *mcp.CallToolResult {
	p := maps.Clone(s.provenance[tool])
	if p == nil {
		p = map[string]any{"tool": tool}
	}
	p["checked"] = checked
	if b, ok := res.StructuredContent.(json.RawMessage); ok {
		p["body"] = promcp.BodyDigest(b)
	}
	res.Meta = &mcp.Meta{AdditionalFields: map[string]any{ProvenanceKey: p}}
	return res
}
