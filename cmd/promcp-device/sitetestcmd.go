package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/idempotency"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/server"
	"github.com/promcp/promcp-device/sitetest"
)

// cmdTest runs site tests: each file's steps through the real MCP server
// in process, on the simulator and a driven clock. Exit 0 when every test
// passes, 1 when a step fails, 2 when a file cannot be loaded or run.
func cmdTest(c *cli) int {
	junit := c.String("junit", "", "also write the results as JUnit XML to `FILE`")
	update := c.Bool("update", false, "write the values observed at the paths of each step's record: list into the file, as its expect")
	// Flags may come after the files too (test site-tests/*.yml --junit F).
	var files []string
	for {
		if !c.parse() {
			return 2
		}
		if c.NArg() == 0 {
			break
		}
		files = append(files, c.Arg(0))
		c.args = c.Args()[1:]
	}
	if len(files) == 0 {
		return c.usage("name one or more site test files (promcp-device test site-tests/*.yml)")
	}
	started := time.Now()
	code := 0
	var results []*sitetest.Result
	unloaded := 0
	for _, path := range files {
		t, err := sitetest.Load(path)
		if err != nil {
			fmt.Fprintln(c.stderr, err)
			code = 2
			unloaded++
			continue
		}
		r := sitetest.Run(c.ctx, t, openSiteTest)
		results = append(results, r)
		switch {
		case r.Err != nil:
			code = 2
		case r.Failed() > 0:
			code = max(code, 1)
		}
		if *update && r.Err == nil {
			if err := writeUpdate(t, r, c.stdout); err != nil {
				fmt.Fprintln(c.stderr, "promcp-device test --update:", err)
				code = 2
			}
		}
	}
	sitetest.ReportAll(c.stdout, results, unloaded)
	if *junit != "" {
		if err := writeJUnit(*junit, results, started); err != nil {
			fmt.Fprintln(c.stderr, "promcp-device test: --junit:", err)
			return 2
		}
	}
	return code
}

func writeUpdate(t *sitetest.Test, r *sitetest.Result, stdout io.Writer) error {
	out, changed, err := sitetest.Update(t, r)
	if err != nil || !changed {
		return err
	}
	info, err := os.Stat(t.File)
	if err != nil {
		return err
	}
	if err := os.WriteFile(t.File, out, info.Mode().Perm()); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "updated %s: recorded what came back as the expectations of its record steps\n", t.File)
	return nil
}

func writeJUnit(path string, results []*sitetest.Result, started time.Time) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := sitetest.JUnit(f, results, started); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// openSiteTest opens a site test's manifest as `serve --sim` does (the
// same openGateway), with its policy, on the test's manual clock, with an
// in-memory idempotency store on that clock and aud as the audit log.
func openSiteTest(ctx context.Context, t *sitetest.Test, clk *clock.Manual, aud server.Auditor) (*sitetest.Env, error) {
	pc, err := resolvePolicy(t.Manifest, t.Policy, t.Loaded)
	if err != nil {
		return nil, err
	}
	if err := checkRoles(t, pc.policy); err != nil {
		return nil, err
	}
	log := slog.New(slog.DiscardHandler)
	opts := gatewayOptions{simulate: true, clock: clk, policy: pc.policy}
	ttl := idempotency.DefaultTTL
	opts.server = append(opts.server, server.WithStore(idempotency.NewMemory(ttl, clk), ttl), server.WithAuditor(aud))
	if refuse := pc.announce(log, t.Loaded, false, false); refuse != "" {
		opts.server = append(opts.server, server.WithRefuseDo(refuse))
	}
	var desk *server.Desk
	if t.Decides() { // as serve --console: calls that need approval wait on the desk
		desk = server.NewDesk(nil, 0)
		opts.server = append(opts.server, server.WithDesk(desk))
	}
	gw, err := openGateway(ctx, t.Loaded, opts, log)
	if err != nil {
		return nil, err
	}
	return &sitetest.Env{MCP: gw.srv.MCP(), World: gw.world, Close: gw.Close, Desk: desk}, nil
}

// checkRoles refuses a caller whose role the policy does not declare (as
// serve refuses such a --role): a misspelt role would test nothing.
func checkRoles(t *sitetest.Test, pol *manifests.Policy) error {
	roles := manifests.DefaultRoleNames
	if pol != nil {
		roles = pol.Roles
	}
	check := func(c sitetest.Caller, where string) error {
		if !slices.Contains(roles, c.Role) {
			return fmt.Errorf("%s: role %q is not declared by the policy (want %s)", where, c.Role, strings.Join(roles, ", "))
		}
		return nil
	}
	if err := check(t.Caller, t.File+": caller"); err != nil {
		return err
	}
	for i, st := range t.Steps {
		if st.As != nil {
			if err := check(*st.As, fmt.Sprintf("%s: steps[%d].as", st.Pos, i)); err != nil {
				return err
			}
		}
		if st.Decide != nil {
			if err := check(st.Decide.As, fmt.Sprintf("%s: steps[%d] decided as", st.Pos, i)); err != nil {
				return err
			}
		}
	}
	for _, r := range t.Approvers {
		if t.Decides() && !slices.Contains(roles, r) {
			return fmt.Errorf("%s: approvers: role %q is not declared by the policy (want %s)", t.File, r, strings.Join(roles, ", "))
		}
	}
	return nil
}
