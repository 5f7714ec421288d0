package main

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/promcp/promcp-device/approval"
	"github.com/promcp/promcp-device/capabilities"
	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/drivers"
	"github.com/promcp/promcp-device/drivers/host"
	"github.com/promcp/promcp-device/drivers/modbus"
	"github.com/promcp/promcp-device/drivers/sysfs"
	"github.com/promcp/promcp-device/gateway"
	"github.com/promcp/promcp-device/idempotency"
	"github.com/promcp/promcp-device/internal/startpages"
	"github.com/promcp/promcp-device/jobs"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/policy"
	"github.com/promcp/promcp-device/promcp"
	"github.com/promcp/promcp-device/server"
	"github.com/promcp/promcp-device/sim"
)

// listFlag collects a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// serveFlags are serve's command line.
type serveFlags struct {
	manifest, scenario, httpAddr, role, stateDir         string
	tokensFile, tlsCert, tlsKey, policyFile, approvalKey string
	gatewayID                                            string // --gateway-id: the gateway approval tokens are bound to
	consoleUsers                                         string // --console-users: the console's operator accounts
	simStart, logLevel, group                            string
	logFormat                                            string // --log-format: text or json
	metricsMode                                          string // --metrics: auth, open or off
	simulate, readOnly, allowNoPolicy, oobOnly           bool
	timeScale                                            float64
	keyTTL, sessionIdle                                  time.Duration
	jobRetention                                         time.Duration // --job-retention: how long ended jobs are kept
	maxConns, maxSessions, maxTokenSessions              int
	extraArgs                                            int    // arguments after the flags: none are taken
	extraArg                                             string // the first of them, to name it
	origins                                              listFlag
	audit                                                *auditConfig
	provenance                                           string          // where the provenance envelope goes: meta or inline
	console                                              bool            // serve the operator console at /console
	consoleApprovers                                     string          // the roles that approve in the console
	consoleSecureCookie                                  bool            // the console's cookie is Secure over plain HTTP too (TLS at a proxy)
	users                                                consoleAccounts // --console-users loaded (nil without the console)
	desk                                                 *server.Desk
	notify                                               *notifyConfig
	fleetFile                                            string                 // --fleet: join the fleet this file describes
	certs                                                []*server.CertVerifier // the policy's mtls identity providers
	homeAssistant                                        string                 // --homeassistant: the Home Assistant bridge file
	manifestDigest                                       string                 // of the manifest file's bytes, as read once by load
}

