package main

// Commissioning a site: `read` reads every capability once and prints
// the values with their quality, `do --dry-run` says what an action would
// do now (the policy's answer, and what would be written to which
// register) without writing. Both open the manifest's buses as serve does
// (or the simulator with --sim) and close them when done.

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/promcp/promcp-device/capabilities"
	"github.com/promcp/promcp-device/drivers/modbus/modbusconf"
	"github.com/promcp/promcp-device/gateway"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/server"
)

// parseInterleaved parses flags and positional arguments in any order
// ("read --manifest F temp --sim"), returning the positional ones.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos, args = append(pos, args[0]), args[1:]
	}
}

// commissionFlags are the flags read and do share.
type commissionFlags struct {
	manifest, logLevel string
	simulate, asJSON   bool
}

// parse adds the shared flags to the command's own and parses its command
// line, flags and positional arguments in any order; it returns the
// positional ones, and false when the line does not parse.
func (cf *commissionFlags) parse(c *cli) ([]string, bool) {
	c.StringVar(&cf.manifest, "manifest", "", "manifest `FILE` (required)")
	c.BoolVar(&cf.simulate, "sim", false, "use the built-in simulator instead of the hardware")
	c.BoolVar(&cf.asJSON, "json", false, "print JSON instead of a table")
	c.StringVar(&cf.logLevel, "log-level", "warn", "log `LEVEL` on stderr: debug, info, warn, error")
	pos, err := parseInterleaved(c.FlagSet, c.args)
	return pos, err == nil
}

// open loads the manifest, has check (if any) refuse what it cannot do
// before anything touches hardware, then opens its buses (or the
// simulator).
func (cf *commissionFlags) open(c *cli, opts gatewayOptions, check func(*manifests.Manifest) error) (*openedGateway, int) {
	log, err := newLoggerFormat(c.stderr, cf.logLevel, "text")
	if err != nil {
		return nil, c.usage("%v", err)
	}
	m := c.load(cf.manifest)
	if m == nil {
		return nil, 1
	}
	if check != nil {
		if err := check(m); err != nil {
			return nil, c.usage("%v", err)
		}
	}
	opts.simulate = cf.simulate
	gw, err := openGateway(c.ctx, m, opts, log)
	if err != nil {
		return nil, c.fail(err)
	}
	return gw, 0
}

// readingJSON is one reading as `read --json` prints it.
type readingJSON struct {
	Capability string    `json:"capability"`
	Tool       string    `json:"tool"`
	Value      any       `json:"value"`
	Unit       string    `json:"unit,omitempty"`
	Quality    string    `json:"quality"`
	Reason     string    `json:"reason,omitempty"`
	Timestamp  time.Time `json:"timestamp"`
	Error      string    `json:"error,omitempty"`
	sourceJSON
	LatencyMS float64 `json:"latency_ms"`
}

// sourceJSON is where a value is read or written: the device, its bus,
// its address on the bus and the register.
type sourceJSON struct {
	Device   string `json:"device"`
	Bus      string `json:"bus"`
	Address  string `json:"address"`
	Register string `json:"register"`
}

func source(b capabilities.Binding) sourceJSON {
	return sourceJSON{Device: b.Device, Bus: b.Bus, Address: b.Address, Register: b.Register}
}

func cmdRead(c *cli) int {
	var cf commissionFlags
	names, ok := cf.parse(c)
	if !ok {
		return 2
	}
	if cf.manifest == "" {
		return c.usage("--manifest FILE is required")
	}
	gw, code := cf.open(c, gatewayOptions{}, func(m *manifests.Manifest) error { return declared(m, names) })
	if gw == nil {
		return code
	}
	defer gw.Close()
	caps, err := pick(gw.set, names)
	if err != nil {
		return c.usage("%v", err)
	}
	ctx, stdout := c.ctx, c.stdout
	var out []readingJSON
	failed := 0
	for _, c := range caps {
		r := c.ReadWithin(ctx, 0) // a new transaction, never the cache
		rj := readingJSON{Capability: c.Name, Tool: c.ReadTool(), Value: r.Value, Unit: c.Unit, Quality: string(r.Quality),
			Reason: r.Reason, Timestamp: r.Time, sourceJSON: source(c.Binding), LatencyMS: float64(r.Grounds.Latency.Microseconds()) / 1000}
		if r.Err != nil {
			rj.Error = r.Err.Error()
		}
		if r.Quality == "error" {
			rj.Value = nil
			failed++
		}
		out = append(out, rj)
	}
	if cf.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(out)
	} else {
		printReadings(stdout, out)
	}
	if failed > 0 {
		return c.fail(fmt.Errorf("%d of %d capabilities could not be read", failed, len(out)))
	}
	return 0
}

