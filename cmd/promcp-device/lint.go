package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/promcp/promcp-device/lint"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/promcp"
	"github.com/promcp/promcp-device/server"
)

func cmdLint(c *cli) (code int) {
	lf := addLintFlags(c)
	tokensFile := c.FlagSet.String("tokens", "", "also check the roles of the tokens `FILE` against each manifest's policy (undeclared, or one edit from a declared role)")
	c.args = flagsFirst(c.FlagSet, c.args) // lint FILE --strict as lint --strict FILE
	if !c.parse() {
		return 2
	}
	if lf.surface(c.Args()) {
		return lintSurface(c.ctx, lf, c.Args(), c.stdout, c.stderr)
	}
	if c.NArg() == 0 {
		return c.usage("name at least one manifest, policy, fleet, scenario or site test FILE, a tool list FILE.json, --url URL or -- COMMAND ARGS...")
	}
	// A manifest's lint checks its policy: linting both files reports an
	// error of the policy once, not once per file.
	warnings := &warningCount{w: &onceLines{w: c.stdout, seen: map[string]bool{}}}
	c.stdout = warnings
	defer func() {
		if lf.strict && warnings.n > 0 && code == 0 {
			fmt.Fprintf(c.stderr, "promcp-device lint: %d warnings, and --strict makes warnings fail\n", warnings.n)
			code = 1
		}
	}()
	for _, path := range c.Args() {
		if !lintFile(path, c.stdout) {
			code = 1
		}
		if *tokensFile != "" && !manifests.IsCompanion(path) && !lintTokens(path, *tokensFile, c.stdout) {
			code = 1
		}
	}
	return code
}

// lintTokens checks that every token of the tokens file holds a role the
// manifest's policy declares, naming the declared role one edit away when
// there is one (veiwer for viewer). A manifest that does not load was
// reported by lintFile: nothing more is said of it.
func lintTokens(manifest, file string, stdout io.Writer) bool {
	tokens, err := server.LoadTokens(file)
	if err != nil {
		fmt.Fprintln(stdout, err)
		return false
	}
	data, err := os.ReadFile(manifest)
	if err != nil || manifests.IsScenario(data) {
		return true
	}
	m, err := manifests.Load(manifest)
	if err != nil {
		return true
	}
	pc, err := resolvePolicy(manifest, "", m)
	if err != nil {
		return true
	}
	roles, by := manifests.DefaultRoleNames, "the default roles"
	if pc.policy != nil {
		roles, by = pc.policy.Roles, pc.file
	}
	ok := true
	for _, tk := range tokens.List() {
		if slices.Contains(roles, tk.Role) {
			continue
		}
		hint := ""
		if near := manifests.NearRole(tk.Role, roles); near != "" {
			hint = fmt.Sprintf("; one edit from %q: a misspelling?", near)
		}
		fmt.Fprintf(stdout, "%s:%d: token %s has role %q, which %s does not declare (want %s)%s\n",
			file, tk.Line, tk.Name, tk.Role, by, strings.Join(roles, ", "), hint)
		ok = false
	}
	if ok {
		fmt.Fprintf(stdout, "%s: ok: %d tokens, every role declared by %s\n", file, len(tokens.List()), by)
	}
	return ok
}

