package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// get fetches url with the bearer token (none when ""), returning the
// status and body.
func get(t *testing.T, url, token string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}

// scrape parses /metrics with the Prometheus text parser.
func scrape(t *testing.T, base, token string) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := get(t, base+"/metrics", token)
	if code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", code, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("/metrics does not parse as the Prometheus text format: %v", err)
	}
	return fams
}

// value is the value of the series of family with the labels (all of
// them given), and whether there is one. Histograms give their count.
func value(fams map[string]*dto.MetricFamily, family string, labels ...string) (float64, bool) {
	f, ok := fams[family]
	if !ok {
		return 0, false
	}
next:
	for _, m := range f.Metric {
		have := map[string]string{}
		for _, l := range m.Label {
			have[l.GetName()] = l.GetValue()
		}
		for i := 0; i+1 < len(labels); i += 2 {
			if have[labels[i]] != labels[i+1] {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

// TestMetricsAndHealth scrapes the real binary's /metrics with the
// Prometheus text parser before and after MCP calls, and probes /healthz
// and /readyz, all behind the gateway's bearer tokens.
func TestMetricsAndHealth(t *testing.T) {
	file, operator, _ := tokensFile(t)
	url := startServe(t, "--manifest", greenhouse, "--tokens", file, "--state", t.TempDir()).url
	base := strings.TrimSuffix(url, "/mcp")
	for _, p := range []string{"/metrics", "/healthz", "/readyz"} {
		if code, _ := get(t, base+p, ""); code != http.StatusUnauthorized {
			t.Errorf("GET %s without a token: %d, want 401 (same rules as /mcp)", p, code)
		}
		if code, _ := get(t, base+p, "not-a-token"); code != http.StatusUnauthorized {
			t.Errorf("GET %s with a wrong token: %d, want 401", p, code)
		}
	}
	if code, body := get(t, base+"/healthz", operator); code != http.StatusOK || !strings.Contains(string(body), `"ok"`) {
		t.Fatalf("/healthz: %d %s", code, body)
	}
	code, body := get(t, base+"/readyz", operator)
	var ready struct {
		Status string            `json:"status"`
		Checks map[string]string `json:"checks"`
	}
	if json.Unmarshal(body, &ready); code != http.StatusOK || ready.Status != "ready" || ready.Checks["buses"] != "ok" ||
		ready.Checks["state"] != "ok" || ready.Checks["audit"] != "ok" {
		t.Fatalf("/readyz: %d %s; want 200 ready with buses, state and audit ok", code, body)
	}

	before := scrape(t, base, operator)
	for _, fam := range []string{"promcp_bus_transactions_total", "promcp_bus_errors_total", "promcp_bus_latency_seconds",
		"promcp_breaker_open", "promcp_mcp_sessions", "promcp_audit_write_duration_seconds", "go_goroutines"} {
		if before[fam] == nil {
			t.Errorf("/metrics has no family %s", fam)
		}
	}
	if v, ok := value(before, "promcp_breaker_open", "device", "energy_meter"); !ok || v != 0 {
		t.Errorf("promcp_breaker_open{device=energy_meter} = %v (%v), want 0: the meter answers", v, ok)
	}
	tx0, _ := value(before, "promcp_bus_transactions_total", "capability", "temperature_zone1")

	// The 2025-11-25 protocol keeps a session (the newer one is
	// sessionless): promcp_mcp_sessions counts it.
	c, err := dialHTTP(url, "2025-11-25", operator)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	call := func(name string, args map[string]any) {
		t.Helper()
		res, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: args}})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %v", name, err, res)
		}
	}
	call("read_temperature_zone1", map[string]any{})
	call("read_temperature_zone1", map[string]any{}) // within the TTL: from the cache
	call("read_site_power", map[string]any{})
	call("do_set_heater", map[string]any{"value": true, "idempotency_key": "metrics-1"})

	after := scrape(t, base, operator)
	checks := []struct {
		family string
		labels []string
		want   func(float64) bool
		says   string
	}{
		{"promcp_mcp_sessions", nil, func(v float64) bool { return v >= 1 }, ">= 1 (the client's session)"},
		{"promcp_read_duration_seconds", []string{"capability", "temperature_zone1"}, func(v float64) bool { return v >= 2 }, "a count >= 2"},
		{"promcp_read_cache_hits_total", []string{"capability", "temperature_zone1"}, func(v float64) bool { return v >= 1 }, ">= 1"},
		{"promcp_quality", []string{"capability", "temperature_zone1", "quality", "good"}, func(v float64) bool { return v == 1 }, "1"},
		{"promcp_reads_total", []string{"capability", "site_power", "quality", "good"}, func(v float64) bool { return v >= 1 }, ">= 1"},
		{"promcp_bus_transactions_total", []string{"capability", "temperature_zone1"}, func(v float64) bool { return v > tx0 }, "more than before"},
		{"promcp_do_total", []string{"tool", "do_set_heater", "status", "success", "permission", "allowed"}, func(v float64) bool { return v == 1 }, "1"},
		{"promcp_audit_write_duration_seconds", nil, func(v float64) bool { return v >= 2 }, "a count >= 2 (attempt and result)"},
		{"promcp_tool_call_duration_seconds", []string{"kind", "read"}, func(v float64) bool { return v >= 3 }, "a count >= 3"},
	}
	for _, ck := range checks {
		v, ok := value(after, ck.family, ck.labels...)
		if !ok || !ck.want(v) {
			t.Errorf("after the calls, %s%v = %v (present %v), want %s\n%v", ck.family, ck.labels, v, ok, ck.says, after[ck.family])
		}
	}
}