// parseServeFlags reads serve's command line; nil (with a usage message
// on stderr) when it does not parse.
func parseServeFlags(c *cli) *serveFlags {
	f := &serveFlags{}
	fs := c.FlagSet
	fs.StringVar(&f.manifest, "manifest", "", "manifest `FILE` to serve (required)")
	fs.BoolVar(&f.simulate, "sim", false, "serve on the built-in simulator instead of hardware")
	fs.Float64Var(&f.timeScale, "time-scale", 0, "with --sim: simulated seconds per real second (overrides the manifest's sim.time_scale)")
	fs.StringVar(&f.scenario, "scenario", "", "with --sim: play the fault scenario `FILE` on the simulator's clock from start-up")
	fs.StringVar(&f.httpAddr, "http", "", "serve streamable HTTP on `ADDR` (host:port; a bare :port binds loopback) instead of stdio")
	fs.Var(&f.origins, "allow-origin", "with --http: a browser `ORIGIN` allowed to call (repeatable); loopback origins are always allowed")
	fs.StringVar(&f.role, "role", "operator", "the caller's `ROLE` for every call over stdio, and over HTTP without --tokens")
	fs.StringVar(&f.stateDir, "state", "", "keep the idempotency store and the audit log in `DIR` (created if needed); without it results are kept in memory and nothing is audited")
	fs.DurationVar(&f.keyTTL, "key-ttl", idempotency.DefaultTTL, "how long a do_* result is kept for replay by its idempotency_key")
	fs.DurationVar(&f.jobRetention, "job-retention", jobs.DefaultKeepEnded, "with --state: keep an ended job's record this `DURATION`, then delete it")
	fs.StringVar(&f.tokensFile, "tokens", "", "with --http: require bearer tokens listed (hashed) in `FILE`; see promcp-device token add")
	fs.StringVar(&f.tlsCert, "tls-cert", "", "with --http: serve HTTPS with the certificate in `FILE` (PEM; with --tls-key)")
	fs.StringVar(&f.tlsKey, "tls-key", "", "with --http: the private key `FILE` (PEM) of --tls-cert")
	fs.BoolVar(&f.readOnly, "read-only", false, "serve only read_* and can_do; no do_* tool is registered")
	fs.StringVar(&f.policyFile, "policy", "", "policy `FILE`, instead of the one the manifest names (policy: FILE)")
	fs.BoolVar(&f.allowNoPolicy, "allow-no-policy", false, "serve do_* even without a policy (only the manifest's constraints apply); without it a gateway with no policy refuses every do_*")
	fs.StringVar(&f.approvalKey, "approval-key", "", "accept approvals from `promcp-device approve` signed with the key in `FILE` (created, mode 0600, when missing)")
	fs.StringVar(&f.gatewayID, "gateway-id", "", "the `ID` approve tokens must name to be accepted here (default: the manifest's gateway: name); give each gateway that shares an approval key its own, and the same to approve --gateway-id")
	fs.BoolVar(&f.oobOnly, "approval-out-of-band-only", false, "accept only approve tokens, never an answer through the MCP client, even where the policy says approval via: elicitation")
	fs.StringVar(&f.simStart, "sim-start", "", "with --sim: the simulated clock's start `TIME` (RFC 3339), to simulate another time of day (default: now)")
	fs.StringVar(&f.group, "group", "", "over stdio: serve only the tool group `NAME` of the manifest (groups:); over --http every group is served at /mcp/NAME")
	fs.StringVar(&f.logLevel, "log-level", "info", "log `LEVEL` on stderr: debug, info, warn, error")
	fs.StringVar(&f.logFormat, "log-format", "text", "log `FORMAT` on stderr: text (key=value) or json (one object a line, for journald or a log shipper)")
	fs.StringVar(&f.metricsMode, "metrics", defaultMetrics, "with --http: serve /metrics (Prometheus), /healthz and /readyz `MODE`: auth (behind --tokens like /mcp), open (no token), off")
	fs.IntVar(&f.maxConns, "max-conns", server.DefaultMaxConns, "with --http: the most connections served at once (`N`); more wait to be accepted")
	fs.IntVar(&f.maxSessions, "max-sessions", server.DefaultMaxSessions, "with --http: the most MCP sessions open at once (`N`), all tokens together")
	fs.IntVar(&f.maxTokenSessions, "max-sessions-per-token", server.DefaultMaxSessionsPerCaller, "with --http: the most MCP sessions one token holds at once (`N`)")
	fs.DurationVar(&f.sessionIdle, "session-idle", server.DefaultSessionIdleTTL, "with --http: end a session unused for this `DURATION` (its client gets 404 and starts a new one)")
	fs.StringVar(&f.provenance, "provenance", string(server.ProvenanceMeta), "where each result's provenance envelope (_tool, _toulmin, _tags) goes: `meta` (the _meta stamp) or inline (in the result body, declared in each output schema)")
	fs.StringVar(&f.fleetFile, "fleet", "", "join the fleet the fleet `FILE` describes (role edge or thin-edge): register, answer the fleet's can_do and routed calls, serve its fleet endpoint if the file gives http")
	fs.StringVar(&f.homeAssistant, "homeassistant", "", "publish the capabilities to Home Assistant (MQTT discovery) and take its commands through policy, as the broker, topics and caller the bridge `FILE` says (see docs/operations.md, Home Assistant)")
	f.audit = auditFlags(fs)
	fs.BoolVar(&f.console, "console", false, "with --http: serve the operator console (values, actuators, audit log, approvals) at /console on the same listener, behind the same tokens")
	fs.BoolVar(&f.consoleSecureCookie, "console-secure-cookie", false, "with --console: mark the session cookie Secure even over plain HTTP, for a gateway behind a reverse proxy that terminates TLS (X-Forwarded-Proto is never trusted)")
	fs.StringVar(&f.consoleUsers, "console-users", "", "with --console: the operator accounts `FILE` people sign in with (name, role, bcrypt hash; see promcp-device console-user add); required with --tokens: MCP tokens do not sign in")
	fs.StringVar(&f.consoleApprovers, "console-approvers", defaultApprovers(), "with --console-users: the `ROLES` (comma-separated) whose accounts approve or deny waiting do_* calls in the console")
	f.notify = notifyFlags(fs)
	if !c.parse() {
		return nil
	}
	f.extraArgs = fs.NArg()
	f.extraArg = fs.Arg(0)
	return f
}

// exitError ends serve with code after printing msg on stderr.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// usageErr is a misuse of serve's flags (exit 2).
func usageErr(format string, a ...any) error {
	return &exitError{2, "promcp-device serve: " + fmt.Sprintf(format, a...)}
}

// failErr is a failure to serve (exit 1); bare errors already say where
// they come from (a manifest's file:line:col).
func failErr(err error, bare bool) error {
	if bare {
		return &exitError{1, err.Error()}
	}
	return &exitError{1, "promcp-device serve: " + err.Error()}
}

// exit prints err and returns the exit code it carries.
func exit(stderr io.Writer, err error) int {
	var e *exitError
	if errors.As(err, &e) {
		fmt.Fprintln(stderr, e.msg)
		return e.code
	}
	fmt.Fprintln(stderr, "promcp-device serve:", err)
	return 1
}

