// Command compare runs the comparison of scripts/perf-compare: it starts
// the floor (a bare mcp-go server, internal/perf/floor), the peer (the
// TypeScript SDK server, e2e/perf-peer.mjs) and promcp-device serve --sim
// on the greenhouse, loads them in one interleaved run with
// `promcp-device bench` (rep by rep, each measure on every server in
// turn), and prints docs/performance.md's table as paired ratios: the
// median over the reps of each rep's ratio. Then it measures can_do and
// tools/list on generated manifests of 200 and 1,000 capabilities. It is
// not part of promcp-device.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/promcp/promcp-device/internal/perf"
)

type config struct {
	bin, floor, peer, manifest string
	base                       string // an earlier promcp-device, measured beside (before/after)
	reps                       int
	duration, warmup           time.Duration
	sessions                   []int
	slow                       bool // calls of seconds (see bench)
	skipScale, onlyScale       bool
	// baseName is what base was built from (a git ref), for the table.
	baseName string
	// sizeAfter and sizeBefore are the linux/arm64 stripped binaries'
	// sizes in bytes, when known (scripts/perf-compare builds them).
	sizeAfter, sizeBefore int64
}

func main() {
	var c config
	var sessions string
	flag.StringVar(&c.bin, "bin", "bin/promcp-device", "the promcp-device binary")
	flag.StringVar(&c.floor, "floor", "bin/perf-floor", "the floor server binary")
	flag.StringVar(&c.peer, "peer", "e2e/perf-peer.mjs", "the TypeScript SDK server script")
	flag.StringVar(&c.manifest, "manifest", "manifests/examples/greenhouse.yml", "the manifest our server serves")
	flag.StringVar(&c.base, "base", "", "an earlier promcp-device `BINARY` to measure beside ours on the same reads (before/after in one run)")
	flag.StringVar(&c.baseName, "base-name", "", "what -base was built from (a git ref), named in the table's before column")
	flag.Int64Var(&c.sizeAfter, "arm64-size", 0, "the linux/arm64 stripped binary's size in bytes (ours), for the table")
	flag.Int64Var(&c.sizeBefore, "arm64-size-base", 0, "the same for -base")
	flag.BoolVar(&c.skipScale, "no-scale", false, "skip the runs at 200 and 1,000 capabilities")
	flag.BoolVar(&c.onlyScale, "only-scale", false, "only the runs at 200 and 1,000 capabilities")
	flag.IntVar(&c.reps, "reps", 3, "repetitions (the ratios are medians over them)")
	flag.DurationVar(&c.duration, "duration", 3*time.Second, "measured time of each load run")
	flag.DurationVar(&c.warmup, "warmup", time.Second, "warm-up of each load run")
	flag.StringVar(&sessions, "sessions", "1,8,32", "concurrent sessions of the read runs")
	flag.Parse()
	for _, s := range strings.Split(sessions, ",") {
		n, err := strconv.Atoi(s)
		if err != nil {
			fmt.Fprintln(os.Stderr, "compare: --sessions:", err)
			os.Exit(2)
		}
		c.sessions = append(c.sessions, n)
	}
	if c.onlyScale {
		if err := c.scale(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "compare:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(context.Background(), c); err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		os.Exit(1)
	}
}

// proc is a started server.
type proc struct {
	url string
	pid int
	cmd *exec.Cmd
}

var urlRE = regexp.MustCompile(`http://127\.0\.0\.1:[0-9]+/mcp`)

// start runs name args and waits for the URL it prints.
func start(ctx context.Context, name string, args ...string) (*proc, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if u := urlRE.FindString(sc.Text()); u != "" {
			go func() { _, _ = io.Copy(io.Discard, out) }()
			return &proc{url: u, pid: cmd.Process.Pid, cmd: cmd}, nil
		}
	}
	_ = cmd.Wait()
	return nil, fmt.Errorf("%s %v ended before it served", name, args)
}

func (p *proc) stop() {
	_ = p.cmd.Process.Signal(os.Interrupt)
	_ = p.cmd.Wait()
}

