package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestBenchCLI: the load tool starts the real binary on the simulator,
// loads it over streamable HTTP on both protocol generations with a mix of
// tools, and reports calls, latencies and the server's CPU and RSS from
// /proc, with no errors. It asserts no timing.
func TestBenchCLI(t *testing.T) {
	for _, protocol := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(protocol, func(t *testing.T) {
			stdout, stderr, code := runCLI(t, "bench", "--serve", greenhouse, "--protocol", protocol,
				"--sessions", "2", "--duration", "300ms", "--warmup", "0s", "--json", "-",
				"--call", "read_temperature_zone1", "--call", `can_do:{"intent":{"semantic_tags":["cooling"]}}`)
			if code != 0 {
				t.Fatalf("bench: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
			}
			var r BenchReport
			if err := json.Unmarshal([]byte(stdout), &r); err != nil {
				t.Fatalf("bench --json -: %v\n%s", err, stdout)
			}
			if r.Protocol != protocol || r.Sessions != 2 || r.Calls < 2 || r.Errors != 0 || len(r.Mix) != 2 ||
				r.P50 <= 0 || r.P99 < r.P50 {
				t.Errorf("report %+v: want calls of both tools, no errors, p99 >= p50 > 0", r)
			}
			if s := r.Server; s == nil || s.PID <= 0 || s.PeakRSSKiB <= 0 || s.CPUSeconds < 0 {
				t.Errorf("server sample %+v: want the started server's pid, CPU and peak RSS", s)
			}
		})
	}
}

// TestBenchRefuses: bad flags and a target that is not loopback are
// refused before any call (exit 2).
func TestBenchRefuses(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "--url", "http://192.0.2.1:8080/mcp"}, "loopback only"},
		{[]string{"bench", "--url", "http://example.com/mcp"}, "loopback only"},
		{[]string{"bench"}, "give one of --url URL and --serve MANIFEST"},
		{[]string{"bench", "--url", "http://127.0.0.1:1/mcp", "--sessions", "1000"}, "--sessions 1000"},
		{[]string{"bench", "--url", "http://127.0.0.1:1/mcp", "--duration", "1h"}, "--duration 1h0m0s"},
		{[]string{"bench", "--url", "http://127.0.0.1:1/mcp", "--protocol", "2024-01-01"}, "--protocol"},
	} {
		_, stderr, code := runCLI(t, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 naming %q", tc.args, code, stderr, tc.want)
		}
	}
}