func cmdServe(c *cli) int {
	f := parseServeFlags(c)
	if f == nil {
		return 2
	}
	if f.extraArgs > 0 {
		fmt.Fprintln(c.stderr, extraArgMessage(f.extraArg, f.manifest))
		return 2
	}
	if f.manifest == "" {
		return c.usage("--manifest FILE is required (and takes no other arguments)")
	}
	log, err := newLoggerFormat(c.stderr, f.logLevel, f.logFormat)
	if err != nil {
		return c.usage("%v", err)
	}
	tokens, err := f.check(log)
	if err != nil {
		return exit(c.stderr, err)
	}
	m, sc, err := f.load()
	if err != nil {
		return exit(c.stderr, err)
	}
	opts, err := f.gatewayOptions(log, m, tokens)
	if err != nil {
		return exit(c.stderr, err)
	}
	if tokens, f.certs, err = f.identity(log, opts.policy, tokens); err != nil {
		return exit(c.stderr, err)
	}
	haCfg, haOnly, err := f.loadHomeAssistant(m, opts.policy)
	if err != nil {
		return exit(c.stderr, err)
	}
	var node *fleetNode
	if f.fleetFile != "" {
		if node, err = f.connectFleet(c.ctx, m, &opts, log); err != nil {
			return exit(c.stderr, err)
		}
		defer node.Close()
	}
	ops, err := f.opsEndpoints(&opts)
	if err != nil {
		return exit(c.stderr, err)
	}
	st, err := openState(f.stateDir, f.keyTTL, f.jobRetention, f.audit, log)
	if err != nil {
		return exit(c.stderr, failErr(err, false))
	}
	defer st.Close()
	// Everything that can fail without touching hardware (manifest, policy,
	// tokens, state directory, the --http port and certificate) is checked
	// and bound above and here; buses and outputs open last, in openGateway.
	hl, err := f.listen()
	if err != nil {
		return exit(c.stderr, err)
	}
	defer hl.Close()
	f.withState(&opts, st, log)
	if node != nil {
		node.fleetStore(&opts, st, f.keyTTL)
	}
	f.observe(ops, &opts, st)
	log.Debug("opening buses and outputs", "manifest", f.manifest, "sim", f.simulate)
	gw, err := openGateway(c.ctx, m, opts, log)
	if err != nil {
		return exit(c.stderr, failErr(err, false))
	}
	defer gw.Close()
	if ops != nil {
		ops.metrics.Capabilities(gw.set)
		ops.opened.Store(true)
		gw.ops = ops
	}
	if sc != nil {
		if err := gw.world.Play(sc); err != nil {
			return exit(c.stderr, failErr(err, false))
		}
		log.Info("playing fault scenario", "scenario", sc.Name, "faults", len(sc.Faults))
	}
	if node != nil {
		if err := f.joinFleet(c.ctx, node, gw, tokens, c.stdout, log); err != nil {
			return exit(c.stderr, err)
		}
	}
	if haCfg != nil {
		stop, err := startHomeAssistant(c.ctx, haCfg, haOnly, gw, log)
		if err != nil {
			return exit(c.stderr, failErr(err, false))
		}
		defer stop() // before the gateway closes: the bridge publishes it offline
	}
	// Start-up's garbage (the YAML trees, the schemas compiled at init)
	// goes back to the OS now, not over minutes of scavenging: a gateway's
	// resident memory is what it serves with.
	debug.FreeOSMemory()
	// And the executable's pages that only start-up touched (every linked
	// package's init, the kernel mapping 64 KB around each fault) are
	// unmapped: clean copies of the file, they come back from the page
	// cache when touched again (docs/performance.md, resident memory).
	if st, err := startpages.Release(); err != nil {
		log.Debug("start-up pages kept", "err", err)
	} else {
		log.Debug("start-up pages released", "mappings", st.Mappings, "bytes", st.Bytes, "skipped", st.Skipped)
	}
	return f.serve(c.ctx, gw, tokens, hl, c.stdin, c.stdout, c.stderr, log)
}

// observe has the ops endpoints (nil without them) count the audit
// records of st and, with --console, the calls waiting for a supervisor.
func (f *serveFlags) observe(ops *opsEndpoints, opts *gatewayOptions, st *state) {
	if ops != nil && st.audit != nil {
		opts.server = append(opts.server, server.WithAuditor(ops.auditor(st.audit)))
	}
	if ops != nil && f.desk != nil {
		ops.metrics.ApprovalsPending(func() int {
			n := 0
			for _, r := range f.desk.Requests() {
				if r.State == server.Waiting {
					n++
				}
			}
			return n
		})
	}
}

// check refuses flags that do not go together or would serve unsafely,
// and loads the bearer tokens (nil without --tokens).
func (f *serveFlags) check(log *slog.Logger) (*server.Tokens, error) {
	if f.keyTTL <= 0 {
		return nil, usageErr("--key-ttl must be more than 0")
	}
	if f.keyTTL < idempotency.DefaultTTL {
		log.Warn("--key-ttl is under 24h: an agent retrying a day-old action after that would actuate again", "key_ttl", f.keyTTL.String())
	}
	for name, bad := range map[string]bool{"--max-conns": f.maxConns <= 0, "--max-sessions": f.maxSessions <= 0,
		"--max-sessions-per-token": f.maxTokenSessions <= 0, "--session-idle": f.sessionIdle <= 0, "--job-retention": f.jobRetention <= 0} {
		if bad {
			return nil, usageErr("%s must be more than 0", name)
		}
	}
	if (f.tlsCert == "") != (f.tlsKey == "") {
		return nil, usageErr("--tls-cert and --tls-key go together")
	}
	if f.httpAddr == "" && (f.tokensFile != "" || f.tlsCert != "") {
		return nil, usageErr("--tokens and --tls-cert apply to --http only")
	}
	var tokens *server.Tokens
	if f.tokensFile != "" {
		var err error
		if tokens, err = server.LoadTokens(f.tokensFile); err != nil {
			return nil, failErr(err, false)
		}
		if tokens.Len() == 0 {
			return nil, &exitError{1, fmt.Sprintf("promcp-device serve: --tokens %s lists no token; add one with: promcp-device token add --tokens %s --name NAME --role operator", f.tokensFile, f.tokensFile)}
		}
	}
	// A non-loopback --http without tokens is refused once the policy's
	// identity providers are known (identity.go).
	if f.group != "" && f.httpAddr != "" {
		return nil, usageErr("--group is for stdio: over --http every group is served at /mcp/<group> beside /mcp")
	}
	if f.scenario != "" && !f.simulate {
		return nil, usageErr("--scenario needs --sim (faults are injected in the simulator only)")
	}
	if f.console && f.httpAddr == "" {
		return nil, usageErr("--console needs --http (the console is served on the same listener)")
	}
	if f.consoleSecureCookie && !f.console {
		return nil, usageErr("--console-secure-cookie needs --console")
	}
	if err := f.notify.check(f.console, f.readOnly); err != nil {
		return nil, err
	}
	if err := f.checkConsoleUsers(); err != nil {
		return nil, err
	}
	return tokens, nil
}

