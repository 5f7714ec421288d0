package main

import (
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"strings"

	"github.com/promcp/promcp-device/console"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/server"
)

// newConsole returns the operator console of gw (serve --console): the
// same tokens as the MCP endpoint, the audit log of --state, the calls
// waiting for approval on f.desk.
func (f *serveFlags) newConsole(gw *openedGateway, tokens *server.Tokens, caller server.Caller, log *slog.Logger) (http.Handler, error) {
	cfg := console.Config{Server: gw.srv, Tokens: tokens, Caller: caller, Desk: f.desk, Policy: gw.policy,
		Gateway: gw.manifest.Gateway, Now: gw.srv.Clock().Now, SecureCookie: f.consoleSecureCookie, Log: log.With("part", "console")}
	if f.stateDir != "" {
		cfg.AuditFile = filepath.Join(f.stateDir, auditFile)
	}
	roles := manifests.DefaultRoleNames
	if gw.policy != nil {
		roles = gw.policy.Roles
	}
	for _, r := range strings.Split(f.consoleApprovers, ",") {
		if r = strings.TrimSpace(r); r == "" {
			continue
		}
		if !slices.Contains(roles, r) {
			return nil, usageErr("--console-approvers: role %q is not declared (want %s)", r, strings.Join(roles, ", "))
		}
		cfg.Approvers = append(cfg.Approvers, r)
	}
	if cfg.Approvers == nil {
		cfg.Approvers = []string{} // nobody approves
	}
	if tokens == nil && f.desk != nil {
		log.Warn("console: without --tokens nobody can approve in the console (it cannot tell a person from the agent); waiting calls are shown only")
	}
	return console.New(cfg)
}

// withConsole serves the console under /console and everything else as
// before.
func withConsole(mcp, con http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/console", con)
	mux.Handle("/console/", con)
	mux.Handle("/", mcp)
	return mux
}
