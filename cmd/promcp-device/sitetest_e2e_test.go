package main

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSiteTestExamples runs every example site test through the binary:
// all pass (exit 0), and the JUnit file counts every step of every test.
func TestSiteTestExamples(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob("../../manifests/examples/site-tests/*.yml")
	if len(files) < 6 {
		t.Fatalf("want a site test per example manifest, found %v", files)
	}
	junit := filepath.Join(t.TempDir(), "junit.xml")
	out, stderr, code := runCLI(t, append(append([]string{"test"}, files...), "--junit", junit)...)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	if !strings.Contains(out, "passed, 0 failed, 0 could not run") {
		t.Errorf("report lacks the summary:\n%s", out)
	}
	var doc struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Name  string `xml:"name,attr"`
			Cases []struct {
				Failure *struct{} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	b := readFile(t, junit)
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("junit: %v", err)
	}
	steps := 0
	for _, s := range doc.Suites {
		steps += len(s.Cases)
	}
	if len(doc.Suites) != len(files) || doc.Failures != 0 || doc.Tests != steps || steps < 100 {
		t.Errorf("junit: %d suites for %d files, %d failures, tests=%d for %d cases", len(doc.Suites), len(files), doc.Failures, doc.Tests, steps)
	}
}

// TestSiteTestWrongExpectation: a test expecting the interlocked heater
// to switch on fails with exit 1, the step, what was expected and what
// came back, and a JUnit failure.
func TestSiteTestWrongExpectation(t *testing.T) {
	junit := filepath.Join(t.TempDir(), "junit.xml")
	out, stderr, code := runCLI(t, "test", "--junit", junit, "../../sitetest/testdata/wrong-expectation.yml")
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, out, stderr)
	}
	for _, want := range []string{
		"FAIL  2 [12:00:00] call do_set_heater",
		">>> first difference:",
		`expected: "success"`,
		`got:      "failed"`,
		`permission="policy_denied"`,
		"0 passed, 1 failed, 0 could not run",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	b, _ := os.ReadFile(junit)
	if !strings.Contains(string(b), `<failure message="status: expected &#34;success&#34;, got &#34;failed&#34;" type="expectation">`) {
		t.Errorf("junit lacks the failure:\n%s", b)
	}
}

// TestSiteTestCannotLoad: a file with a mistake exits 2 naming
// file:line:col and the field; a missing file too.
func TestSiteTestCannotLoad(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yml")
	manifest, _ := filepath.Abs(greenhouse)
	os.WriteFile(bad, []byte("version: 1\ntest: bad\nmanifest: "+manifest+"\nsteps:\n  - advance: soon\n  - call: read_vent\n    expect: {quality: good, colour: red}\n"), 0o644)
	zone := filepath.Join(dir, "zone.yml")
	os.WriteFile(zone, []byte("version: 1\ntest: zone\nmanifest: "+manifest+"\nsteps:\n  - set: {zone: zone9, temperature: 3}\n"), 0o644)
	role := filepath.Join(dir, "role.yml")
	os.WriteFile(role, []byte("version: 1\ntest: role\nmanifest: "+manifest+"\nsteps:\n  - call: read_vent\n    as: {name: x, role: operater}\n"), 0o644)
	out, stderr, code := runCLI(t, "test", bad, filepath.Join(dir, "missing.yml"), zone, role)
	if code != 2 {
		t.Fatalf("exit %d, want 2\n%s\n%s", code, out, stderr)
	}
	for _, want := range []string{
		bad + `:5:14: steps[0].advance: out of range: "soon"`,
		bad + `:7:29: steps[1].expect.colour: unknown field`,
		"missing.yml: no such file",
		zone + `:5:5: steps[0].set: undefined: zone "zone9" is not in ` + manifest + ` (want one of zone1, zone2)`,
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	// A role the policy does not declare: the test cannot run (the report
	// says why).
	if want := "COULD NOT RUN: " + role + `:5:5: steps[0].as: role "operater" is not declared by the policy (want viewer, operator, supervisor, admin)`; !strings.Contains(out, want) {
		t.Errorf("report lacks %q:\n%s", want, out)
	}
}

// TestSiteTestUpdate: --update writes what came back into a step marked
// record, keeps the rest of the file, and the updated test passes.
func TestSiteTestUpdate(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "rec.yml")
	manifest, _ := filepath.Abs(greenhouse)
	head := "# keep this comment\nversion: 1\ntest: rec\nmanifest: " + manifest + "\nsteps:\n"
	os.WriteFile(f, []byte(head+"  - call: do_set_vent\n    args: {value: true}\n    record: [status, applied_value, permission]\n  - advance: 1m # and this\n"), 0o644)
	out, stderr, code := runCLI(t, "test", "--update", f)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	b, _ := os.ReadFile(f)
	want := head + "  - call: do_set_vent\n    args: {value: true}\n    expect: {body: {\"status\": \"success\", \"applied_value\": true, \"permission\": {absent: true}}}\n  - advance: 1m # and this\n"
	if string(b) != want {
		t.Fatalf("updated file:\n%s\nwant:\n%s", b, want)
	}
	if out, stderr, code := runCLI(t, "test", f); code != 0 {
		t.Fatalf("the updated test: exit %d\n%s\n%s", code, out, stderr)
	}
}

// TestDemoManifests: demo --manifest on every example other than the
// greenhouse runs the can_do → read → do → read session on its first
// actuator, each call answered.
func TestDemoManifests(t *testing.T) {
	t.Parallel()
	for name, act := range map[string]string{"lab-bench": "do_set_light_level", "pi-sensors": "do_set_valve_1", "pi-outdoor": "do_set_fan_speed",
		"mqtt-home": "do_set_dehumidifier", "irrigation": "do_set_valve_main", "energy-meters": "do_set_water_heater"} {
		out, stderr, code := runCLI(t, "demo", "--manifest", "../../manifests/examples/"+name+".yml")
		if code != 0 {
			t.Errorf("%s: exit %d\n%s\n%s", name, code, out, stderr)
			continue
		}
		for _, want := range []string{"call can_do {\"intent\":{\"action\":\"" + act + "\"", "act: once, with an idempotency key: call " + act, "verify: read the post-state", "PASS: 6 steps"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: output lacks %q:\n%s", name, want, out)
			}
		}
	}
}

// TestSiteTestREADMEExample runs the site test docs/site-tests.md shows,
// so that the example stays one that passes.
func TestSiteTestREADMEExample(t *testing.T) {
	b := readFile(t, "../../docs/site-tests.md")
	_, sec, ok := strings.Cut(string(b), "\n## Test your site in CI\n")
	_, block, ok2 := strings.Cut(sec, "```yaml\n")
	block, _, ok3 := strings.Cut(block, "```\n")
	if !ok || !ok2 || !ok3 {
		t.Fatal("docs/site-tests.md: no yaml example under Test your site in CI")
	}
	examples, _ := filepath.Abs("../../manifests/examples")
	block = strings.ReplaceAll(block, "../greenhouse", examples+"/greenhouse")
	f := filepath.Join(t.TempDir(), "readme.yml")
	os.WriteFile(f, []byte(block), 0o644)
	out, stderr, code := runCLI(t, "test", f)
	if code != 0 || !strings.Contains(out, "1 passed, 0 failed") {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
}