// load reads the manifest and, with --scenario, the fault scenario.
func (f *serveFlags) load() (*manifests.Manifest, *manifests.Scenario, error) {
	// The file is read once: its bytes are parsed here and digested for
	// the warrant (gatewayOptions).
	data, err := os.ReadFile(f.manifest)
	if err != nil {
		return nil, nil, failErr(commandErr("serve", fmt.Errorf("load manifest: %w", err)), true)
	}
	m, err := manifests.Parse(f.manifest, data)
	if err != nil {
		return nil, nil, failErr(commandErr("serve", err), true)
	}
	f.manifestDigest = promcp.BodyDigest(data)
	if f.group != "" {
		if _, ok := m.Group(f.group); !ok {
			if len(m.Groups) == 0 {
				return nil, nil, usageErr("--group %s: %s declares no groups (add groups: to the manifest)", f.group, f.manifest)
			}
			return nil, nil, usageErr("--group %s: no such group in %s (want %s)", f.group, f.manifest, strings.Join(m.GroupNames(), ", "))
		}
	}
	var sc *manifests.Scenario
	if f.scenario != "" {
		if sc, err = manifests.LoadScenario(f.scenario, m); err != nil {
			return nil, nil, failErr(err, true)
		}
	}
	return m, sc, nil
}

// gatewayOptions resolves the policy (and the roles it declares, which
// --role and the tokens must use), the approvals and the simulated start.
func (f *serveFlags) gatewayOptions(log *slog.Logger, m *manifests.Manifest, tokens *server.Tokens) (gatewayOptions, error) {
	opts := gatewayOptions{simulate: f.simulate, timeScale: f.timeScale}
	opts.stateDir = f.stateDir
	pc, err := resolvePolicy(f.manifest, f.policyFile, m)
	if err != nil {
		return opts, failErr(err, true)
	}
	opts.policy = pc.policy
	roles := manifests.DefaultRoleNames
	if pc.policy != nil {
		roles = pc.policy.Roles
	}
	if !slices.Contains(roles, f.role) {
		return opts, usageErr("--role %q is not declared (want %s)", f.role, strings.Join(roles, ", "))
	}
	if tokens != nil {
		if err := tokens.CheckRoles(roles); err != nil {
			return opts, failErr(err, false)
		}
	}
	if err := f.loadConsoleUsers(roles); err != nil {
		return opts, err
	}
	if f.provenance != string(server.ProvenanceMeta) && f.provenance != string(server.ProvenanceInline) {
		return opts, usageErr("--provenance %q: want meta or inline", f.provenance)
	}
	policyDigest := ""
	if pc.sha256 != "" {
		policyDigest = "sha256:" + pc.sha256
	}
	opts.server = append(opts.server, server.WithProvenance(server.Placement(f.provenance)),
		server.WithWarrant(f.manifestDigest, policyDigest))
	if refuse := pc.announce(log, m, f.allowNoPolicy, f.readOnly); refuse != "" {
		opts.server = append(opts.server, server.WithRefuseDo(refuse))
	}
	f.approvalVia(log, pc.policy)
	if f.simStart != "" {
		t, err := time.Parse(time.RFC3339, f.simStart)
		if err != nil || !f.simulate {
			return opts, usageErr("--sim-start %q: want an RFC 3339 time such as 2026-11-30T22:00:00+01:00, with --sim", f.simStart)
		}
		opts.simStart = t
	}
	if f.approvalKey != "" {
		key, err := approval.LoadOrCreateKey(f.approvalKey)
		var signer *approval.Signer
		if err == nil {
			signer, err = approval.NewSigner(key)
		}
		if err != nil {
			return opts, failErr(err, false)
		}
		opts.approvals = signer.For(gatewayID(f.gatewayID, m)) // a token for another gateway sharing the key is refused
	}
	return opts, nil
}

// approvalVia warns of approvals that can never be given, and with
// --approval-out-of-band-only makes every approval of pol out-of-band.
func (f *serveFlags) approvalVia(log *slog.Logger, pol *manifests.Policy) {
	if pol != nil && f.approvalKey == "" && !f.readOnly && f.consoleUsers == "" { // nobody approves in the console without accounts
		for tool, a := range pol.Actions {
			if a.Approval != nil && a.Approval.Via != manifests.ViaElicitation {
				log.Warn("the policy asks for out-of-band approval but serve has no --approval-key nor --console-users: this action can never be approved", "action", tool)
			}
		}
	}
	if f.oobOnly && pol != nil {
		for _, a := range pol.Actions {
			if a.Approval != nil {
				a.Approval.Via = manifests.ViaOutOfBand
			}
		}
		log.Info("approvals: out-of-band only (--approval-out-of-band-only): an answer through the MCP client approves nothing")
	}
}

// withState adds the store, audit log, ledger and history of st (or the
// in-memory store without --state) and --read-only to opts.
func (f *serveFlags) withState(opts *gatewayOptions, st *state, log *slog.Logger) {
	if st.store != nil {
		opts.server = append(opts.server, server.WithStore(st.store, f.keyTTL), server.WithAuditor(st.audit), server.WithLedger(st.ledger))
		opts.history = st.history
		opts.jobStore = st.jobs
	} else {
		opts.server = append(opts.server, server.WithStore(idempotency.NewMemory(f.keyTTL, nil), f.keyTTL))
		log.Warn("no --state: do_* results and the actuation history (cooldowns, rate limits) are kept in memory only (a restart forgets them), and nothing is audited")
	}
	if f.readOnly {
		opts.server = append(opts.server, server.WithReadOnly())
	}
	if f.console && !f.readOnly {
		f.desk = server.NewDesk(nil, 0)
		f.desk.SetApprovalTTL(approvalTTL(opts.policy)) // a request lapses on the policy's approval ttl
		opts.server = append(opts.server, server.WithDesk(f.desk))
	}
}