// result is the part of promcp-device bench --json that is compared.
type result struct {
	Calls      int     `json:"calls"`
	Errors     int     `json:"errors"`
	FirstError string  `json:"first_error"`
	PerSecond  float64 `json:"calls_per_s"`
	P50        float64 `json:"p50_ms"`
	P99        float64 `json:"p99_ms"`
	Server     *struct {
		CPUPerCall float64 `json:"cpu_us_per_call"`
		PeakRSSKiB int64   `json:"peak_rss_kib"`
		RSSKiB     int64   `json:"rss_kib"`
	} `json:"server"`
}

// totals counts every call and error of the run.
var totals struct{ runs, calls, errors int }

func (c config) bench(ctx context.Context, p *proc, protocol string, sessions int, call string) (result, error) {
	var r result
	args := []string{"bench", "--url", p.url, "--pid", strconv.Itoa(p.pid), "--protocol", protocol,
		"--sessions", strconv.Itoa(sessions), "--duration", c.duration.String(), "--warmup", c.warmup.String(), "--json", "-"}
	if c.slow {
		// Calls that take seconds: no warm-up (a call begun in it would
		// not count), and long enough for a few.
		args[10], args[12] = max(c.duration, 10*time.Second).String(), "0s"
	}
	if call != "" {
		args = append(args, "--call", call)
	}
	out, err := exec.CommandContext(ctx, c.bin, args...).Output()
	if err := json.Unmarshal(out, &r); err != nil {
		return r, fmt.Errorf("bench %v: %w (%s)", args, err, out)
	}
	totals.runs++
	totals.calls += r.Calls
	totals.errors += r.Errors
	if err != nil || r.Errors > 0 || r.Server == nil || r.Calls == 0 {
		return r, fmt.Errorf("bench %v: %v: %d errors, first: %s", args, err, r.Errors, r.FirstError)
	}
	return r, nil
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

const readTool = "read_temperature_zone1"

// servers are the processes of one comparison; base is nil without -base.
type servers struct{ floor, peer, ours, base *proc }

func (sv servers) stop() {
	for _, p := range []*proc{sv.floor, sv.peer, sv.ours, sv.base} {
		if p != nil {
			p.stop()
		}
	}
}

func (c config) startAll(ctx context.Context) (servers, error) {
	var sv servers
	var err error
	serve := []string{"serve", "--sim", "--http", "127.0.0.1:0", "--log-level", "error", "--manifest", c.manifest}
	if sv.floor, err = start(ctx, c.floor); err != nil {
		return sv, err
	}
	if sv.peer, err = start(ctx, "node", c.peer); err != nil {
		return sv, err
	}
	if sv.ours, err = start(ctx, c.bin, serve...); err != nil {
		return sv, err
	}
	if c.base != "" {
		sv.base, err = start(ctx, c.base, serve...)
	}
	return sv, err
}

// ratios holds, by measure, one paired ratio per rep for each entry of
// the sessions list.
type ratios map[string][][]float64

func (r ratios) add(name string, i, n int, v float64) {
	if r[name] == nil {
		r[name] = make([][]float64, n)
	}
	r[name][i] = append(r[name][i], v)
}

// triple is the medians of a measure, one per sessions entry: "a / b / c".
func (r ratios) triple(name string) string {
	var parts []string
	for _, xs := range r[name] {
		parts = append(parts, fmt.Sprintf("%.2f", median(xs)))
	}
	return strings.Join(parts, " / ")
}

func run(ctx context.Context, c config) error {
	sv, err := c.startAll(ctx)
	defer sv.stop()
	if err != nil {
		return err
	}
	r := ratios{}
	began := time.Now()
	for rep := range c.reps {
		for i, n := range c.sessions {
			if err := c.readRep(ctx, sv, r, rep, i, n); err != nil {
				return err
			}
		}
		if err := c.canDoRep(ctx, sv, r, rep); err != nil {
			return err
		}
	}
	// Resident memory after the load: every read and can_do run above.
	rss := [2]int64{rssKiB(sv.ours.pid), 0}
	if sv.base != nil {
		rss[1] = rssKiB(sv.base.pid)
	}
	c.print(r, sv.base != nil)
	if sv.base != nil {
		c.printBeforeAfter(r, rss)
	}
	if !c.skipScale {
		if err := c.scale(ctx); err != nil {
			return err
		}
	}
	fmt.Printf("\n%d load runs, %d checked calls, %d errors, %s; reps %d × %s (+%s warm-up)\n",
		totals.runs, totals.calls, totals.errors, time.Since(began).Round(time.Second), c.reps, c.duration, c.warmup)
	return nil
}

// readRep measures the cached read with n sessions on every server, in
// turn, and adds this rep's ratios.
func (c config) readRep(ctx context.Context, sv servers, r ratios, rep, i, n int) error {
	type run struct {
		p        *proc
		protocol string
	}
	runs := []run{{sv.floor, "2025-11-25"}, {sv.peer, "2025-11-25"}, {sv.ours, "2025-11-25"}, {sv.floor, "2026-07-28"}, {sv.ours, "2026-07-28"}}
	if sv.base != nil {
		runs = append(runs, run{sv.base, "2025-11-25"})
	}
	res := make([]result, len(runs))
	for k, x := range runs {
		var err error
		if res[k], err = c.bench(ctx, x.p, x.protocol, n, readTool); err != nil {
			return err
		}
	}
	fl, pe, us, fl2, us2 := res[0], res[1], res[2], res[3], res[4]
	cpu := func(x result) float64 { return x.Server.CPUPerCall }
	m := len(c.sessions)
	r.add("calls", i, m, us.PerSecond/fl.PerSecond)
	r.add("cpu", i, m, cpu(us)/cpu(fl))
	r.add("calls2026", i, m, us2.PerSecond/fl2.PerSecond)
	r.add("cpu2026", i, m, cpu(us2)/cpu(fl2))
	r.add("cpuTS", i, m, cpu(us)/cpu(pe))
	r.add("callsTS", i, m, us.PerSecond/pe.PerSecond)
	if sv.base != nil {
		ba := res[5]
		r.add("cpuTS0", i, m, cpu(ba)/cpu(pe))
		r.add("callsBase", i, m, us.PerSecond/ba.PerSecond)
		r.add("cpuBase", i, m, cpu(us)/cpu(ba))
		r.add("calls0", i, m, ba.PerSecond/fl.PerSecond)
		r.add("cpu0", i, m, cpu(ba)/cpu(fl))
	}
	fmt.Fprintf(os.Stderr, "rep %d, %d sessions: calls/s floor %.0f, peer %.0f, ours %.0f (2026-07-28: floor %.0f, ours %.0f); CPU µs/call floor %.0f, peer %.0f, ours %.0f\n",
		rep+1, n, fl.PerSecond, pe.PerSecond, us.PerSecond, fl2.PerSecond, us2.PerSecond, cpu(fl), cpu(pe), cpu(us))
	return nil
}

const canDoCall = `can_do:{"intent":{"semantic_tags":["cooling"]}}`

// canDoRep measures can_do's CPU per call against a cached read's on our
// server (and the base's), 8 sessions.
func (c config) canDoRep(ctx context.Context, sv servers, r ratios, rep int) error {
	// pair returns can_do's CPU per call, and its ratio to a read's.
	pair := func(p *proc) (float64, float64, error) {
		rd, err := c.bench(ctx, p, "2025-11-25", 8, readTool)
		if err != nil {
			return 0, 0, err
		}
		cd, err := c.bench(ctx, p, "2025-11-25", 8, canDoCall)
		if err != nil {
			return 0, 0, err
		}
		fmt.Fprintf(os.Stderr, "rep %d: can_do %.0f µs CPU/call, read %.0f\n", rep+1, cd.Server.CPUPerCall, rd.Server.CPUPerCall)
		return cd.Server.CPUPerCall, cd.Server.CPUPerCall / rd.Server.CPUPerCall, nil
	}
	ours, ratio, err := pair(sv.ours)
	if err != nil {
		return err
	}
	r.add("candoCPU", 0, 1, ratio)
	if sv.base != nil {
		base, ratio0, err := pair(sv.base)
		if err != nil {
			return err
		}
		r.add("candoCPU0", 0, 1, ratio0)
		r.add("candoBase", 0, 1, ours/base)
	}
	return nil
}

func (c config) print(r ratios, base bool) {
	sess := strings.Trim(strings.Join(strings.Fields(fmt.Sprint(c.sessions)), " / "), "[]")
	rows := [][3]string{ // measure, ratio, goal
		{"cached `read_*` over HTTP, calls/s vs the bare mcp-go floor (" + sess + " sessions, 2025-11-25)", "calls", "≥ 0.95"},
		{"server CPU per call vs the floor", "cpu", "≤ 1.1"},
		{"the same on 2026-07-28 (calls/s)", "calls2026", "≥ 0.95"},
		{"the same on 2026-07-28 (CPU per call)", "cpu2026", "≤ 1.1"},
		{"server CPU per call vs the TypeScript SDK", "cpuTS", "≤ 0.2"},
		{"calls/s vs the TypeScript SDK", "callsTS", ""},
		{"`can_do` (greenhouse) CPU per call vs a cached read (8 sessions)", "candoCPU", "≤ 1.5"},
	}
	if base {
		rows = append(rows, [][3]string{
			{"before (-base): calls/s vs the floor, 2025-11-25", "calls0"},
			{"before (-base): server CPU per call vs the floor", "cpu0"},
			{"before (-base): `can_do` CPU per call vs a cached read", "candoCPU0"},
			{"after/before: calls/s", "callsBase"},
			{"after/before: server CPU per call", "cpuBase"},
			{"after/before: `can_do` CPU per call", "candoBase"},
		}...)
	}
	fmt.Printf("\n| measure | measured | goal |\n| --- | --- | --- |\n")
	for _, row := range rows {
		goal := row[2]
		if goal != "" {
			goal += " "
		}
		fmt.Printf("| %s | %s | %s|\n", row[0], r.triple(row[1]), goal)
	}
}

// printBeforeAfter prints the table (issue 28) with a column for
// -base (before) and one for ours (after), from this one interleaved run;
// rss is ours and the base's resident memory after the load, in KiB.
func (c config) printBeforeAfter(r ratios, rss [2]int64) {
	sess := strings.Trim(strings.Join(strings.Fields(fmt.Sprint(c.sessions)), " / "), "[]")
	before := "before"
	if c.baseName != "" {
		before += " (" + c.baseName + ")"
	}
	mb := func(kib int64) string { return fmt.Sprintf("%.1f MB", float64(kib)/1024) }
	size := func(b int64) string {
		if b <= 0 {
			return "—"
		}
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	}
	rows := [][4]string{
		{"cached `read_*` calls/s vs the floor", r.triple("calls0"), r.triple("calls"), "≥ 0.95"},
		{"server CPU per read vs the floor", r.triple("cpu0"), r.triple("cpu"), "≤ 1.1"},
		{"CPU per read, after vs before", "—", r.triple("cpuBase"), "≤ 1.0"},
		{"CPU per call vs the TypeScript SDK", r.triple("cpuTS0"), r.triple("cpuTS"), "≤ 0.1"},
		{"`can_do` CPU vs a read's (8 sessions)", r.triple("candoCPU0"), r.triple("candoCPU"), "≤ 1.5"},
		{"resident memory, " + filepath.Base(c.manifest) + " after load", mb(rss[1]), mb(rss[0]), "≤ 20 MB"},
		{"linux/arm64 binary, stripped", size(c.sizeBefore), size(c.sizeAfter), "≤ 14 MiB"},
	}
	fmt.Printf("\n| measure (%s sessions) | %s | after | goal |\n| --- | --- | --- | --- |\n", sess, before)
	for _, row := range rows {
		fmt.Printf("| %s | %s | %s | %s |\n", row[0], row[1], row[2], row[3])
	}
}

// scale serves generated manifests of 200 and 1,000 capabilities: can_do
// with a broad intent under the real clock, tools/list size and time, and
// RSS after the first call and after 30 lists.
func (c config) scale(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "perf-compare")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	rss := map[int][2]int64{}
	for _, n := range []int{200, 1000} {
		path := filepath.Join(dir, fmt.Sprintf("perf-%d.yml", n))
		if err := os.WriteFile(path, []byte(perf.Manifest(n)), 0o644); err != nil {
			return err
		}
		p, err := start(ctx, c.bin, "serve", "--sim", "--http", "127.0.0.1:0", "--log-level", "error", "--allow-no-policy", "--manifest", path)
		if err != nil {
			return err
		}
		first, listed, err := c.scaleOne(ctx, p, n)
		p.stop()
		if err != nil {
			return err
		}
		rss[n] = [2]int64{first, listed}
	}
	fmt.Printf("| RSS after first call, 200 / 1,000 capabilities | %.1f / %.1f MB (%.1f / %.1f MB after 30 lists) | ≤ 25 / 60 MB |\n",
		float64(rss[200][0])/1024, float64(rss[1000][0])/1024, float64(rss[200][1])/1024, float64(rss[1000][1])/1024)
	return nil
}

