//go:build !noconsole

package main

import (
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"strings"

	"github.com/promcp/promcp-device/console"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/server"
)

// leftOutConsole is empty: this binary has the feature (the -tags build names it, features.go).
const leftOutConsole = ""

// consoleAccounts are the console's operator accounts (--console-users).
type consoleAccounts = *console.Users

// defaultApprovers is --console-approvers' default.
func defaultApprovers() string { return strings.Join(console.DefaultApprovers, ",") }

// checkConsoleUsers refuses --console-users without --console, and
// --console with --tokens but without --console-users: people sign in to
// the console with accounts of their own, never with an MCP token.
func (f *serveFlags) checkConsoleUsers() error {
	if f.consoleUsers != "" && !f.console {
		return usageErr("--console-users needs --console")
	}
	if f.console && f.tokensFile != "" && f.consoleUsers == "" {
		return usageErr("--console with --tokens needs --console-users FILE: people sign in to the console with operator accounts, " +
			"not MCP tokens (an agent holds a token).\n" +
			"  Create an account with: promcp-device console-user add NAME --role supervisor --file /etc/promcp/secrets/console-users.txt")
	}
	return nil
}

// loadConsoleUsers loads --console-users, whose roles must be declared.
func (f *serveFlags) loadConsoleUsers(roles []string) error {
	if f.consoleUsers == "" {
		return nil
	}
	users, err := console.LoadUsers(f.consoleUsers)
	if err != nil {
		return failErr(err, false)
	}
	if users.Len() == 0 {
		return &exitError{1, fmt.Sprintf("promcp-device serve: --console-users %s lists no account; add one with: promcp-device console-user add NAME --role supervisor --file %s",
			f.consoleUsers, f.consoleUsers)}
	}
	if err := users.CheckRoles(roles); err != nil {
		return failErr(err, false)
	}
	f.users = users
	return nil
}

// newConsole returns the operator console of gw (serve --console): the
// accounts of --console-users, the audit log of --state, the calls
// waiting for approval on f.desk.
func (f *serveFlags) newConsole(gw *openedGateway, caller server.Caller, log *slog.Logger) (http.Handler, error) {
	cfg := console.Config{Server: gw.srv, Users: f.users, Caller: caller, Desk: f.desk, Policy: gw.policy, Manifest: gw.manifest, Capabilities: gw.set,
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
	if f.users == nil && f.desk != nil {
		log.Warn("console: without --console-users nobody can approve in the console (it cannot tell a person from the agent); waiting calls are shown only")
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