// approvalTTL is the approval ttl the policy sets for a tool (0: none).
func approvalTTL(pol *manifests.Policy) func(string) time.Duration {
	return func(tool string) time.Duration {
		if pol == nil {
			return 0
		}
		if a := pol.Actions[tool]; a != nil && a.Approval != nil {
			return a.Approval.TTL
		}
		return 0
	}
}

// serve serves gw over stdio, or over HTTP with --http, until ctx ends.
func (f *serveFlags) serve(ctx context.Context, gw *openedGateway, tokens *server.Tokens, hl *httpListener, stdin io.Reader, stdout, stderr io.Writer, log *slog.Logger) int {
	caller := server.Caller{Name: "local", Role: f.role}
	groups, err := openGroups(gw)
	if err != nil {
		return exit(stderr, failErr(err, false))
	}
	if f.httpAddr == "" {
		srv, err := f.stdioSurface(gw, groups)
		if err != nil {
			return exit(stderr, err)
		}
		log.Info("serving over stdio", "manifest", f.manifest, "group", f.group, "tools", len(srv.Tools()), "sim", f.simulate, "state", f.stateDir)
		err = srv.ServeStdio(ctx, stdin, stdout, caller)
		code := drain(srv, log, stderr)
		if err != nil && !errors.Is(err, context.Canceled) {
			fmt.Fprintln(stderr, "promcp-device serve:", err)
			return 1
		}
		return code
	}
	cfg := server.HTTPConfig{AllowedOrigins: f.origins, Caller: caller, Tokens: tokens, Certs: f.certs, Groups: groups,
		Sessions: server.SessionLimits{Total: f.maxSessions, PerCaller: f.maxTokenSessions, IdleTTL: f.sessionIdle}}
	if f.console {
		if gw.console, err = f.newConsole(gw, caller, log); err != nil {
			return exit(stderr, err)
		}
		stop, err := f.notify.start(f.desk, gw.manifest, gw.srv.Clock(), log)
		if err != nil {
			return exit(stderr, err)
		}
		defer stop()
	}
	return serveHTTP(ctx, gw, hl, cfg, stdout, stderr, log)
}

// drain lets the do_* calls in flight finish and be recorded; the caller
// then closes the store and the audit log.
func drain(srv *server.Server, log *slog.Logger, stderr io.Writer) int {
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		fmt.Fprintln(stderr, "promcp-device serve: shutdown:", err)
		return 1
	}
	log.Info("stopped: calls in flight finished")
	return 0
}

func bindAddr(addr string) string {
	if strings.HasPrefix(addr, ":") {
		return "127.0.0.1" + addr
	}
	return addr
}

// httpListener is the --http listener, bound (and its certificate
// loaded) before any bus or output opens.
type httpListener struct {
	ln   net.Listener
	addr string      // as bound: a bare :PORT means loopback
	tls  *tls.Config // nil: plain HTTP
}

// listen binds --http (nil without it) and loads --tls-cert, before
// anything touches hardware: a port in use or a bad certificate ends
// start-up with no bus opened and no output set.
func (f *serveFlags) listen() (*httpListener, error) {
	if f.httpAddr == "" {
		return nil, nil
	}
	hl := &httpListener{addr: bindAddr(f.httpAddr)}
	if f.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(f.tlsCert, f.tlsKey)
		if err != nil {
			return nil, failErr(fmt.Errorf("--tls-cert %s --tls-key %s: %w; no bus or output was opened", f.tlsCert, f.tlsKey, err), false)
		}
		hl.tls = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	ln, err := net.Listen("tcp", hl.addr)
	if err != nil {
		return nil, failErr(fmt.Errorf("--http %s: cannot listen: %w; no bus or output was opened", hl.addr, err), false)
	}
	hl.ln = server.LimitListener(ln, f.maxConns)
	return hl, nil
}

// Close closes the listener if serve did not get to it; nil is fine.
func (hl *httpListener) Close() {
	if hl != nil {
		hl.ln.Close()
	}
}