// lintFile checks one file, of the kind its content says: a scenario, a
// fleet file, a site test, a policy (with the manifest beside it) or a
// manifest (with its policy). It reports whether it passed.
func lintFile(path string, stdout io.Writer) bool {
	if data, err := os.ReadFile(path); err == nil { // else Load says why
		switch kind := manifests.KindOf(data); {
		case kind == manifests.KindScenario:
			return lintScenario(path, data, stdout)
		case kind == manifests.KindFleet:
			return lintFleet(path, data, stdout)
		case kind == manifests.KindSiteTest:
			return lintSiteTest(path, stdout)
		case kind == manifests.KindPolicy || kind == manifests.KindPhysMCPPolicy ||
			manifests.IsCompanion(path) && (kind == manifests.KindUnknown || kind == manifests.KindNotYAMLMapping):
			return lintPolicyFile(path, stdout)
		case kind == manifests.KindUnknown:
			return unknownKind(path, data, stdout)
		}
	}
	m, err := manifests.Load(path)
	if err != nil {
		fmt.Fprintln(stdout, commandErr("lint", err))
		return false
	}
	reads, dos := 0, 0
	for _, c := range m.Capabilities {
		reads++
		if c.Do != nil {
			dos++
		}
	}
	fmt.Fprintf(stdout, "%s: ok: gateway %s, %d buses, %d devices, %d tools (%d read_*, %d do_*, can_do)\n",
		path, m.Gateway, len(m.Buses), len(m.Devices), reads+dos+1, reads, dos)
	for _, j := range m.Jobs {
		fmt.Fprintf(stdout, "%s: ok: %s\n", path, j)
	}
	lintGroups(path, m, stdout)
	lintModiconAddresses(path, m, stdout)
	pc, err := resolvePolicy(path, "", m)
	if err != nil {
		fmt.Fprintln(stdout, err)
		return false
	}
	switch {
	case pc.policy != nil && pc.byName:
		fmt.Fprintf(stdout, "%s: warning: the manifest does not name its policy; serve uses %s, found by name beside it: add policy: %s\n",
			path, pc.file, filepath.Base(pc.file))
		fmt.Fprintf(stdout, "%s: ok: policy for %d actions of %s, sha256 %s, %s\n", pc.file, len(pc.policy.Actions), path, pc.sha256, pc.how)
	case pc.policy != nil:
		fmt.Fprintf(stdout, "%s: ok: policy for %d actions of %s, sha256 %s, %s\n", pc.file, len(pc.policy.Actions), path, pc.sha256, pc.how)
	case pc.missing:
		fmt.Fprintf(stdout, "%s: error: %s; serve would refuse every do_*\n", path, pc.none)
		return false
	case dos > 0 && m.Policy == manifests.PolicyNone:
		fmt.Fprintf(stdout, "%s: warning: no policy (policy: none): serve refuses every do_* unless started with --allow-no-policy\n", path)
	case dos > 0:
		fmt.Fprintf(stdout, "%s: warning: no policy: %s; serve refuses every do_* unless started with --allow-no-policy\n", path, pc.none)
	default:
		fmt.Fprintf(stdout, "%s: ok: no policy (no do_* to govern)\n", path)
	}
	lintActionsWithoutRules(path, m, pc.policy, stdout)
	lintPolicyNotes(pc.policy, stdout)
	return true
}

// lintPolicyNotes warns, where the policy says it, of what it declares
// that serve accepts but does not honour in full.
func lintPolicyNotes(pol *manifests.Policy, stdout io.Writer) {
	if pol == nil {
		return
	}
	// A manifest linted alone is a lone gateway (one peer).
	notes := append(slices.Clone(pol.Notes), pol.NeverAllowed(1)...)
	slices.SortStableFunc(notes, func(a, b manifests.Note) int {
		return cmp.Or(cmp.Compare(a.Pos.Line, b.Pos.Line), cmp.Compare(a.Pos.Column, b.Pos.Column))
	})
	for _, n := range notes {
		fmt.Fprintf(stdout, "%s: warning: %s: %s\n", n.Pos, n.Field, n.Msg)
	}
}

// lintPolicyFile checks a policy file with the manifest beside it.
func lintPolicyFile(path string, stdout io.Writer) bool {
	if !strings.HasSuffix(path, ".policy"+filepath.Ext(path)) {
		fmt.Fprintf(stdout, "%s: not a manifest or a policy file (want NAME.yml or NAME.policy.yml)\n", path)
		return false
	}
	m, err := manifests.Load(manifests.ManifestOf(path))
	var pc policyChoice
	if err == nil {
		pc, err = resolvePolicy(manifests.ManifestOf(path), path, m)
	}
	if err != nil {
		fmt.Fprintln(stdout, err)
		return false
	}
	fmt.Fprintf(stdout, "%s: ok: policy for %s\n", path, manifests.ManifestOf(path))
	lintPolicyNotes(pc.policy, stdout)
	return true
}

// lintScenario checks a fault scenario, against the manifest it names when
// it names one.
func lintScenario(path string, data []byte, stdout io.Writer) bool {
	sc, err := manifests.ParseScenario(path, data, nil)
	if err != nil {
		fmt.Fprintln(stdout, err)
		return false
	}
	against := "no manifest named: devices not checked"
	if sc.Manifest != "" {
		mpath := sc.Manifest
		if !filepath.IsAbs(mpath) {
			mpath = filepath.Join(filepath.Dir(path), mpath)
		}
		m, err := manifests.Load(mpath)
		if err != nil {
			fmt.Fprintf(stdout, "%s: manifest %s: %v\n", path, sc.Manifest, err)
			return false
		}
		if sc, err = manifests.ParseScenario(path, data, m); err != nil {
			fmt.Fprintln(stdout, err)
			return false
		}
		against = "checked against " + mpath
	}
	fmt.Fprintf(stdout, "%s: ok: scenario %s, %d faults (%s)\n", path, sc.Name, len(sc.Faults), against)
	return true
}

