package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// benchFlags are the flags of promcp-device bench.
type benchFlags struct {
	url, serve, protocol, out string
	sessions, pid             int
	duration, warmup          time.Duration
	calls, headers            listFlag
}

// Bounds of one run: a load test is bounded in count and time.
const (
	maxBenchSessions = 256
	maxBenchDuration = 10 * time.Minute
)

// benchCall is one tool call of the mix.
type benchCall struct {
	Tool string         `json:"tool"`
	Args map[string]any `json:"args,omitempty"`
}

// BenchReport is what a run measured; --json prints it.
type BenchReport struct {
	URL        string        `json:"url"`
	Protocol   string        `json:"protocol"`
	Sessions   int           `json:"sessions"`
	Duration   float64       `json:"duration_s"`
	Mix        []benchCall   `json:"mix"`
	Calls      int           `json:"calls"`
	Errors     int           `json:"errors"`
	FirstError string        `json:"first_error,omitempty"`
	PerSecond  float64       `json:"calls_per_s"`
	P50        float64       `json:"p50_ms"`
	P90        float64       `json:"p90_ms"`
	P99        float64       `json:"p99_ms"`
	Server     *ServerSample `json:"server,omitempty"`
}

// ServerSample is the server process's cost over the run, from /proc.
type ServerSample struct {
	PID         int     `json:"pid"`
	CPUSeconds  float64 `json:"cpu_s"`
	CPUPerCall  float64 `json:"cpu_us_per_call"`
	PeakRSSKiB  int64   `json:"peak_rss_kib"`
	RSSAfterKiB int64   `json:"rss_kib"`
}

func cmdBench(c *cli) int {
	var f benchFlags
	c.StringVar(&f.url, "url", "", "the MCP server's streamable HTTP `URL` (loopback only), such as http://127.0.0.1:8080/mcp")
	c.StringVar(&f.serve, "serve", "", "instead of --url: start `promcp-device serve --sim --http 127.0.0.1:0 --manifest FILE` and load it")
	c.StringVar(&f.protocol, "protocol", "2025-11-25", "the protocol `VERSION` the sessions speak: 2025-11-25 (initialize handshake) or 2026-07-28 (server/discover, stateless)")
	c.IntVar(&f.sessions, "sessions", 8, "concurrent sessions (`N`), each calling one after another")
	c.DurationVar(&f.duration, "duration", 10*time.Second, "how long to measure")
	c.DurationVar(&f.warmup, "warmup", time.Second, "how long to call before measuring")
	c.Var(&f.calls, "call", "a call of the mix, `TOOL` or TOOL:{JSON arguments}; repeat for a mix (taken in turn); default: the first read_* tool, or the first tool")
	c.Var(&f.headers, "header", "an HTTP header `K:V` sent with every request (such as Authorization: Bearer ...)")
	c.IntVar(&f.pid, "pid", 0, "the server's process `ID`, for its CPU per call and peak RSS (from /proc); set by --serve")
	c.StringVar(&f.out, "json", "", "also write the report as JSON to `FILE` (- for stdout, instead of the text)")
	if !c.parse() {
		return 2
	}
	if err := f.check(c.NArg()); err != nil {
		fmt.Fprintln(c.stderr, "promcp-device bench:", err)
		return 2
	}
	if f.serve != "" {
		u, pid, stop, err := startBenchServer(c.ctx, f.serve, c.stderr)
		if err != nil {
			return c.fail(err)
		}
		defer stop()
		f.url, f.pid = u, pid
	}
	rep, err := runBench(c.ctx, f)
	if err != nil {
		return c.fail(err)
	}
	if f.out != "" {
		b, _ := json.MarshalIndent(rep, "", "  ")
		if f.out == "-" {
			fmt.Fprintln(c.stdout, string(b))
		} else if err := os.WriteFile(f.out, append(b, '\n'), 0o644); err != nil {
			return c.fail(err)
		}
	}
	if f.out != "-" {
		printBench(c.stdout, rep)
	}
	if rep.Errors > 0 {
		return 1
	}
	return 0
}

func (f *benchFlags) check(nargs int) error {
	switch {
	case nargs > 0:
		return errors.New("no arguments expected; give --url URL or --serve MANIFEST")
	case (f.url == "") == (f.serve == ""):
		return errors.New("give one of --url URL and --serve MANIFEST")
	case f.sessions < 1 || f.sessions > maxBenchSessions:
		return fmt.Errorf("--sessions %d: want 1 to %d", f.sessions, maxBenchSessions)
	case f.duration <= 0 || f.duration > maxBenchDuration:
		return fmt.Errorf("--duration %s: want more than 0 and at most %s", f.duration, maxBenchDuration)
	case f.warmup < 0 || f.warmup > maxBenchDuration:
		return fmt.Errorf("--warmup %s: want 0 to %s", f.warmup, maxBenchDuration)
	case f.protocol != mcp.LATEST_PROTOCOL_VERSION && f.protocol != "2025-11-25" && f.protocol != "2026-07-28":
		return fmt.Errorf("--protocol %q: want 2025-11-25 or 2026-07-28", f.protocol)
	}
	if f.url != "" {
		return loopbackURL(f.url)
	}
	return nil
}