// serveHTTP serves on the listener bound at start-up, after saying so:
// what it prints is true when it is printed.
func serveHTTP(ctx context.Context, gw *openedGateway, hl *httpListener, cfg server.HTTPConfig, stdout, stderr io.Writer, log *slog.Logger) int {
	addr := hl.addr
	hs := gw.srv.HTTPServer(cfg)
	hs.Handler = gw.ops.wrap(hs.Handler, cfg.Tokens, cfg.Certs)
	scheme := "http"
	if hl.tls != nil {
		scheme = "https"
		hs.TLSConfig = server.ClientTLS(hl.tls, cfg.Certs)
	}
	ln := hl.ln
	if gw.console != nil {
		hs.Handler = withConsole(hs.Handler, gw.console)
	}
	if host, _, err := net.SplitHostPort(addr); err == nil && cfg.Tokens != nil && hl.tls == nil && !isLoopback(host) {
		log.Warn("bearer tokens travel in clear text: serving plain HTTP on a non-loopback address, so anyone on the network path can read a token and replay it; serve with --tls-cert and --tls-key, or behind a TLS proxy on loopback", "addr", addr)
	}
	url := scheme + "://" + ln.Addr().String() + "/mcp"
	fmt.Fprintf(stdout, "promcp-device: serving %d tools of %s on %s (MCP streamable HTTP)\n", len(gw.srv.Tools()), gw.manifest.Gateway, url)
	fmt.Fprintf(stdout, "  connect an MCP client to %s, for example: claude mcp add --transport http %s %s\n", url, gw.manifest.Gateway, url)
	for _, g := range gw.manifest.Groups {
		fmt.Fprintf(stdout, "  group %s: %d tools on %s/%s\n", g.Name, len(cfg.Groups[g.Name].Tools()), url, g.Name)
	}
	if gw.console != nil {
		fmt.Fprintf(stdout, "  operator console on %s://%s/console/\n", scheme, ln.Addr())
	}
	if gw.ops != nil && gw.ops.mode != metricsOff {
		base := strings.TrimSuffix(url, "/mcp")
		fmt.Fprintf(stdout, "  metrics on %s/metrics, health on %s/healthz and %s/readyz (--metrics %s)\n", base, base, base, gw.ops.mode)
	}
	errc := make(chan error, 1)
	go func() {
		if hl.tls != nil {
			errc <- hs.ServeTLS(ln, "", "")
			return
		}
		errc <- hs.Serve(ln)
	}()
	select {
	case err := <-errc:
		fmt.Fprintln(stderr, "promcp-device serve:", err)
		return 1
	case <-ctx.Done():
	}
	log.Info("shutting down: finishing calls in flight")
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		// Idle streams (a client's GET listener) may hold on; the do_*
		// calls are what must finish, and drain waits for those.
		log.Warn("closing connections still open after 10s", "err", err)
		hs.Close()
	}
	code := 0
	for _, g := range cfg.Groups {
		code = max(code, drain(g, log, stderr))
	}
	return max(code, drain(gw.srv, log, stderr))
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// openedGateway is an opened manifest: capabilities bound to hardware or the
// simulator, and the proMCP server over them.
type openedGateway struct {
	manifest *manifests.Manifest
	set      *capabilities.Set
	srv      *server.Server
	gateway  *gateway.Gateway // serves srv; its groups are served through it too
	world    *sim.World       // nil on hardware
	modbus   *sim.ModbusEndpoints
	sysfsDir string // the simulated kernel files; "" on hardware

	console http.Handler      // the operator console (--console), or nil
	policy  *manifests.Policy // the policy it runs under, or nil
	// historyDB is the capabilities' history under --state; nil in memory.
	historyDB io.Closer
	ops       *opsEndpoints // /metrics, /healthz, /readyz; nil over stdio or with --metrics off
}

func (g *openedGateway) Close() error {
	if g.gateway != nil {
		// Jobs end (or stay recorded to resume) while the devices are open.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := g.gateway.Close(ctx); err != nil {
			g.srv.Logger().Error("stopping jobs", "err", err)
		}
		cancel()
	}
	g.closeLive()
	err := g.set.Close()
	g.Close0()
	return err
}

// gatewayOptions says how to open a gateway.
type gatewayOptions struct {
	simulate  bool
	timeScale float64     // with simulate: simulated seconds per real second (0: the manifest's)
	simStart  time.Time   // with simulate: the simulated clock's start (zero: now)
	clock     clock.Clock // with simulate: drives the simulation instead of a scaled real clock (the demo's manual clock)
	policy    *manifests.Policy
	approvals *approval.Signer
	server    []server.Option // more server options: store, auditor, read-only
	history   policy.State    // actuation history for cooldowns and rate limits; nil: in memory
	stateDir  string          // --state: where models keep what they remember (pulse totals); "": memory

	jobStore gateway.JobStore // --state: the jobs and dead-man timers; nil: memory
	// reserver, with --fleet, wraps the local reserver in the fleet's
	// shared one (fleet/shared); nil: local reservations only.
	reserver func(local policy.Reserver) policy.Reserver
	// peers, with --fleet, counts the reachable gateways for a policy's
	// quorum.min_peers; nil: 1.
	peers func() int
	ops   *opsEndpoints // metrics observers; nil: none
}

// simClock is the simulation's clock: o.clock when set, else a scaled
// real clock (from o.simStart, when set) at o.timeScale or the
// manifest's sim.time_scale.
func (o gatewayOptions) simClock(m *manifests.Manifest) clock.Clock {
	if o.clock != nil {
		return o.clock
	}
	scale := o.timeScale
	if scale <= 0 && m.Sim != nil {
		scale = m.Sim.TimeScale
	}
	if !o.simStart.IsZero() {
		return clock.NewScaledAt(o.simStart, scale)
	}
	return clock.NewScaled(scale)
}

// gatewayClock is the clock the gateway opened with o will run on (the
// simulation's with simulate, else the system's), fixed in o before the
// gateway opens, so that what starts before it (the fleet's shared
// state) runs on the same clock.
func (o *gatewayOptions) gatewayClock(m *manifests.Manifest) clock.Clock {
	if !o.simulate {
		return clock.System{}
	}
	o.clock = o.simClock(m)
	return o.clock
}