// toolJSON is one tool as `tools --json` prints it: the MCP fields plus the
// output schema again under responseSchema, which proMCP linters read.
type toolJSON struct {
	Name           string          `json:"name"`
	Kind           promcp.Kind     `json:"kind"`
	Title          string          `json:"title,omitempty"`
	Description    string          `json:"description"`
	InputSchema    json.RawMessage `json:"inputSchema"`
	OutputSchema   json.RawMessage `json:"outputSchema"`
	ResponseSchema json.RawMessage `json:"responseSchema"`
	Annotations    any             `json:"annotations"`
}

func cmdTools(c *cli) int {
	manifest := c.String("manifest", "", "manifest `FILE` (required)")
	asJSON := c.Bool("json", false, "print the tools as JSON")
	group := c.String("group", "", "list (or --check) the tools of the manifest's tool group `NAME`, served at /mcp/NAME")
	served := toolsServeFlags(c.FlagSet)
	check := c.String("check", "", "instead of listing, check the tools a running server at `URL` (streamable HTTP, such as http://127.0.0.1:8080/mcp) serves against the manifest: exit 1 on drift (the drift part of lint --manifest FILE --url URL)")
	if !c.parse() {
		return 2
	}
	if *manifest == "" {
		return c.usage("--manifest FILE is required")
	}
	m := c.load(*manifest)
	if m == nil {
		return 1
	}
	expected, err := expectedTools(m, *group)
	if err != nil {
		return c.usage("%v", err)
	}
	if *check != "" {
		return checkServer(c.ctx, expected, *check, c.stdout, c.stderr)
	}
	// The tool surface depends only on the manifest: build it on the
	// simulator so that listing never touches hardware.
	opts, err := served.options(*manifest, m)
	if err != nil {
		return c.usage("%v", err)
	}
	gw, err := openGateway(c.ctx, m, opts, slog.New(slog.DiscardHandler))
	if err != nil {
		return c.fail(err)
	}
	defer gw.Close()
	srv := gw.srv
	if *group != "" {
		groups, err := openGroups(gw)
		if err != nil {
			return c.fail(err)
		}
		srv = groups[*group]
	}
	if err := printTools(c.stdout, srv, *asJSON); err != nil {
		return c.fail(err)
	}
	return 0
}

// printTools prints the tools srv serves: a line each, or with asJSON as
// a JSON list.
func printTools(w io.Writer, srv *server.Server, asJSON bool) error {
	var out []toolJSON
	for _, t := range srv.Tools() {
		out = append(out, toolJSON{
			Name: t.MCP.Name, Kind: t.Kind, Title: t.MCP.Title, Description: t.MCP.Description,
			InputSchema: t.MCP.RawInputSchema, OutputSchema: t.MCP.RawOutputSchema,
			ResponseSchema: t.MCP.RawOutputSchema, Annotations: t.MCP.Annotations,
		})
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	for _, t := range out {
		fmt.Fprintf(w, "%-8s %-28s %s\n", t.Kind, t.Name, firstLine(t.Description))
	}
	return nil
}

func firstLine(s string) string {
	for i, r := range s {
		if r == '\n' {
			return s[:i]
		}
	}
	return s
}

// checkServer lists the tools of the server at url and checks them against
// m: the drift gate, usable in CI. It is the drift part of `lint --manifest
// FILE --url URL` (rules X001, X002), printed as a triage.
func checkServer(ctx context.Context, expected []string, url string, stdout, stderr io.Writer) int {
	s, err := lint.Connect(ctx, lint.Target{URL: url}, "promcp-device tools --check", version)
	if err != nil {
		fmt.Fprintf(stderr, "promcp-device tools --check %s: %v\n", url, err)
		return 1
	}
	defer s.Close()
	r := lint.Drift(&lint.Report{}, expected, s.Tools)
	fmt.Fprintf(stdout, "%s: %d read_*, %d do_*, %d can_do\n", url, len(r.Read), len(r.Do), len(r.CanDo))
	seeds := r.Seeds()
	server, native := seeds.Summary()
	fmt.Fprintf(stdout, "  seed buckets: real_dispatch %d, read_only %d, native_only %d (%d execute on the server, %d native only)\n",
		len(seeds.RealDispatch), len(seeds.ReadOnly), len(seeds.NativeOnly), server, native)
	for _, l := range []struct {
		what  string
		names []string
	}{{"missing (in the manifest, not served)", r.Missing}, {"unexpected (served, not in the manifest)", r.Unexpected},
		{"unclassified (not read_*, do_* or can_do)", r.Unclassified}, {"served more than once", r.Duplicates}} {
		if len(l.names) > 0 {
			fmt.Fprintf(stdout, "  %s: %s\n", l.what, strings.Join(l.names, ", "))
		}
	}
	if !r.OK() {
		fmt.Fprintln(stdout, "drift: the served tools do not match the manifest")
		return 1
	}
	fmt.Fprintln(stdout, "ok: every served tool is classified once and matches the manifest")
	return 0
}