// loopbackURL refuses a URL whose host is not a loopback address: the load
// tool never loads anything but this machine.
func loopbackURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--url %q: want http://HOST:PORT/PATH", raw)
	}
	host := u.Hostname()
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("--url %q: the load tool targets loopback only (127.0.0.1, ::1, localhost)", raw)
	}
	return nil
}

// startBenchServer starts this binary's serve --sim on a loopback port and
// returns its URL, its process id and a stop function.
func startBenchServer(ctx context.Context, manifest string, stderr io.Writer) (string, int, func(), error) {
	exe, err := os.Executable()
	if err != nil {
		return "", 0, nil, err
	}
	cmd := exec.CommandContext(ctx, exe, "serve", "--sim", "--http", "127.0.0.1:0", "--log-level", "error", "--manifest", manifest)
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", 0, nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", 0, nil, fmt.Errorf("serve --manifest %s: %w", manifest, err)
	}
	stop := func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	}
	urlRE := regexp.MustCompile(`http://127\.0\.0\.1:[0-9]+/mcp`)
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if u := urlRE.FindString(sc.Text()); u != "" {
			go func() { _, _ = io.Copy(io.Discard, out) }()
			return u, cmd.Process.Pid, stop, nil
		}
	}
	stop()
	return "", 0, nil, fmt.Errorf("serve --manifest %s ended before it served", manifest)
}

// benchSession opens one MCP session on protocol.
func benchSession(ctx context.Context, f benchFlags) (*client.Client, error) {
	var topts []transport.StreamableHTTPCOption
	if len(f.headers) > 0 {
		h := map[string]string{}
		for _, kv := range f.headers {
			k, v, ok := strings.Cut(kv, ":")
			if !ok {
				return nil, fmt.Errorf("--header %q: want K:V", kv)
			}
			h[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
		topts = append(topts, transport.WithHTTPHeaders(h))
	}
	c, err := client.NewStreamableHttpClient(f.url, topts...)
	if err != nil {
		return nil, err
	}
	// The session's client is the protocol generation's: pinned to the
	// handshake for 2025-11-25, server/discover first for 2026-07-28.
	client.WithProtocolVersion(f.protocol)(c)
	if err := c.Start(ctx); err != nil {
		return nil, err
	}
	init, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: f.protocol, ClientInfo: mcp.Implementation{Name: "promcp-device bench", Version: version}}})
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("%s: initialize: %w", f.url, err)
	}
	if init.ProtocolVersion != f.protocol {
		c.Close()
		return nil, fmt.Errorf("%s: the server speaks protocol %s, not %s", f.url, init.ProtocolVersion, f.protocol)
	}
	return c, nil
}

// mix parses the --call flags, or picks the first read_* tool.
func mix(ctx context.Context, c *client.Client, calls []string) ([]benchCall, error) {
	var out []benchCall
	for _, s := range calls {
		tool, args, hasArgs := strings.Cut(s, ":")
		// No arguments are sent as {}: some servers refuse a null.
		bc := benchCall{Tool: tool, Args: map[string]any{}}
		if hasArgs {
			if err := json.Unmarshal([]byte(args), &bc.Args); err != nil {
				return nil, fmt.Errorf("--call %q: arguments: %w", s, err)
			}
		}
		out = append(out, bc)
	}
	if len(out) > 0 {
		return out, nil
	}
	res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		return nil, fmt.Errorf("tools/list: %w", err)
	}
	if len(res.Tools) == 0 {
		return nil, errors.New("the server lists no tools; give --call TOOL")
	}
	pick := res.Tools[0].Name
	for _, t := range res.Tools {
		if strings.HasPrefix(t.Name, "read_") {
			pick = t.Name
			break
		}
	}
	return []benchCall{{Tool: pick, Args: map[string]any{}}}, nil
}

// worker is one session's results.
type worker struct {
	lat    []time.Duration
	errors int
	first  string
}

