package main

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/promcp/promcp-device/approval"
	"github.com/promcp/promcp-device/capabilities"
	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/driverconf"
	"github.com/promcp/promcp-device/drivers"
	"github.com/promcp/promcp-device/drivers/host"
	"github.com/promcp/promcp-device/drivers/modbus"
	"github.com/promcp/promcp-device/idempotency"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/policy"
	"github.com/promcp/promcp-device/server"
	"github.com/promcp/promcp-device/sim"
)

// listFlag collects a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func cmdServe(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	manifest := fs.String("manifest", "", "manifest `FILE` to serve (required)")
	simulate := fs.Bool("sim", false, "serve on the built-in simulator instead of hardware")
	timeScale := fs.Float64("time-scale", 0, "with --sim: simulated seconds per real second (overrides the manifest's sim.time_scale)")
	scenario := fs.String("scenario", "", "with --sim: play the fault scenario `FILE` on the simulator's clock from start-up")
	httpAddr := fs.String("http", "", "serve streamable HTTP on `ADDR` (host:port; a bare :port binds loopback) instead of stdio")
	var origins listFlag
	fs.Var(&origins, "allow-origin", "with --http: a browser `ORIGIN` allowed to call (repeatable); loopback origins are always allowed")
	role := fs.String("role", "operator", "the caller's `ROLE` for every call over stdio, and over HTTP without --tokens")
	stateDir := fs.String("state", "", "keep the idempotency store and the audit log in `DIR` (created if needed); without it results are kept in memory and nothing is audited")
	keyTTL := fs.Duration("key-ttl", idempotency.DefaultTTL, "how long a do_* result is kept for replay by its idempotency_key")
	tokensFile := fs.String("tokens", "", "with --http: require bearer tokens listed (hashed) in `FILE`; see promcp-device token add")
	tlsCert := fs.String("tls-cert", "", "with --http: serve HTTPS with the certificate in `FILE` (PEM; with --tls-key)")
	tlsKey := fs.String("tls-key", "", "with --http: the private key `FILE` (PEM) of --tls-cert")
	readOnly := fs.Bool("read-only", false, "serve only read_* and can_do; no do_* tool is registered")
	policyFile := fs.String("policy", "", "policy `FILE`, instead of the one the manifest names (policy: FILE)")
	allowNoPolicy := fs.Bool("allow-no-policy", false, "serve do_* even without a policy (only the manifest's constraints apply); without it a gateway with no policy refuses every do_*")
	approvalKey := fs.String("approval-key", "", "accept approvals from `promcp-device approve` signed with the key in `FILE` (created, mode 0600, when missing)")
	oobOnly := fs.Bool("approval-out-of-band-only", false, "accept only approve tokens, never an answer through the MCP client, even where the policy says approval via: elicitation")
	simStart := fs.String("sim-start", "", "with --sim: the simulated clock's start `TIME` (RFC 3339), to simulate another time of day (default: now)")
	logLevel := fs.String("log-level", "info", "log `LEVEL` on stderr: debug, info, warn, error")
	maxConns := fs.Int("max-conns", server.DefaultMaxConns, "with --http: the most connections served at once (`N`); more wait to be accepted")
	maxSessions := fs.Int("max-sessions", server.DefaultMaxSessions, "with --http: the most MCP sessions open at once (`N`), all tokens together")
	maxTokenSessions := fs.Int("max-sessions-per-token", server.DefaultMaxSessionsPerCaller, "with --http: the most MCP sessions one token holds at once (`N`)")
	sessionIdle := fs.Duration("session-idle", server.DefaultSessionIdleTTL, "with --http: end a session unused for this `DURATION` (its client gets 404 and starts a new one)")
	auditCfg := auditFlags(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *manifest == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "promcp-device serve: --manifest FILE is required (and takes no other arguments)")
		return 2
	}
	log, err := newLogger(stderr, *logLevel)
	if err != nil {
		fmt.Fprintln(stderr, "promcp-device serve:", err)
		return 2
	}
	if *keyTTL <= 0 {
		fmt.Fprintln(stderr, "promcp-device serve: --key-ttl must be more than 0")
		return 2
	}
	if *keyTTL < idempotency.DefaultTTL {
		log.Warn("--key-ttl is under 24h: an agent retrying a day-old action after that would actuate again", "key_ttl", keyTTL.String())
	}
	for name, bad := range map[string]bool{"--max-conns": *maxConns <= 0, "--max-sessions": *maxSessions <= 0,
		"--max-sessions-per-token": *maxTokenSessions <= 0, "--session-idle": *sessionIdle <= 0} {
		if bad {
			fmt.Fprintf(stderr, "promcp-device serve: %s must be more than 0\n", name)
			return 2
		}
	}
	if (*tlsCert == "") != (*tlsKey == "") {
		fmt.Fprintln(stderr, "promcp-device serve: --tls-cert and --tls-key go together")
		return 2
	}
	if *httpAddr == "" && (*tokensFile != "" || *tlsCert != "") {
		fmt.Fprintln(stderr, "promcp-device serve: --tokens and --tls-cert apply to --http only")
		return 2
	}
	var tokens *server.Tokens
	if *tokensFile != "" {
		if tokens, err = server.LoadTokens(*tokensFile); err != nil {
			fmt.Fprintln(stderr, "promcp-device serve:", err)
			return 1
		}
		if tokens.Len() == 0 {
			fmt.Fprintf(stderr, "promcp-device serve: --tokens %s lists no token; add one with: promcp-device token add --tokens %s --name NAME --role operator\n", *tokensFile, *tokensFile)
			return 1
		}
	}
	if *httpAddr != "" && tokens == nil {
		if host, _, err := net.SplitHostPort(bindAddr(*httpAddr)); err == nil && !isLoopback(host) {
			fmt.Fprintf(stderr, "promcp-device serve: refusing to serve --http %s without --tokens: anyone who reaches a non-loopback address could actuate.\n"+
				"  Create a token with: promcp-device token add --tokens tokens.txt --name NAME --role operator\n"+
				"  then serve with --tokens tokens.txt (and --tls-cert/--tls-key), or bind 127.0.0.1.\n", *httpAddr)
			return 2
		}
	}

	if *scenario != "" && !*simulate {
		fmt.Fprintln(stderr, "promcp-device serve: --scenario needs --sim (faults are injected in the simulator only)")
		return 2
	}
	m, err := manifests.Load(*manifest)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	var sc *manifests.Scenario
	if *scenario != "" {
		if sc, err = manifests.LoadScenario(*scenario, m); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
	}
	opts := gatewayOptions{simulate: *simulate, timeScale: *timeScale}
	pc, err := resolvePolicy(*manifest, *policyFile, m)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	opts.policy = pc.policy
	roles := manifests.DefaultRoleNames
	if pc.policy != nil {
		roles = pc.policy.Roles
	}
	if !slices.Contains(roles, *role) {
		fmt.Fprintf(stderr, "promcp-device serve: --role %q is not declared (want %s)\n", *role, strings.Join(roles, ", "))
		return 2
	}
	if tokens != nil {
		if err := tokens.CheckRoles(roles); err != nil {
			fmt.Fprintln(stderr, "promcp-device serve:", err)
			return 1
		}
	}
	if refuse := pc.announce(log, m, *allowNoPolicy, *readOnly); refuse != "" {
		opts.server = append(opts.server, server.WithRefuseDo(refuse))
	}
	if pc.policy != nil && *approvalKey == "" && !*readOnly {
		for tool, a := range pc.policy.Actions {
			if a.Approval != nil && a.Approval.Via != manifests.ViaElicitation {
				log.Warn("the policy asks for out-of-band approval but serve has no --approval-key: this action can never be approved", "action", tool)
			}
		}
	}
	if *oobOnly && pc.policy != nil {
		for _, a := range pc.policy.Actions {
			if a.Approval != nil {
				a.Approval.Via = manifests.ViaOutOfBand
			}
		}
		log.Info("approvals: out-of-band only (--approval-out-of-band-only): an answer through the MCP client approves nothing")
	}
	if *simStart != "" {
		t, err := time.Parse(time.RFC3339, *simStart)
		if err != nil || !*simulate {
			fmt.Fprintf(stderr, "promcp-device serve: --sim-start %q: want an RFC 3339 time such as 2026-11-30T22:00:00+01:00, with --sim\n", *simStart)
			return 2
		}
		opts.simStart = t
	}
	if *approvalKey != "" {
		key, err := approval.LoadOrCreateKey(*approvalKey)
		if err == nil {
			opts.approvals, err = approval.NewSigner(key)
		}
		if err != nil {
			fmt.Fprintln(stderr, "promcp-device serve:", err)
			return 1
		}
	}
	st, err := openState(*stateDir, *keyTTL, auditCfg, log)
	if err != nil {
		fmt.Fprintln(stderr, "promcp-device serve:", err)
		return 1
	}
	defer st.Close()
	if st.store != nil {
		opts.server = append(opts.server, server.WithStore(st.store, *keyTTL), server.WithAuditor(st.audit), server.WithLedger(st.ledger))
		opts.history = st.history
	} else {
		opts.server = append(opts.server, server.WithStore(idempotency.NewMemory(*keyTTL, nil), *keyTTL))
		log.Warn("no --state: do_* results and the actuation history (cooldowns, rate limits) are kept in memory only (a restart forgets them), and nothing is audited")
	}
	if *readOnly {
		opts.server = append(opts.server, server.WithReadOnly())
	}
	gw, err := openGateway(ctx, m, opts, log)
	if err != nil {
		fmt.Fprintln(stderr, "promcp-device serve:", err)
		return 1
	}
	defer gw.Close()
	if sc != nil {
		if err := gw.world.Play(sc); err != nil {
			fmt.Fprintln(stderr, "promcp-device serve:", err)
			return 1
		}
		log.Info("playing fault scenario", "scenario", sc.Name, "faults", len(sc.Faults))
	}

	caller := server.Caller{Name: "local", Role: *role}
	if *httpAddr == "" {
		log.Info("serving over stdio", "manifest", *manifest, "tools", len(gw.srv.Tools()), "sim", *simulate, "state", *stateDir)
		err := gw.srv.ServeStdio(ctx, stdin, stdout, caller)
		code := drain(gw.srv, log, stderr)
		if err != nil && !errors.Is(err, context.Canceled) {
			fmt.Fprintln(stderr, "promcp-device serve:", err)
			return 1
		}
		return code
	}
	cfg := server.HTTPConfig{AllowedOrigins: origins, Caller: caller, Tokens: tokens,
		Sessions: server.SessionLimits{Total: *maxSessions, PerCaller: *maxTokenSessions, IdleTTL: *sessionIdle}}
	return serveHTTP(ctx, gw, *httpAddr, *maxConns, cfg, *tlsCert, *tlsKey, stdout, stderr, log)
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