// openGateway binds m to the simulator or the host's buses, and registers
// its tools. Nothing is opened before m has validated. On the simulator,
// everything (physics, policy windows and cooldowns, timestamps) runs on
// the simulated clock, which runs at real speed unless told otherwise.
func openGateway(ctx context.Context, m *manifests.Manifest, o gatewayOptions, log *slog.Logger) (*openedGateway, error) {
	g := &openedGateway{manifest: m}
	var hw capabilities.Hardware
	var clk clock.Clock = clock.System{}
	if o.simulate {
		var err error
		if hw, clk, err = g.simHardware(m, o, log); err != nil {
			return nil, err
		}
	} else {
		hw = hostHardware(log)
	}
	set, err := capabilities.Open(ctx, m, hw, capabilities.Options{Log: log, Clock: clk, StateDir: o.stateDir, Observer: o.ops.readObserver()})
	if err != nil {
		g.Close0()
		return nil, err
	}
	g.set = set
	srv, err := server.New("promcp-device/"+m.Gateway, version, o.serverOptions(m, clk, log)...)
	if err != nil {
		set.Close()
		return nil, err
	}
	// RefreshAhead: a can_do asked again does not wait for readings that
	// aged out (they are read ahead in the background while it is asked).
	gopts := gateway.GatewayOptions{Policy: o.policy, State: o.history, Jobs: m.Jobs, JobStore: o.jobStore, Peers: o.peers, RefreshAhead: true}
	if o.reserver != nil { // --fleet: shared cooldowns, leases, rate limits and quorum
		if gopts.State == nil {
			gopts.State = policy.NewMemoryState()
		}
		gopts.Reserver = o.reserver(policy.NewLocalReserver(gopts.State))
	}
	if g.gateway, err = gateway.Serve(srv, set, gopts); err != nil {
		set.Close()
		return nil, err
	}
	if err := g.serveLive(m, o.stateDir, clk); err != nil {
		g.closeLive()
		set.Close()
		return nil, err
	}
	g.srv = srv
	g.policy = o.policy
	return g, nil
}

// serverOptions are the proMCP server's options for m on clk.
func (o gatewayOptions) serverOptions(m *manifests.Manifest, clk clock.Clock, log *slog.Logger) []server.Option {
	sopts := []server.Option{
		server.WithLogger(log),
		server.WithClock(clk),
		server.WithInstructions(instructions(m)),
		server.WithResources(),
		server.WithMeshSelf(meshSelf(m)),
	}
	if o.approvals != nil {
		sopts = append(sopts, server.WithApprovals(o.approvals))
	}
	roles := server.Roles{Declared: manifests.DefaultRoleNames, ReadOnly: manifests.DefaultReadOnlyRoles}
	if o.policy != nil {
		roles = server.Roles{Declared: o.policy.Roles, ReadOnly: o.policy.ReadOnly}
	}
	sopts = append(sopts, server.WithRoles(roles))
	sopts = append(sopts, o.server...)
	if len(m.Jobs) > 0 {
		sopts = append(sopts, server.WithTasks())
	}
	return sopts
}

// meshSelf is who the gateway says it is in PhysMCP's mesh methods while
// it stands alone (physmcp/list_peers, physmcp/mesh_status,
// physmcp/manifest: a mesh of one); with --fleet the fleet's answers
// replace them.
func meshSelf(m *manifests.Manifest) server.MeshSelf {
	locations, vocab := registryWords(m)
	physmcp, promcpVersion := meshVersions()
	return server.MeshSelf{ID: m.Gateway, Locations: locations, Vocabulary: vocab, Profile: "full",
		PhysMCPVersion: physmcp, PromcpVersion: promcpVersion}
}

// registryWords are the locations of m's capabilities ("" for one in the
// gateway's zone) and the words of their names, locations and tags, each
// sorted once: what a registry entry says of the gateway, in the fleet
// and alone.
func registryWords(m *manifests.Manifest) (locations, vocab []string) {
	for _, c := range m.Capabilities {
		locations = append(locations, c.Location)
		vocab = append(vocab, strings.FieldsFunc(strings.ToLower(c.Name+" "+c.Location+" "+strings.Join(c.Tags, " ")), func(r rune) bool { return r == '_' || r == ' ' })...)
	}
	slices.Sort(locations)
	slices.Sort(vocab)
	return slices.Compact(locations), slices.Compact(vocab)
}

// simHardware starts the simulated world of m (its Modbus lines
// listening on loopback) and returns its buses and pins, and the clock
// that drives it: the demo's, else a scaled real clock (from --sim-start
// if given) at o.timeScale, else the manifest's sim.time_scale.
func (g *openedGateway) simHardware(m *manifests.Manifest, o gatewayOptions, log *slog.Logger) (capabilities.Hardware, clock.Clock, error) {
	sc := o.simClock(m)
	w, err := sim.New(m, sc)
	if err != nil {
		return nil, nil, fmt.Errorf("simulator: %w", err)
	}
	g.world = w
	ep, err := w.StartLines()
	if err != nil {
		return nil, nil, fmt.Errorf("simulator: %w", err)
	}
	g.modbus = ep
	return capabilities.HardwareFuncs{
		I2C: func(ctx context.Context, b manifests.Bus) (i2cBusCloser, error) { return w.I2C(ctx, b.Name) },
		Pin: func(ctx context.Context, d manifests.Device) (pinIO, error) { return w.Pin(ctx, d.Pin) },
		TCP: func(ctx context.Context, b manifests.Bus) (net.Conn, error) {
			addr, ok := ep.Address(b.Name)
			if !ok {
				return nil, fmt.Errorf("sim bus %s: %w: not a simulated TCP bus", b.Name, drivers.ErrUnavailable)
			}
			return modbus.DialerTCP(addr)(ctx)
		},
		Serial: ep.OpenPort,
		Sysfs: func(ctx context.Context, b manifests.Bus) (sysfs.FS, error) {
			if g.sysfsDir == "" {
				dir, err := makeSimFilesDir()
				if err != nil {
					return nil, fmt.Errorf("simulator: %w", err)
				}
				g.sysfsDir = dir
			}
			dir := filepath.Join(g.sysfsDir, b.Name)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, fmt.Errorf("simulator: %w", err)
			}
			log.Debug("simulated kernel files", "bus", b.Name, "dir", dir)
			return w.Sysfs(ctx, b, dir)
		},
		SPI: func(ctx context.Context, b manifests.Bus) (spiPortCloser, error) { return w.SPI(ctx, b.Name) },
	}, sc, nil
}

