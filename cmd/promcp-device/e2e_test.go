package main

// End-to-end tests: the real binary, built once, driven by the mcp-go
// client over stdio (as a subprocess) and over streamable HTTP, in both
// protocol generations. Every structured result is validated against the
// outputSchema the tool declared in tools/list.

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/promcp/promcp-device/promcp"
)

var binary string // built by TestMain

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "promcp-e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "promcp-device")
	// The binary is built with the race detector only when the tests run
	// under it: a race-enabled binary takes ~1 s to exit, on every run.
	flags := []string{"build", "-o", binary, "."}
	if raceEnabled {
		flags = []string{"build", "-race", "-o", binary, "."}
	}
	build := exec.Command("go", flags...)
	if raceEnabled {
		// Race-enabled processes sleep atexit_sleep_ms (1 s by default)
		// before they exit, for reports from other goroutines; races found
		// while running are reported all the same. The children inherit it.
		os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	}
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the binary:", err)
		os.Exit(1)
	}
	// The tests mostly wait (on the binary, simulated time, loopback), not
	// compute: unless -parallel says otherwise, four parallel tests run at
	// once, not GOMAXPROCS of them.
	flag.Parse()
	parallelSet := false
	flag.Visit(func(f *flag.Flag) { parallelSet = parallelSet || f.Name == "test.parallel" })
	if !parallelSet {
		flag.Set("test.parallel", "4")
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

const (
	greenhouse = "../../manifests/examples/greenhouse.yml"
	labBench   = "../../manifests/examples/lab-bench.yml"
)

var protocols = []string{mcp.LATEST_PROTOCOL_VERSION, "2025-11-25"}

var greenhouseTools = []string{"can_do", "do_set_fan_speed", "do_set_heater", "do_set_vent", "read_fan_running",
	"read_fan_speed", "read_fan_speed_setpoint", "read_heater", "read_humidity_zone1", "read_humidity_zone2",
	"read_site_energy", "read_site_power", "read_temperature_zone1", "read_temperature_zone2", "read_vent"}

// checkSurface asserts the greenhouse's tools and their annotations.
func checkSurface(t *testing.T, s *session) {
	t.Helper()
	var names []string
	for _, tool := range s.tools {
		names = append(names, tool.Name)
		a := tool.Annotations
		if a.ReadOnlyHint == nil || a.DestructiveHint == nil || a.IdempotentHint == nil {
			t.Fatalf("%s: annotations incomplete: %+v", tool.Name, a)
		}
		kind, ok := promcp.KindOf(tool.Name)
		if !ok {
			t.Fatalf("%s is not a proMCP tool name", tool.Name)
		}
		wantRO := kind != promcp.KindDo
		if *a.ReadOnlyHint != wantRO || !*a.IdempotentHint {
			t.Errorf("%s: readOnly=%t idempotent=%t, want readOnly=%t idempotent=true", tool.Name, *a.ReadOnlyHint, *a.IdempotentHint, wantRO)
		}
		if kind != promcp.KindDo && *a.DestructiveHint {
			t.Errorf("%s: destructiveHint true on a %s tool", tool.Name, kind)
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, greenhouseTools) {
		t.Fatalf("tools = %v, want %v", names, greenhouseTools)
	}
}

// exerciseGreenhouse runs the "done when" through a session.
func exerciseGreenhouse(t *testing.T, s *session) {
	checkSurface(t, s)

	r, isErr := s.call("read_temperature_zone1", map[string]any{})
	if isErr || r["quality"] != "good" || r["unit"] != "°C" {
		t.Fatalf("read_temperature_zone1 = %v (isError %t), want a good reading in °C", r, isErr)
	}
	if v, ok := r["value"].(float64); !ok || v < 10 || v > 25 {
		t.Fatalf("read_temperature_zone1 value = %v, want the simulated zone's ~16 °C", r["value"])
	}
	if _, err := time.Parse(time.RFC3339Nano, r["timestamp"].(string)); err != nil {
		t.Fatalf("timestamp %v is not ISO 8601: %v", r["timestamp"], err)
	}

	// One key, one actuation: A on, B off, A again (replayed) leaves it off.
	on, _ := s.call("do_set_heater", map[string]any{"value": true, "idempotency_key": "e2e-a"})
	if on["status"] != "success" || on["applied_value"] != true || on["previous_value"] != false {
		t.Fatalf("do_set_heater(true) = %v, want success false -> true", on)
	}
	if on["compensation_hint"] != "do_set_heater value=false" {
		t.Errorf("compensation_hint = %v, want the tool and the previous value", on["compensation_hint"])
	}
	off, _ := s.call("do_set_heater", map[string]any{"value": false, "idempotency_key": "e2e-b"})
	if off["status"] != "success" {
		t.Fatalf("do_set_heater(false) = %v", off)
	}
	again, _ := s.call("do_set_heater", map[string]any{"value": true, "idempotency_key": "e2e-a"})
	if again["replayed"] != true || again["timestamp"] != on["timestamp"] {
		t.Fatalf("retry with key e2e-a = %v, want the first result replayed", again)
	}
	if h, _ := s.call("read_heater", map[string]any{}); h["value"] != false {
		t.Fatalf("after a replayed do, read_heater = %v, want false: the replay must not actuate", h["value"])
	}
	conflict, isErr := s.call("do_set_heater", map[string]any{"value": false, "idempotency_key": "e2e-a"})
	if !isErr || conflict["error"].(map[string]any)["code"] != "idempotency_conflict" {
		t.Fatalf("key reuse with other arguments = %v, want idempotency_conflict", conflict)
	}

	// Bad arguments get a typed body naming the problem, and change nothing.
	bad, isErr := s.call("do_set_vent", map[string]any{"value": "open"})
	if !isErr || bad["status"] != "failed" || bad["error"].(map[string]any)["code"] != "invalid_argument" {
		t.Fatalf("do_set_vent(\"open\") = %v, want failed invalid_argument", bad)
	}
	if v, _ := s.call("read_vent", map[string]any{}); v["value"] != false {
		t.Fatalf("after a refused do_set_vent, read_vent = %v, want false", v["value"])
	}

	// can_do: heating matches the heater first; every candidate has valid_until.
	rep, _ := s.call("can_do", map[string]any{"intent": map[string]any{
		"semantic_tags": []any{"heating"}, "action": "turn on heater", "location": "zone1", "value": true}})
	cands := rep["candidates"].([]any)
	if rep["feasible"] != true || len(cands) == 0 || cands[0].(map[string]any)["capability"] != "do_set_heater" {
		t.Fatalf("can_do(heating) = %v, want do_set_heater first and feasible", rep)
	}
	exerciseModbus(t, s)

	nothing, _ := s.call("can_do", map[string]any{"intent": map[string]any{"action": "launch rocket"}})
	if nothing["feasible"] != false || len(nothing["candidates"].([]any)) != 0 || nothing["metadata"].(map[string]any)["note"] == nil {
		t.Fatalf("can_do(launch rocket) = %v, want an empty report that says so", nothing)
	}
}

// exerciseModbus: the energy meter answers over Modbus TCP and the fan VFD
// over RTU, both through the real drivers.
func exerciseModbus(t *testing.T, s *session) {
	t.Helper()
	p, isErr := s.call("read_site_power", map[string]any{})
	if isErr || p["quality"] != "good" || p["unit"] != "W" {
		t.Fatalf("read_site_power = %v (isError %t), want a good reading in W", p, isErr)
	}
	if v, _ := p["value"].(float64); v < 150 {
		t.Fatalf("read_site_power value = %v, want at least the 150 W base load", p["value"])
	}
	if e, isErr := s.call("read_site_energy", map[string]any{}); isErr || e["unit"] != "kWh" {
		t.Fatalf("read_site_energy = %v", e)
	}
	set, isErr := s.call("do_set_fan_speed", map[string]any{"value": 25.5})
	if isErr || set["status"] != "success" || set["applied_value"] != 25.5 || set["previous_value"] != 0.0 {
		t.Fatalf("do_set_fan_speed(25.5) = %v, want success 0 -> 25.5", set)
	}
	if sp, _ := s.call("read_fan_speed_setpoint", map[string]any{}); sp["value"] != 25.5 || sp["quality"] != "good" {
		t.Fatalf("read_fan_speed_setpoint = %v, want 25.5", sp)
	}
	if bad, isErr := s.call("do_set_fan_speed", map[string]any{"value": 80}); !isErr || bad["permission"] != "out_of_range" {
		t.Fatalf("do_set_fan_speed(80) = %v, want out_of_range", bad)
	}
	if f, _ := s.call("read_fan_running", map[string]any{}); f["quality"] != "good" {
		t.Fatalf("read_fan_running = %v", f)
	}
}

func TestStdio(t *testing.T) {
	for _, p := range protocols {
		t.Run(p, func(t *testing.T) {
			exerciseGreenhouse(t, stdioSession(t, p, "--manifest", greenhouse))
		})
	}
}

func TestHTTP(t *testing.T) {
	for _, p := range protocols {
		t.Run(p, func(t *testing.T) {
			url := startHTTP(t, "--manifest", greenhouse)
			exerciseGreenhouse(t, httpSession(t, url, p))
		})
	}
}

// TestHeaterWarmsZone: turning the heater on makes later reads of the
// simulated chip rise. Simulated time runs 3000x, so minutes pass quickly;
// the test waits for the condition, it does not time it.
func TestHeaterWarmsZone(t *testing.T) {
	s := stdioSession(t, protocols[1], "--manifest", greenhouse, "--time-scale", "3000")
	first, _ := s.call("read_temperature_zone1", map[string]any{})
	start := first["value"].(float64)
	if r, _ := s.call("do_set_heater", map[string]any{"value": true}); r["status"] != "success" {
		t.Fatalf("do_set_heater = %v", r)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		r, _ := s.call("read_temperature_zone1", map[string]any{})
		if v := r["value"].(float64); v > start+2 {
			return
		} else if time.Now().After(deadline) {
			t.Fatalf("zone1 stayed at %.2f °C (from %.2f) with the heater on", v, start)
		}
	}
}

// TestOutOfRangeNeverReachesTheBus: a value outside the constraints is
// refused by do_* and by can_do with out_of_range, and the device keeps
// its value.
func TestOutOfRangeNeverReachesTheBus(t *testing.T) {
	s := stdioSession(t, protocols[0], "--manifest", labBench)
	before, _ := s.call("read_light_level", map[string]any{})
	res, isErr := s.call("do_set_light_level", map[string]any{"value": 150})
	if !isErr || res["status"] != "failed" || res["permission"] != "out_of_range" {
		t.Fatalf("do_set_light_level(150) = %v, want failed out_of_range", res)
	}
	after, _ := s.call("read_light_level", map[string]any{})
	if after["value"] != before["value"] {
		t.Fatalf("light level changed from %v to %v after a refused write", before["value"], after["value"])
	}
	rep, _ := s.call("can_do", map[string]any{"intent": map[string]any{"target": "light_level", "value": 150}})
	blocked := rep["blocked"].([]any)
	if rep["feasible"] != false || len(blocked) != 1 || blocked[0].(map[string]any)["permission"] != "out_of_range" {
		t.Fatalf("can_do(light 150) = %v, want blocked out_of_range", rep)
	}
	ok, _ := s.call("do_set_light_level", map[string]any{"value": 75.5})
	if ok["status"] != "success" || ok["applied_value"] != 75.5 || ok["previous_value"] != before["value"] {
		t.Fatalf("do_set_light_level(75.5) = %v, want success %v -> 75.5", ok, before["value"])
	}
}

func TestHTTPDeletedSessionIs404(t *testing.T) {
	url := startHTTP(t, "--manifest", greenhouse)
	post := func(header map[string]string, body string) *http.Response {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res
	}
	init := post(nil, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	sid := init.Header.Get("Mcp-Session-Id")
	if init.StatusCode != 200 || sid == "" {
		t.Fatalf("initialize: status %d, session %q", init.StatusCode, sid)
	}
	hdr := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodDelete, url, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	del, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	del.Body.Close()
	if got := post(hdr, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`).StatusCode; got != http.StatusNotFound {
		t.Fatalf("tools/list on a deleted session: status %d, want 404", got)
	}
	if got := post(map[string]string{"Origin": "https://evil.example"}, `{"jsonrpc":"2.0","id":3,"method":"ping"}`).StatusCode; got != http.StatusForbidden {
		t.Fatalf("request from a foreign Origin: status %d, want 403", got)
	}
}

func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := command(t, binary, args...)
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return o.String(), e.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), 0
}

func TestServeWithoutHardwareNamesTheBus(t *testing.T) {
	_, stderr, code := runCLI(t, "serve", "--manifest", greenhouse)
	if code != 1 || !strings.Contains(stderr, `i2c1`) || !strings.Contains(stderr, `"1"`) {
		t.Fatalf("serve without --sim on a machine without I2C: exit %d, stderr %q; want exit 1 naming bus i2c1 (\"1\")", code, stderr)
	}
}

func TestLintCLI(t *testing.T) {
	out, _, code := runCLI(t, "lint", greenhouse, labBench, greenhouseFaults)
	if code != 0 || strings.Count(out, ": ok: gateway") != 2 || !strings.Contains(out, "greenhouse.policy.yml: ok: policy") ||
		!strings.Contains(out, "scenario greenhouse_faults, 4 faults") {
		t.Fatalf("lint examples: exit %d, %q", code, out)
	}
	bad := filepath.Join(t.TempDir(), "bad.yml")
	os.WriteFile(bad, []byte("version: 1\ngateway: g\nbuses:\n  - name: i2c1\n    kind: can\n"), 0o644)
	out, _, code = runCLI(t, "lint", bad)
	if code != 1 || !strings.Contains(out, "bad.yml:5:11") {
		t.Fatalf("lint bad manifest: exit %d, %q; want exit 1 and the position bad.yml:5:11", code, out)
	}
}

func TestToolsJSON(t *testing.T) {
	out, _, code := runCLI(t, "tools", "--manifest", greenhouse, "--json")
	if code != 0 {
		t.Fatalf("tools --json: exit %d", code)
	}
	var tools []map[string]any
	if err := json.Unmarshal([]byte(out), &tools); err != nil {
		t.Fatalf("tools --json is not JSON: %v", err)
	}
	var names []string
	for _, tool := range tools {
		names = append(names, tool["name"].(string))
		for _, k := range []string{"description", "inputSchema", "outputSchema", "responseSchema", "annotations"} {
			if tool[k] == nil {
				t.Errorf("%s: %s missing", tool["name"], k)
			}
		}
		a, _ := json.Marshal(tool["outputSchema"])
		b, _ := json.Marshal(tool["responseSchema"])
		if string(a) != string(b) {
			t.Errorf("%s: responseSchema differs from outputSchema", tool["name"])
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, greenhouseTools) {
		t.Fatalf("tools --json names = %v, want %v", names, greenhouseTools)
	}
}

// TestDemo runs `promcp-device demo`: the orchestration pattern and every
// refusal it shows must come out as the demo says (it exits 1 otherwise).
func TestDemo(t *testing.T) {
	out, stderr, code := runCLI(t, "demo", "--manifest", greenhouse)
	if code != 0 {
		t.Fatalf("demo: exit %d\n%s\n%s", code, out, stderr)
	}
	for _, want := range []string{"permission=permission_insufficient", "permission=policy_denied", "replayed (nothing actuated)", "error=idempotency_conflict"} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
}

// TestToolsCheck is the drift gate against a live server: the greenhouse
// served matches its manifest, and another manifest's surface does not.
func TestToolsCheck(t *testing.T) {
	url := startHTTP(t, "--manifest", greenhouse)
	out, _, code := runCLI(t, "tools", "--manifest", greenhouse, "--check", url)
	if code != 0 || !strings.Contains(out, "ok: every served tool is classified once") {
		t.Fatalf("tools --check on the served greenhouse: exit %d\n%s", code, out)
	}
	out, _, code = runCLI(t, "tools", "--manifest", labBench, "--check", url)
	if code != 1 || !strings.Contains(out, "missing (in the manifest, not served): do_set_light_level") {
		t.Fatalf("tools --check lab-bench against the greenhouse: exit %d\n%s", code, out)
	}
}

const greenhouseFaults = "../../manifests/examples/greenhouse-faults.yml"

// TestScenarioQuality plays greenhouse-faults.yml on the real binary, with
// simulated time up to 10x (as fast as this machine polls every phase):
// zone 1's sensor times out (stale: the last good value at its own sample
// time), then dies (error, with the reason), zone 2's freezes (degraded:
// stuck), can_do blocks the heater that depends on the dead sensor, and
// everything is good again once the scenario clears the faults. The test
// waits for conditions under a deadline; it times nothing.
func TestScenarioQuality(t *testing.T) {
	t.Parallel() // it waits on simulated time: overlap it with the crash trials
	read := func(s *session, tool string) map[string]any {
		r, _ := s.call(tool, map[string]any{})
		return r
	}
	polled := []string{"read_temperature_zone1", "read_temperature_zone2", "read_site_power"}
	// Zone 1 is stale for about 26 s (until its last good value is 30 s
	// old), dead for a minute; the scenario is over at 2m10s.
	pace := paceScenario(t, protocols[0], []string{"--manifest", greenhouse}, 10,
		scenarioPhases{shortest: 25 * time.Second, length: 130 * time.Second},
		func(s *session) {
			for _, tool := range polled {
				read(s, tool)
			}
		})
	s := stdioSession(t, protocols[0], "--manifest", greenhouse, "--time-scale", pace.timeScale(), "--scenario", pace.scenario(t, greenhouseFaults))
	deadline := pace.deadline
	heater := func() map[string]any {
		r, _ := s.call("can_do", map[string]any{"intent": map[string]any{"action": "do_set_heater", "value": true}})
		return r
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}

	var good, stale, dead, stuck, implausible map[string]any
	waitFor("zone 1 stale, then dead, and zone 2 stuck", func() bool {
		if dead == nil {
			switch r := read(s, "read_temperature_zone1"); r["quality"] {
			case "good":
				good = r
			case "stale":
				stale = r
			case "error":
				// First the last good value expires (max_stale), then the
				// sensor stops answering at all.
				if r["quality_reason"] == "read failed (nack)" {
					dead = r
				}
			}
		}
		if r := read(s, "read_temperature_zone2"); r["quality"] == "degraded" {
			stuck = r
		}
		if r := read(s, "read_site_power"); r["quality"] == "degraded" {
			implausible = r
		}
		return dead != nil && stuck != nil && implausible != nil
	})
	if reason, _ := implausible["quality_reason"].(string); !strings.HasPrefix(reason, "implausible: ") || implausible["value"] != 1e6 {
		t.Errorf("meter sending 1 MW: read_site_power = %v, want 1e6 degraded with reason \"implausible: …\"", implausible)
	}
	if stale == nil {
		t.Errorf("read_temperature_zone1 went to error without being stale first (timeout phase)")
	} else {
		reason, _ := stale["quality_reason"].(string)
		if !strings.HasPrefix(reason, "read failed (timeout); last good value from ") || stale["value"] == nil {
			t.Errorf("timing-out sensor: read_temperature_zone1 = %v, want the last good value, reason \"read failed (timeout); last good value from …\"", stale)
		}
		if good != nil && stale["timestamp"] != good["timestamp"] {
			t.Errorf("stale timestamp %v, want the last good sample's %v", stale["timestamp"], good["timestamp"])
		}
	}
	if dead["value"] != nil {
		t.Errorf("dead sensor: read_temperature_zone1 = %v, want a null value", dead)
	}
	if reason, _ := stuck["quality_reason"].(string); !strings.HasPrefix(reason, "stuck: unchanged for ") || stuck["value"] == nil {
		t.Errorf("frozen sensor: read_temperature_zone2 = %v, want its value with reason \"stuck: unchanged for …\"", stuck)
	}

	rep := heater()
	blocked, _ := rep["blocked"].([]any)
	if len(blocked) != 1 {
		t.Fatalf("can_do(heater) with a dead zone 1 sensor = %v, want do_set_heater blocked", rep)
	}
	b := blocked[0].(map[string]any)
	if b["capability"] != "do_set_heater" || b["permission"] != "source_unreachable" ||
		!strings.Contains(b["reason"].(string), "read_temperature_zone1") {
		t.Errorf("blocked = %v, want do_set_heater, source_unreachable, naming read_temperature_zone1", b)
	}
	obs := rep["context"].(map[string]any)["current_observations"].(map[string]any)
	if o, _ := obs["read_temperature_zone1"].(map[string]any); o["quality"] != "error" {
		t.Errorf("current_observations[read_temperature_zone1] = %v, want quality error", o)
	}
	if r, _ := s.call("do_set_heater", map[string]any{"value": true}); r["status"] != "failed" || r["permission"] != "source_unreachable" {
		t.Errorf("do_set_heater with a dead sensor = %v, want failed, source_unreachable", r)
	}

	waitFor("every reading good again after the scenario clears", func() bool {
		for _, tool := range []string{"read_temperature_zone1", "read_humidity_zone1", "read_temperature_zone2", "read_humidity_zone2", "read_site_power"} {
			if read(s, tool)["quality"] != "good" {
				return false
			}
		}
		return true
	})
	waitFor("can_do to allow the heater again", func() bool {
		c, _ := heater()["candidates"].([]any)
		return len(c) == 1 && c[0].(map[string]any)["permission"] == "allowed"
	})
}

func TestServeScenarioErrors(t *testing.T) {
	if _, stderr, code := runCLI(t, "serve", "--manifest", greenhouse, "--scenario", greenhouseFaults); code != 2 || !strings.Contains(stderr, "--scenario needs --sim") {
		t.Errorf("--scenario without --sim: exit %d, %q; want exit 2", code, stderr)
	}
	bad := filepath.Join(t.TempDir(), "bad.yml")
	os.WriteFile(bad, []byte("version: 1\nscenario: bad\nfaults:\n  - {at: 1s, device: zone1_climate, fault: melt}\n"), 0o644)
	if _, stderr, code := runCLI(t, "serve", "--sim", "--manifest", greenhouse, "--scenario", bad); code != 1 || !strings.Contains(stderr, "bad.yml:4:44: faults[0].fault: unknown value \"melt\"") {
		t.Errorf("bad scenario: exit %d, %q; want exit 1 with the position", code, stderr)
	}
}

// TestCooldownSurvivesRestart: with --state, the fan's cooldown (5 minutes
// in greenhouse.policy.yml) still refuses a change after the gateway
// restarts: the actuation history is on disk, not in the process.
func TestCooldownSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	first := stdioSession(t, protocols[1], "--manifest", greenhouse, "--state", dir)
	if r, _ := first.call("do_set_fan_speed", map[string]any{"value": 30}); r["status"] != "success" {
		t.Fatalf("do_set_fan_speed(30) = %v", r)
	}
	first.c.Close() // stdin closes: the gateway finishes and exits
	second := stdioSession(t, protocols[1], "--manifest", greenhouse, "--state", dir)
	r, _ := second.call("do_set_fan_speed", map[string]any{"value": 20})
	if r["status"] != "failed" || r["permission"] != "cooldown_active" {
		t.Fatalf("after a restart, do_set_fan_speed(20) = %v, want the cooldown still active", r)
	}
}