// declared refuses a capability name (or read_* tool) that m does not
// declare, before any bus opens.
func declared(m *manifests.Manifest, names []string) error {
	var all []string
	for _, c := range m.Capabilities {
		all = append(all, c.Name)
	}
	for _, n := range names {
		if !slices.Contains(all, strings.TrimPrefix(n, "read_")) {
			return fmt.Errorf("no capability %q in the manifest (want one of %s)", n, strings.Join(all, ", "))
		}
	}
	return nil
}

// declaredAction refuses a do_* tool that m does not declare, before any
// bus opens.
func declaredAction(m *manifests.Manifest, tool string) error {
	var all []string
	for _, c := range m.Capabilities {
		if c.Do != nil {
			if c.Do.Tool == tool {
				return nil
			}
			all = append(all, c.Do.Tool)
		}
	}
	return fmt.Errorf("no action %s in the manifest (want one of %s)", tool, strings.Join(all, ", "))
}

// pick returns the capabilities named (capability or read_* tool names),
// all of them when none is named.
func pick(set *capabilities.Set, names []string) ([]*capabilities.Capability, error) {
	if len(names) == 0 {
		return set.All(), nil
	}
	var out []*capabilities.Capability
	for _, n := range names {
		c, ok := set.Get(strings.TrimPrefix(n, "read_"))
		if !ok {
			var all []string
			for _, c := range set.All() {
				all = append(all, c.Name)
			}
			return nil, fmt.Errorf("no capability %q in the manifest (want one of %s)", n, strings.Join(all, ", "))
		}
		out = append(out, c)
	}
	return out, nil
}

func printReadings(w io.Writer, rs []readingJSON) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CAPABILITY\tVALUE\tQUALITY\tSAMPLED\tSOURCE\tNOTE")
	for _, r := range rs {
		v := "-"
		if r.Value != nil {
			v = strings.TrimSpace(server.FormatValue(r.Value) + " " + r.Unit)
		}
		note := r.Reason
		if r.Error != "" {
			note = strings.TrimPrefix(note+": "+r.Error, ": ")
		}
		src := strings.TrimSpace(fmt.Sprintf("%s %s %s %s", r.Device, r.Bus, r.Address, r.Register))
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Capability, v, r.Quality, r.Timestamp.Format(time.RFC3339), src, note)
	}
	tw.Flush()
}

// dryRunJSON is what `do --dry-run --json` prints.
type dryRunJSON struct {
	Tool       string `json:"tool"`
	Value      any    `json:"value"`
	Role       string `json:"role"`
	Permission string `json:"permission"`
	Reason     string `json:"reason,omitempty"`
	Details    string `json:"details,omitempty"`
	WouldWrite any    `json:"would_write"`
	Clamped    bool   `json:"clamped"`
	Current    any    `json:"current"`
	CurrentQ   string `json:"current_quality"`
	sourceJSON
	Conversion string `json:"conversion"`
}

func cmdDo(c *cli) int {
	var cf commissionFlags
	dry := c.Bool("dry-run", false, "evaluate the policy and print what would be written where; write nothing (required: do actuates only through serve)")
	role := c.String("role", "operator", "evaluate as a caller with `ROLE`")
	policyFile := c.String("policy", "", "policy `FILE`, instead of the one the manifest names")
	pos, ok := cf.parse(c)
	if !ok {
		return 2
	}
	if !*dry || cf.manifest == "" || len(pos) != 2 {
		fmt.Fprintln(c.stderr, "usage: promcp-device do --dry-run --manifest FILE [--sim] [--role ROLE] [--json] TOOL VALUE\n"+
			"  (do takes --dry-run only: actions run through serve, with their idempotency key and audit record)")
		return 2
	}
	tool, raw := pos[0], pos[1]
	var v any
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		return c.usage("VALUE %q is not JSON (numbers as 95, booleans as true, strings as '\"auto\"')", raw)
	}
	m := c.load(cf.manifest)
	if m == nil {
		return 1
	}
	pc, err := resolvePolicy(cf.manifest, *policyFile, m)
	if err != nil {
		return c.fail(err)
	}
	if pc.policy == nil {
		fmt.Fprintf(c.stdout, "%s value=%s: serve would refuse it: no policy is loaded (%s); serve --allow-no-policy applies the manifest's constraints only\n", tool, raw, pc.none)
		return 1
	}
	if !slices.Contains(pc.policy.Roles, *role) {
		return c.usage("--role %q is not declared (want %s)", *role, strings.Join(pc.policy.Roles, ", "))
	}
	gw, code := cf.open(c, gatewayOptions{policy: pc.policy}, func(m *manifests.Manifest) error { return declaredAction(m, tool) })
	if gw == nil {
		return code
	}
	defer gw.Close()
	dr, err := gw.gateway.DryRun(server.WithCaller(c.ctx, server.Caller{Name: "dry-run", Role: *role}), tool, v)
	if err != nil {
		return c.usage("%v", err)
	}
	return printDryRun(c.stdout, dr, raw, v, *role, cf.asJSON)
}