func runBench(ctx context.Context, f benchFlags) (*BenchReport, error) {
	clients := make([]*client.Client, f.sessions)
	defer func() {
		for _, c := range clients {
			if c != nil {
				c.Close()
			}
		}
	}()
	for i := range clients {
		c, err := benchSession(ctx, f)
		if err != nil {
			return nil, err
		}
		clients[i] = c
	}
	calls, err := mix(ctx, clients[0], f.calls)
	if err != nil {
		return nil, err
	}
	var before procSample
	start := time.Now()
	measureFrom, end := start.Add(f.warmup), start.Add(f.warmup+f.duration)
	var sampled sync.Once
	workers := make([]worker, f.sessions)
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() {
			w := &workers[i]
			for n := i; ; n++ {
				t0 := time.Now()
				if t0.After(end) || ctx.Err() != nil {
					return
				}
				if !t0.Before(measureFrom) {
					sampled.Do(func() { before = readProc(f.pid) })
				}
				bc := calls[n%len(calls)]
				res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: bc.Tool, Arguments: bc.Args}})
				if t0.Before(measureFrom) {
					continue
				}
				w.lat = append(w.lat, time.Since(t0))
				if err == nil && res.IsError {
					err = fmt.Errorf("%s: isError: %s", bc.Tool, resultText(res))
				}
				if err != nil {
					w.errors++
					if w.first == "" {
						w.first = err.Error()
					}
				}
			}
		})
	}
	wg.Wait()
	after := readProc(f.pid)
	elapsed := time.Since(measureFrom).Seconds()
	return report(f, calls, workers, elapsed, before, after), nil
}

func resultText(res *mcp.CallToolResult) string {
	for _, c := range res.Content {
		if t, ok := c.(mcp.TextContent); ok {
			return t.Text
		}
	}
	return ""
}

func report(f benchFlags, calls []benchCall, workers []worker, elapsed float64, before, after procSample) *BenchReport {
	r := &BenchReport{URL: f.url, Protocol: f.protocol, Sessions: f.sessions, Duration: elapsed, Mix: calls}
	var all []time.Duration
	for _, w := range workers {
		all = append(all, w.lat...)
		r.Errors += w.errors
		if r.FirstError == "" {
			r.FirstError = w.first
		}
	}
	slices.Sort(all)
	r.Calls = len(all)
	if elapsed > 0 {
		r.PerSecond = float64(r.Calls) / elapsed
	}
	pct := func(p float64) float64 {
		if len(all) == 0 {
			return 0
		}
		return float64(all[min(len(all)-1, int(p*float64(len(all))))].Microseconds()) / 1000
	}
	r.P50, r.P90, r.P99 = pct(0.50), pct(0.90), pct(0.99)
	if f.pid > 0 && after.ok && before.ok {
		s := &ServerSample{PID: f.pid, CPUSeconds: float64(after.ticks-before.ticks) / clockTicks,
			PeakRSSKiB: after.hwm, RSSAfterKiB: after.rss}
		if r.Calls > 0 {
			s.CPUPerCall = s.CPUSeconds * 1e6 / float64(r.Calls)
		}
		r.Server = s
	}
	return r
}

func printBench(w io.Writer, r *BenchReport) {
	tools := make([]string, len(r.Mix))
	for i, c := range r.Mix {
		tools[i] = c.Tool
	}
	fmt.Fprintf(w, "%s, protocol %s, %d sessions, %.1f s, mix %s\n", r.URL, r.Protocol, r.Sessions, r.Duration, strings.Join(tools, ", "))
	fmt.Fprintf(w, "  calls      %d (%d errors)\n", r.Calls, r.Errors)
	fmt.Fprintf(w, "  throughput %.0f calls/s\n", r.PerSecond)
	fmt.Fprintf(w, "  latency    p50 %.2f ms, p90 %.2f ms, p99 %.2f ms\n", r.P50, r.P90, r.P99)
	if s := r.Server; s != nil {
		fmt.Fprintf(w, "  server     pid %d: %.1f µs CPU per call (%.2f s CPU), peak RSS %.1f MB, RSS now %.1f MB\n",
			s.PID, s.CPUPerCall, s.CPUSeconds, float64(s.PeakRSSKiB)/1024, float64(s.RSSAfterKiB)/1024)
	}
	if r.FirstError != "" {
		fmt.Fprintf(w, "  first error: %s\n", r.FirstError)
	}
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times: 100 on
// every Linux architecture the binary is built for.
const clockTicks = 100

// procSample is a process's CPU time and memory at one instant.
type procSample struct {
	ok       bool
	ticks    int64 // utime + stime
	rss, hwm int64 // KiB
}

// readProc reads /proc/PID/stat and status; ok is false without a pid or
// where /proc is missing.
func readProc(pid int) procSample {
	if pid <= 0 {
		return procSample{}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procSample{}
	}
	// The command name (field 2) may hold spaces: fields count from the
	// last ')'.
	i := strings.LastIndexByte(string(stat), ')')
	fields := strings.Fields(string(stat[i+1:]))
	if len(fields) < 13 {
		return procSample{}
	}
	ut, _ := strconv.ParseInt(fields[11], 10, 64) // utime, field 14
	st, _ := strconv.ParseInt(fields[12], 10, 64) // stime, field 15
	s := procSample{ok: true, ticks: ut + st}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err == nil {
		for line := range strings.Lines(string(status)) {
			k, v, _ := strings.Cut(line, ":")
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			switch k {
			case "VmRSS":
				s.rss = n
			case "VmHWM":
				s.hwm = n
			}
		}
	}
	return s
}
