package server

import (
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/promcp/promcp-device/promcp"
)

// Surface returns a new Server without tools that shares s's clock,
// logger, idempotency store, audit log, authorizer, approvals and their
// ledger, its read-only and refusal settings, and where and with which
// warrant it stamps provenance: another surface of the
// same gateway, such as a tool group served at its own endpoint. A do_*
// result kept under a key on one surface replays on the other, an
// approval token spent on one is spent on both, and both audit to the same
// log. name is the new server's MCP name, instructions what it tells
// clients at initialisation. Shutdown applies to each surface on its own.
func (s *Server) Surface(name, instructions string) (*Server, error) {
	ns := &Server{clock: s.clock, log: s.log, store: s.store, keyTTL: s.keyTTL, auditor: s.auditor,
		authorize: s.authorize, roles: s.roles, readOnly: s.readOnly, instructions: instructions, approvals: s.approvals,
		ledger: s.ledger, refuseDo: s.refuseDo, elicit: s.elicit, name: name, version: s.version,
		provenance: map[string]map[string]any{}, placement: s.placement,
		manifestDigest: s.manifestDigest, policyDigest: s.policyDigest}
	ns.observer = s.observer
	ns.mesh = s.mesh // a group answers the mesh methods for its gateway
	v, err := promcp.NewValidator()
	if err != nil {
		return nil, err
	}
	ns.validator = v
	ns.desk = s.desk // a call on a group waits on the same desk
	mopts := []mcpserver.ServerOption{
		mcpserver.WithToolCapabilities(false),
		mcpserver.WithRecovery(),
		mcpserver.WithElicitation(),
		mcpserver.WithPaginationLimit(ToolsPageSize),
	}
	if instructions != "" {
		mopts = append(mopts, mcpserver.WithInstructions(instructions))
	}
	ns.mcp = mcpserver.NewMCPServer(name, ns.version, mopts...)
	return ns, nil
}