// hostHardware is the host's buses and pins.
func hostHardware(log *slog.Logger) capabilities.Hardware {
	h := host.New(log)
	return capabilities.HardwareFuncs{
		I2C: func(ctx context.Context, b manifests.Bus) (i2cBusCloser, error) { return h.I2C(ctx, b.Device) },
		Pin: func(ctx context.Context, d manifests.Device) (pinIO, error) { return h.Pin(ctx, d.Pin) },
		TCP: func(ctx context.Context, b manifests.Bus) (net.Conn, error) { return modbus.DialerTCP(b.Address)(ctx) },
		Serial: func(ctx context.Context, b manifests.Bus) (modbus.Port, error) {
			return modbus.OpenPort(ctx, b.Serial)
		},
		Sysfs: capabilities.HostSysfs,
		SPI:   func(ctx context.Context, b manifests.Bus) (spiPortCloser, error) { return h.SPI(ctx, b.Device) },
	}
}

// policyChoice is the policy a gateway runs under, and how it was found.
type policyChoice struct {
	policy *manifests.Policy
	file   string // the file loaded; "" when none
	sha256 string // of the file's bytes
	how    string // how the file was chosen
	// none says why there is no policy, when there is none.
	none string
	// missing is true when a policy file was named but does not exist.
	missing bool
	// byName is true when the file was found beside the manifest by name,
	// the manifest not naming it.
	byName bool
}

// resolvePolicy finds the policy of the manifest at path: the --policy
// flag's file (which must exist), else the file the manifest names
// (policy: FILE, relative to the manifest; policy: none for none), else,
// when the manifest says nothing, NAME.policy.yml beside it (found by
// name, with a warning: the manifest should name it). A named file that
// does not exist is not an error here (serve refuses do_*, lint fails);
// one that does not validate is.
func resolvePolicy(path, flag string, m *manifests.Manifest) (policyChoice, error) {
	var pc policyChoice
	switch {
	case flag != "":
		pc.file, pc.how = flag, "given by --policy"
		if _, err := os.Stat(flag); err != nil {
			return pc, fmt.Errorf("promcp-device: --policy %s: %w", flag, err)
		}
	case m.Policy == manifests.PolicyNone:
		pc.none = "the manifest says policy: none"
		return pc, nil
	case m.Policy != "":
		pc.file, pc.how = m.PolicyFile(), "named by the manifest (policy: "+m.Policy+")"
		if _, err := os.Stat(pc.file); errors.Is(err, os.ErrNotExist) {
			pc.none, pc.missing = fmt.Sprintf("the policy file %s that the manifest names does not exist", pc.file), true
			pc.file = ""
			return pc, nil
		}
	default:
		f := manifests.PolicyPath(path)
		if _, err := os.Stat(f); errors.Is(err, os.ErrNotExist) {
			pc.none = fmt.Sprintf("the manifest names no policy (add policy: FILE, or policy: none) and there is no %s beside it", filepath.Base(f))
			return pc, nil
		}
		pc.file, pc.how, pc.byName = f, "found by name beside the manifest", true
	}
	data, err := os.ReadFile(pc.file)
	if err != nil {
		return pc, fmt.Errorf("load policy: %w", err)
	}
	if pc.policy, err = manifests.ParsePolicy(pc.file, data, m); err != nil {
		return pc, err
	}
	sum := sha256.Sum256(data)
	pc.sha256 = hex.EncodeToString(sum[:])
	return pc, nil
}

// announce logs the policy the gateway runs under, and returns why every
// do_* must be refused ("" when they may run): a manifest with actuators
// and no policy is served read-only unless allowNoPolicy says otherwise.
func (pc policyChoice) announce(log *slog.Logger, m *manifests.Manifest, allowNoPolicy, readOnly bool) string {
	if pc.policy != nil {
		if pc.byName {
			log.Warn("the manifest does not name its policy; using the file found beside it by name: add policy: "+filepath.Base(pc.file)+" to the manifest",
				"policy", pc.file)
		}
		log.Info("policy loaded", "policy", pc.file, "sha256", pc.sha256, "actions", len(pc.policy.Actions), "how", pc.how)
		return ""
	}
	actuators := 0
	for _, c := range m.Capabilities {
		if c.Do != nil {
			actuators++
		}
	}
	switch {
	case actuators == 0 || readOnly:
		log.Info("no policy", "why", pc.none)
		return ""
	case allowNoPolicy:
		log.Warn("NO POLICY: do_* runs with the manifest's constraints only: no roles per action, windows, cooldowns, interlocks or approvals (--allow-no-policy)", "why", pc.none)
		return ""
	}
	reason := "no policy is loaded (" + pc.none + "), so this gateway refuses every do_*: put the policy file where the manifest says, or restart with --allow-no-policy to actuate without one"
	log.Error("NO POLICY: every do_* is refused; read_* and can_do are served", "why", pc.none,
		"fix", "put the policy file where the manifest says, or restart with --allow-no-policy")
	return reason
}

func instructions(m *manifests.Manifest) string {
	s := "proMCP gateway " + m.Gateway + ". "
	if m.Description != "" {
		s += m.Description + " "
	}
	return s + "Tools follow proMCP: read_* observe (act only on quality good), can_do tells whether an action is allowed now and until when, do_* act idempotently by idempotency_key. Pattern: can_do, then read_*, then do_*, then read_* to verify."
}

// Close0 releases what openGateway started before the capabilities opened.
func (g *openedGateway) Close0() {
	if g.modbus != nil {
		g.modbus.Close()
	}
	if g.sysfsDir != "" {
		os.RemoveAll(g.sysfsDir)
	}
}