// TestMetricsFlag: --metrics open serves the endpoints without a token,
// --metrics off does not serve them, and a bad mode is a usage error.
func TestMetricsFlag(t *testing.T) {
	file, operator, _ := tokensFile(t)
	open := strings.TrimSuffix(startServe(t, "--manifest", labBench, "--tokens", file, "--metrics", "open").url, "/mcp")
	if code, _ := get(t, open+"/metrics", ""); code != http.StatusOK {
		t.Errorf("--metrics open: GET /metrics without a token: %d, want 200", code)
	}
	off := strings.TrimSuffix(startServe(t, "--manifest", labBench, "--tokens", file, "--metrics", "off").url, "/mcp")
	if code, _ := get(t, off+"/metrics", operator); code != http.StatusNotFound {
		t.Errorf("--metrics off: GET /metrics: %d, want 404", code)
	}
	if _, stderr, code := runCLI(t, "serve", "--sim", "--manifest", labBench, "--http", "127.0.0.1:0", "--metrics", "loud"); code != 2 || !strings.Contains(stderr, `--metrics "loud"`) {
		t.Errorf("--metrics loud: exit %d, stderr %q; want 2 naming the flag", code, stderr)
	}
}

// TestMetricsBreakerOpens: a Modbus meter that stops answering shows as
// timeouts in promcp_bus_errors_total and, once the breaker opens, as
// promcp_breaker_open 1; its reads as quality other than good.
func TestMetricsBreakerOpens(t *testing.T) {
	t.Parallel()
	sc := filepath.Join(t.TempDir(), "dead-meter.yml")
	os.WriteFile(sc, []byte("version: 1\nscenario: dead_meter\nfaults:\n  - {at: 0s, device: energy_meter, fault: timeout, for: 1h}\n"), 0o644)
	url := startServe(t, "--manifest", greenhouse, "--scenario", sc).url
	base := strings.TrimSuffix(url, "/mcp")
	c := mcpClient(t, url, "")
	var open float64
	for i := 0; i < 8 && open == 0; i++ {
		if _, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "read_site_power",
			Arguments: map[string]any{"max_age_ms": 0}}}); err != nil {
			t.Fatal(err)
		}
		open, _ = value(scrape(t, base, ""), "promcp_breaker_open", "device", "energy_meter")
	}
	fams := scrape(t, base, "")
	if open != 1 {
		t.Errorf("promcp_breaker_open{device=energy_meter} = %v after the meter stopped answering, want 1", open)
	}
	if v, _ := value(fams, "promcp_bus_errors_total", "capability", "site_power", "class", "timeout"); v < 1 {
		t.Errorf("promcp_bus_errors_total{site_power,timeout} = %v, want >= 1", v)
	}
	if v, _ := value(fams, "promcp_quality", "capability", "site_power", "quality", "good"); v != 0 {
		t.Errorf("promcp_quality{site_power,good} = %v, want 0", v)
	}
	if v, _ := value(fams, "promcp_breaker_open", "device", "fan_vfd"); v != 0 {
		t.Errorf("promcp_breaker_open{fan_vfd} = %v, want 0 (it answers)", v)
	}
}