func printDryRun(w io.Writer, dr gateway.DryRun, raw string, v any, role string, asJSON bool) int {
	d := dr.Decision
	out := dryRunJSON{Tool: dr.Tool, Value: v, Role: role, Permission: string(d.Permission), Reason: d.Reason, Details: d.Details,
		Clamped: d.Clamped, Current: dr.Current.Value, CurrentQ: string(dr.Current.Quality),
		sourceJSON: source(dr.Binding), Conversion: dr.Binding.Conversion}
	if d.Allowed() {
		out.WouldWrite = d.Value
	}
	code := 0
	if !d.Allowed() {
		code = 1
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(out)
		return code
	}
	fmt.Fprintf(w, "%s value=%s as %s: %s\n", dr.Tool, raw, role, d.Permission)
	if d.Reason != "" {
		fmt.Fprintf(w, "  reason: %s\n", d.Reason)
	}
	if d.Details != "" {
		fmt.Fprintf(w, "  details: %s\n", d.Details)
	}
	fmt.Fprintf(w, "  now: %s (%s)\n", server.FormatValue(dr.Current.Value), dr.Current.Quality)
	target := fmt.Sprintf("device %s on bus %s, address %s, register %s", dr.Binding.Device, dr.Binding.Bus, dr.Binding.Address, dr.Binding.Register)
	if d.Allowed() {
		clamped := ""
		if d.Clamped {
			clamped = " (clamped by policy)"
		}
		fmt.Fprintf(w, "  would write %s%s to %s\n", server.FormatValue(d.Value), clamped, target)
		if dr.Binding.Conversion != "" {
			fmt.Fprintf(w, "  conversion: %s\n", dr.Binding.Conversion)
		}
	} else {
		fmt.Fprintf(w, "  would write nothing to %s\n", target)
	}
	fmt.Fprintln(w, "  dry run: nothing was written")
	return code
}

// modicon are the 5-digit Modicon reference ranges (1-based, the table in
// the first digit) of the tables whose first digit is not ambiguous.
var modicon = map[modbusconf.Table]uint16{modbusconf.TableDiscrete: 10001, modbusconf.TableInput: 30001, modbusconf.TableHolding: 40001}

// lintModiconAddresses warns of a Modbus register address that looks like
// a Modicon reference (40001 for holding register 0): the manifest takes
// the 0-based address the protocol sends, and 40001 as a holding address
// reads register 40001, which the device most likely does not have.
func lintModiconAddresses(path string, m *manifests.Manifest, w io.Writer) {
	for _, d := range m.Devices {
		for _, r := range d.ModbusRegisters {
			base, ok := modicon[r.Table]
			if !ok || r.Address < base || r.Address > base+9998 {
				continue
			}
			fmt.Fprintf(w, "%s: warning: device %s register %s: %s address %d looks like a Modicon reference (%dxxxx, counted from 1); "+
				"the manifest takes the 0-based address the protocol sends: did you mean address: %d?\n",
				path, d.Name, r.Name, r.Table, r.Address, base/10000, r.Address-base)
		}
	}
}

// lintActionsWithoutRules warns of actions the policy has no rules for:
// only the defaults apply to them (every role but viewer, the manifest's
// constraints, no windows, cooldown, rate limit, interlock or approval).
func lintActionsWithoutRules(path string, m *manifests.Manifest, pol *manifests.Policy, w io.Writer) {
	if pol == nil {
		return
	}
	for _, c := range m.Capabilities {
		if c.Do == nil {
			continue
		}
		if _, ok := pol.Actions[c.Do.Tool]; !ok {
			fmt.Fprintf(w, "%s: warning: %s has no rules in the policy: only the defaults apply (every role but viewer, the manifest's constraints; no window, cooldown, rate limit, interlock or approval)\n", path, c.Do.Tool)
		}
	}
}