// serveHTTP listens, then says so, then serves: what it prints is true
// when it is printed (a bad certificate fails before).
func serveHTTP(ctx context.Context, gw *gateway, addr string, maxConns int, cfg server.HTTPConfig, tlsCert, tlsKey string, stdout, stderr io.Writer, log *slog.Logger) int {
	addr = bindAddr(addr)
	hs := gw.srv.HTTPServer(cfg)
	scheme := "http"
	if tlsCert != "" {
		scheme = "https"
		cert, err := tls.LoadX509KeyPair(tlsCert, tlsKey)
		if err != nil {
			fmt.Fprintf(stderr, "promcp-device serve: --tls-cert %s --tls-key %s: %v\n", tlsCert, tlsKey, err)
			return 1
		}
		hs.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(stderr, "promcp-device serve: --http %s: %v\n", addr, err)
		return 1
	}
	ln = server.LimitListener(ln, maxConns)
	if host, _, err := net.SplitHostPort(addr); err == nil && cfg.Tokens != nil && tlsCert == "" && !isLoopback(host) {
		log.Warn("bearer tokens travel in clear text: serving plain HTTP on a non-loopback address, so anyone on the network path can read a token and replay it; serve with --tls-cert and --tls-key, or behind a TLS proxy on loopback", "addr", addr)
	}
	url := scheme + "://" + ln.Addr().String() + "/mcp"
	fmt.Fprintf(stdout, "promcp-device: serving %d tools of %s on %s (MCP streamable HTTP)\n", len(gw.srv.Tools()), gw.manifest.Gateway, url)
	fmt.Fprintf(stdout, "  connect an MCP client to %s, for example: claude mcp add --transport http %s %s\n", url, gw.manifest.Gateway, url)
	errc := make(chan error, 1)
	go func() {
		if tlsCert != "" {
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
	return drain(gw.srv, log, stderr)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// gateway is an opened manifest: capabilities bound to hardware or the
// simulator, and the proMCP server over them.
type gateway struct {
	manifest *manifests.Manifest
	set      *capabilities.Set
	srv      *server.Server
	world    *sim.World // nil on hardware
	modbus   *sim.ModbusEndpoints
}

func (g *gateway) Close() error {
	err := g.set.Close()
	if g.modbus != nil {
		g.modbus.Close()
	}
	return err
}

// gatewayOptions says how to open a gateway.
type gatewayOptions struct {
	simulate  bool
	timeScale float64   // with simulate: simulated seconds per real second (0: the manifest's)
	simStart  time.Time // with simulate: the simulated clock's start (zero: now)
	clock     sim.Clock // with simulate: drives the simulation instead of a scaled real clock (the demo's manual clock)
	policy    *manifests.Policy
	approvals *approval.Signer
	server    []server.Option // more server options: store, auditor, read-only
	history   policy.State    // actuation history for cooldowns and rate limits; nil: in memory
}

// openGateway binds m to the simulator or the host's buses, and registers
// its tools. Nothing is opened before m has validated. On the simulator,
// everything (physics, policy windows and cooldowns, timestamps) runs on
// the simulated clock, which runs at real speed unless told otherwise.
func openGateway(ctx context.Context, m *manifests.Manifest, o gatewayOptions, log *slog.Logger) (*gateway, error) {
	g := &gateway{manifest: m}
	var hw capabilities.Hardware
	var clk sim.Clock = clock.System{}
	if o.simulate {
		scale := o.timeScale
		if scale <= 0 && m.Sim != nil {
			scale = m.Sim.TimeScale
		}
		var sc sim.Clock = sim.NewScaledClock(scale)
		switch {
		case o.clock != nil:
			sc = o.clock
		case !o.simStart.IsZero():
			sc = sim.NewScaledClockAt(o.simStart, scale)
		}
		clk = sc
		w, err := sim.New(m, sc)
		if err != nil {
			return nil, fmt.Errorf("simulator: %w", err)
		}
		g.world = w
		ep, err := w.StartLines()
		if err != nil {
			return nil, fmt.Errorf("simulator: %w", err)
		}
		g.modbus = ep
		hw = capabilities.HardwareFuncs{
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
		}
	} else {
		h := host.New(log)
		hw = capabilities.HardwareFuncs{
			I2C: func(ctx context.Context, b manifests.Bus) (i2cBusCloser, error) { return h.I2C(ctx, b.Device) },
			Pin: func(ctx context.Context, d manifests.Device) (pinIO, error) { return h.Pin(ctx, d.Pin) },
			TCP: func(ctx context.Context, b manifests.Bus) (net.Conn, error) { return modbus.DialerTCP(b.Address)(ctx) },
			Serial: func(ctx context.Context, b manifests.Bus) (modbus.Port, error) {
				return modbus.OpenPort(ctx, driverconf.Serial(b.Serial))
			},
		}
	}
	set, err := capabilities.Open(ctx, m, hw, capabilities.Options{Log: log, Clock: clk})
	if err != nil {
		g.Close0()
		return nil, err
	}
	g.set = set
	sopts := []server.Option{
		server.WithLogger(log),
		server.WithClock(clk),
		server.WithInstructions(instructions(m)),
	}
	if o.approvals != nil {
		sopts = append(sopts, server.WithApprovals(o.approvals))
	}
	sopts = append(sopts, o.server...)
	srv, err := server.New("promcp-device/"+m.Gateway, version, sopts...)
	if err != nil {
		set.Close()
		return nil, err
	}
	if _, err := server.Serve(srv, set, server.GatewayOptions{Policy: o.policy, State: o.history}); err != nil {
		set.Close()
		return nil, err
	}
	g.srv = srv
	return g, nil
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

func newLogger(w io.Writer, level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l})), nil
}

// Close0 releases what openGateway started before the capabilities opened.
func (g *gateway) Close0() {
	if g.modbus != nil {
		g.modbus.Close()
	}
}