func (c config) scaleOne(ctx context.Context, p *proc, n int) (first, listed int64, err error) {
	cl, err := client.NewStreamableHttpClient(p.url)
	if err != nil {
		return 0, 0, err
	}
	defer cl.Close()
	if err := cl.Start(ctx); err != nil {
		return 0, 0, err
	}
	if _, err := cl.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: "2025-11-25",
		ClientInfo: mcp.Implementation{Name: "perf-compare", Version: "1"}}}); err != nil {
		return 0, 0, err
	}
	if _, err := cl.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "read_temperature_z0", Arguments: map[string]any{}}}); err != nil {
		return 0, 0, err
	}
	first = rssKiB(p.pid)
	var lat []float64
	var tools, size, pages int
	for range 30 {
		t0 := time.Now()
		tools, size, pages, err = listAll(ctx, cl)
		if err != nil {
			return 0, 0, err
		}
		lat = append(lat, float64(time.Since(t0).Microseconds())/1000)
	}
	listed = rssKiB(p.pid)
	fmt.Printf("| `tools/list` at %d capabilities (%d tools) | %d KB in %d page(s), %.0f B per tool, p50 %.1f ms for every page | paginated; ≤ 1 KB per tool |\n",
		n, tools, size/1000, pages, float64(size)/float64(tools), median(lat))
	if n != 1000 {
		return first, listed, nil
	}
	// can_do under the real clock, through HTTP: one session, one call
	// after another; every call matches 400 actions.
	c.slow = true
	r, err := c.bench(ctx, p, "2025-11-25", 1, `can_do:{"intent":{"semantic_tags":["temperature"]}}`)
	if err != nil {
		return 0, 0, err
	}
	fmt.Printf("| `can_do`, 1,000 capabilities, broad intent, `serve --sim` (real clock) | p50 %.1f ms, p99 %.1f ms | p99 ≤ 50 ms |\n", r.P50, r.P99)
	return first, listed, nil
}

// listAll lists every tool, page by page: how many, the bytes of the
// tools, the pages.
func listAll(ctx context.Context, cl *client.Client) (tools, size, pages int, err error) {
	var req mcp.ListToolsRequest
	for {
		res, err := cl.ListToolsByPage(ctx, req)
		if err != nil {
			return 0, 0, 0, err
		}
		pages++
		for _, t := range res.Tools {
			b, _ := json.Marshal(t)
			size += len(b)
		}
		tools += len(res.Tools)
		if res.NextCursor == "" {
			return tools, size, pages, nil
		}
		req.Params.Cursor = res.NextCursor
	}
}

func rssKiB(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}
