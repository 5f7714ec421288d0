package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/mark3labs/mcp-go/mcp"
)

// consoleSite is a greenhouse gateway served with --console, MCP tokens
// for an agent (operator), a supervisor and a viewer, console accounts
// for the two people (sue, supervisor; vic, viewer), and a fault scenario
// in which the energy meter reports 1 MW (degraded) for 10 s every 20 s.
type consoleSite struct {
	url, base                 string // the MCP endpoint, and scheme://host
	agent, supervisor, viewer string // their MCP tokens
	suePW, vicPW              string // sue's and vic's console passwords
	users                     string // the console users file
	state                     string
}

// addConsoleUser runs `console-user add NAME --role ROLE --file FILE` with
// the password on stdin, at the lowest bcrypt cost (sign-ins under -race
// would take seconds each at the default cost).
func addConsoleUser(t *testing.T, file, name, role, password string) {
	t.Helper()
	cmd := command(t, binary, "console-user", "add", name, "--role", role, "--file", file, "--cost", "4")
	cmd.Stdin = strings.NewReader(password + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("console-user add %s: %v\n%s", name, err, out)
	}
}

func startConsoleSite(t *testing.T, extra ...string) *consoleSite {
	t.Helper()
	dir := t.TempDir()
	manifest := filepath.Join(dir, "greenhouse.yml")
	copyFile(t, greenhouse, manifest)
	copyFile(t, strings.TrimSuffix(greenhouse, ".yml")+".policy.yml", filepath.Join(dir, "greenhouse.policy.yml"))
	scenario := filepath.Join(dir, "meter.yml")
	// The meter reports 1 MW for 5 s every 10 s from 6 s on: whenever the
	// browser logs in, the value changes within 10 s, and each phase
	// outlasts what the page can lag behind it (the read's 1 s TTL, the
	// console's 1 s snapshot, the page's 2 s refresh).
	sc := "version: 1\nscenario: meter\nmanifest: greenhouse.yml\nfaults:\n"
	for k := range 30 {
		sc += fmt.Sprintf("  - {at: %ds, device: energy_meter, fault: implausible, value: 1000000, for: 5s}\n", 6+10*k)
	}
	if err := os.WriteFile(scenario, []byte(sc), 0o644); err != nil {
		t.Fatal(err)
	}
	s := &consoleSite{state: filepath.Join(dir, "state"), users: filepath.Join(dir, "console-users.txt"),
		suePW: "sue's greenhouse passphrase", vicPW: "vic reads the values"}
	addConsoleUser(t, s.users, "sue", "supervisor", s.suePW)
	addConsoleUser(t, s.users, "vic", "viewer", s.vicPW)
	tokens := filepath.Join(dir, "tokens.txt")
	for _, who := range []struct {
		name, role string
		tok        *string
	}{{"agent", "operator", &s.agent}, {"sue", "supervisor", &s.supervisor}, {"vic", "viewer", &s.viewer}} {
		out, errOut, code := runCLI(t, "token", "add", "--tokens", tokens, "--name", who.name, "--role", who.role)
		if code != 0 {
			t.Fatalf("token add %s: exit %d: %s", who.name, code, errOut)
		}
		*who.tok = strings.TrimSpace(out)
	}
	s.url = startHTTP(t, append([]string{"--manifest", manifest, "--tokens", tokens, "--state", s.state,
		"--console", "--console-users", s.users, "--scenario", scenario}, extra...)...)
	s.base = strings.TrimSuffix(s.url, "/mcp")
	return s
}

// agentSession is the agent's own MCP client, with its token.
func (s *consoleSite) agentSession(t *testing.T) *session {
	t.Helper()
	c := mcpClient(t, s.url, s.agent)
	t.Cleanup(func() { c.Close() })
	return &session{t: t, c: c}
}

// chromium returns the path of Debian's chromium, or skips the test
// saying why; where CI runs (CI=true or PROMCP_REQUIRE_CHROMIUM=1) a
// missing browser fails the test instead.
func chromium(t *testing.T) string {
	t.Helper()
	for _, p := range []string{os.Getenv("PROMCP_CHROMIUM"), "/usr/bin/chromium", "chromium", "chromium-browser"} {
		if p == "" {
			continue
		}
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	if os.Getenv("CI") == "true" || os.Getenv("PROMCP_REQUIRE_CHROMIUM") == "1" {
		t.Fatal("chromium is not installed, and CI requires the console test to run in it (apt-get install chromium; scripts/test does)")
	}
	t.Skip("chromium is not installed: the console's browser test needs Debian's chromium (apt-get install chromium); scripts/test installs it and requires it")
	return ""
}

// browser starts a headless chromium, phone-sized, with a fresh profile
// and every background connection off (the network is closed).
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium(t)),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(800, 1100),
	}
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancelCtx := chromedp.NewContext(actx)
	t.Cleanup(cancelCtx)
	ctx, cancelT := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(cancelT)
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return ctx
}

// textOf is the text of the first element matching sel.
func textOf(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return strings.Join(strings.Fields(s), " ")
}

// waitJS waits until the JavaScript condition js holds in the page (the
// page polls the gateway every 2 s; the browser context bounds the wait).
func waitJS(t *testing.T, ctx context.Context, what, js string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(60*time.Second))); err != nil {
		body, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
		t.Fatalf("waiting for %s: %v\npage:\n%s", what, err, body)
	}
}

// The operator console in a real browser: a supervisor signs in with her
// console account, sees a value change with its quality without reloading, sees the
// agent's do_* call wait for approval (who, what, why, the side effects and
// can_do's answer), approves it there, and the agent's call completes,
// recorded in the audit log as approved by her.
func TestConsoleInChromium(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	site := startConsoleSite(t)

	err := chromedp.Do(ctx,
		chromedp.EmulateViewport(412, 1000), // a phone on site
		chromedp.Navigate(site.base+"/console/"),
		chromedp.WaitVisible(chromedp.CSS("#password")),
		chromedp.SendKeys(chromedp.CSS("#name"), "sue"),
		chromedp.SendKeys(chromedp.CSS("#password"), site.suePW),
		chromedp.Click(chromedp.CSS("#login")),
		chromedp.WaitVisible(chromedp.CSS("#values")),
	)
	if err == nil {
		_, err = chromedp.Run(ctx, chromedp.Evaluate[string](`window.promcpMarker = "same page"`))
	}
	if err != nil {
		t.Fatalf("logging in: %v", err)
	}
	if who := textOf(t, ctx, "header .who"); who != "sue · supervisor · approves" {
		t.Fatalf("header after login = %q, want sue · supervisor · approves", who)
	}
	if cookies, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.cookie`)); cookies != "" {
		t.Errorf("document.cookie = %q: the session cookie must be HttpOnly, out of the page's reach", cookies)
	}

	// A value changes with its quality as the meter's fault comes and
	// goes, and the page shows it without a reload.
	power := `#v-read_site_power`
	before := textOf(t, ctx, power)
	if !strings.Contains(before, "150 W good") && !strings.Contains(before, "1000000 W degraded implausible") {
		t.Fatalf("site power = %q, want 150 W good, or 1000000 W degraded (implausible) during the fault", before)
	}
	q0 := textOf(t, ctx, power+" .q")
	waitJS(t, ctx, "the site power's quality to change from "+q0, `document.querySelector("#v-read_site_power .q").innerText !== "`+q0+`"`)
	after := textOf(t, ctx, power)
	if want := map[string]string{"good": "1000000 W degraded implausible", "degraded": "150 W good"}[q0]; !strings.Contains(after, want) {
		t.Errorf("site power went from %q to %q, want %q", before, after, want)
	}

	// The agent asks for more than the policy lets it do alone.
	agent := site.agentSession(t)
	args := map[string]any{"value": 50.0, "idempotency_key": "fan-50"}
	r, _ := agent.rawCall("do_set_fan_speed", args)
	if r["status"] != "failed" || r["permission"] != "requires_human_approval" || !strings.Contains(r["reason"].(string), "operator console as request") {
		t.Fatalf("do_set_fan_speed 50 = %v, want requires_human_approval waiting in the console", r)
	}
	id := regexp.MustCompile(`request ([0-9A-F]+)`).FindStringSubmatch(r["reason"].(string))[1]
	req := "#r-" + id
	waitJS(t, ctx, "the request to appear", `document.querySelector("`+req+` button.approve") !== null`)
	card := textOf(t, ctx, req)
	for _, want := range []string{"do_set_fan_speed value 50", "asked by agent (operator)", "fan-50", "above", "side effects:", "can_do now:"} {
		if !strings.Contains(card, want) {
			t.Errorf("request card = %q, want it to say %q", card, want)
		}
	}
	shot(t, ctx)

	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(req+" button.approve")), chromedp.WaitVisible(chromedp.CSS("#flash"))); err != nil {
		t.Fatalf("approving: %v", err)
	}
	if f := textOf(t, ctx, "#flash"); !strings.Contains(f, "approved by sue") {
		t.Fatalf("after approving: %q, want approved by sue", f)
	}
	// The approval is a form post (the page loads again); from here on
	// the page updates in place.
	_, _ = chromedp.Run(ctx, chromedp.Evaluate[string](`window.promcpMarker = "same page"`))

	// The agent's same call now completes, with the approval recorded.
	r, _ = agent.rawCall("do_set_fan_speed", args)
	if r["status"] != "success" || r["applied_value"] != 50.0 {
		t.Fatalf("do_set_fan_speed 50 after approval = %v, want success 50", r)
	}
	waitJS(t, ctx, "the setpoint and the used approval to show", `document.querySelector("#v-read_fan_speed_setpoint .value").innerText.startsWith("50") && document.querySelector("`+req+`").className.includes("req-used")`)
	if got := textOf(t, ctx, req+" .decided"); !regexp.MustCompile(`^approved by sue \(supervisor\) at \d\d:\d\d:\d\d \S+ · used by agent \(operator\) at \d\d:\d\d:\d\d \S+$`).MatchString(got) {
		t.Errorf("the used request says %q, want approved by sue (supervisor), used by agent (operator)", got)
	}
	waitJS(t, ctx, "the audit log to show the approved result", `[...document.querySelectorAll("#audit tr")].some(tr => tr.innerText.includes("do_set_fan_speed") && tr.innerText.includes("agent") && tr.innerText.includes("success") && tr.innerText.includes("approved by sue in the console"))`)
	if marker, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`window.promcpMarker || ""`)); marker != "same page" {
		t.Errorf("the page reloaded while it updated (marker %q)", marker)
	}

	// The filter keeps to the rows asked for.
	if err := chromedp.Do(ctx, chromedp.Navigate(site.base+"/console/?outcome=requires_human_approval&tool=do_set_fan_speed#audit"), chromedp.WaitVisible(chromedp.CSS("#audit"))); err != nil {
		t.Fatal(err)
	}
	rows := textOf(t, ctx, "#audit tbody")
	if !strings.Contains(rows, "requires_human_approval") || strings.Contains(rows, "success") {
		t.Errorf("audit filtered on requires_human_approval = %q, want the refusal only", rows)
	}
}

// shot saves a screenshot of the console (PNG) to PROMCP_CONSOLE_SCREENSHOT,
// or beside the test's temporary files, and logs where.
func shot(t *testing.T, ctx context.Context) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	path := os.Getenv("PROMCP_CONSOLE_SCREENSHOT")
	if path == "" {
		path = filepath.Join(os.TempDir(), "promcp-console.png")
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("console screenshot: %s (%d bytes)", path, len(png))
}

// The approval in the console is out of the agent's reach: no MCP token
// signs in to the console (the agent's, nor the supervisor's, whatever its
// role, as the old form sent it or as a password), so the agent, which can
// set an Origin header itself, has no session to approve with; a POST from
// another origin, or without the session's CSRF token, is refused; a
// supervisor does not approve her own request; a viewer sees no buttons.
// When sue approves, the page and the audit log name her as the approver
// and the agent as the caller who used it. Runs without a browser.
func TestConsoleApprovalCannotBeForged(t *testing.T) {
	site := startConsoleSite(t)
	agent := site.agentSession(t)
	r, _ := agent.rawCall("do_set_fan_speed", map[string]any{"value": 50.0, "idempotency_key": "k1"})
	m := regexp.MustCompile(`request ([0-9A-F]+)`).FindStringSubmatch(r["reason"].(string))
	if m == nil {
		t.Fatalf("do_set_fan_speed 50 = %v, want a request waiting in the console", r)
	}
	id := m[1]

	// post posts a form to the console as its page does, with the header
	// fields given (an empty one is left out).
	post := func(c *http.Client, path string, form url.Values, header map[string]string) *http.Response {
		req, _ := http.NewRequest("POST", site.base+path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range header {
			if v != "" {
				req.Header.Set(k, v)
			}
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	// signIn posts the sign-in form and returns the client with its
	// session and the page's CSRF token ("" when it was refused).
	signIn := func(form url.Values) (*http.Client, string) {
		jar, _ := cookiejar.New(nil)
		c := &http.Client{Jar: jar}
		resp := post(c, "/console/login", form, map[string]string{"Origin": site.base})
		defer resp.Body.Close()
		page := readAll(t, resp)
		if csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(page); csrf != nil {
			return c, csrf[1]
		}
		if !strings.Contains(page, "Unknown name or wrong password") {
			t.Fatalf("sign-in with %v: neither a session nor the refusal:\n%s", form.Get("name"), page)
		}
		return c, ""
	}
	decide := func(c *http.Client, origin, csrf string) int {
		c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		resp := post(c, "/console/decide", url.Values{"id": {id}, "decision": {"approve"}, "csrf": {csrf}},
			map[string]string{"Accept": "application/json", "Origin": origin})
		resp.Body.Close()
		return resp.StatusCode
	}

	for _, form := range []url.Values{
		{"token": {site.agent}}, {"token": {site.supervisor}}, // the old sign-in
		{"name": {"agent"}, "password": {site.agent}}, {"name": {"sue"}, "password": {site.supervisor}},
	} {
		c, csrf := signIn(form)
		if csrf != "" {
			t.Fatalf("an MCP token signed in to the console (%v)", form)
		}
		if got := decide(c, site.base, "x"); got != http.StatusUnauthorized {
			t.Errorf("approving after a refused sign-in with an MCP token: status %d, want 401", got)
		}
	}
	sue, csrf := signIn(url.Values{"name": {"sue"}, "password": {site.suePW}})
	if csrf == "" {
		t.Fatal("sue's own password does not sign in")
	}
	if got := decide(sue, "http://evil.example", csrf); got != http.StatusForbidden {
		t.Errorf("a supervisor's session posting from another origin: status %d, want 403", got)
	}
	if got := decide(sue, "", csrf); got != http.StatusForbidden {
		t.Errorf("a POST with neither Origin nor Referer: status %d, want 403", got)
	}
	if got := decide(sue, site.base, "forged"); got != http.StatusForbidden {
		t.Errorf("a POST with a wrong CSRF token: status %d, want 403", got)
	}
	if r, _ := agent.rawCall("do_set_fan_speed", map[string]any{"value": 50.0, "idempotency_key": "k1"}); r["status"] != "failed" {
		t.Fatalf("after the refused decisions the agent's call = %v, want still failed (waiting)", r)
	}

	// Sue asks herself (over MCP, with her token) and may not approve her
	// own request in the console.
	sc := mcpClient(t, site.url, site.supervisor)
	t.Cleanup(func() { sc.Close() })
	own := &session{t: t, c: sc}
	r2, _ := own.rawCall("do_set_fan_speed", map[string]any{"value": 48.0, "idempotency_key": "sue-1"})
	ownID := regexp.MustCompile(`request ([0-9A-F]+)`).FindStringSubmatch(r2["reason"].(string))[1]
	saved := id
	id = ownID
	if got := decide(sue, site.base, csrf); got != http.StatusForbidden {
		t.Errorf("sue approving her own request: status %d, want 403", got)
	}
	id = saved

	vic, _ := signIn(url.Values{"name": {"vic"}, "password": {site.vicPW}})
	resp, err := vic.Get(site.base + "/console/")
	if err != nil {
		t.Fatal(err)
	}
	if page := readAll(t, resp); strings.Contains(page, `value="approve"`) || !strings.Contains(page, "Waits for supervisor or admin") {
		t.Errorf("the viewer's page shows approve buttons, or does not say who decides")
	}

	if got := decide(sue, site.base, csrf); got != http.StatusSeeOther {
		t.Fatalf("sue approving the agent's request from the console's page: status %d, want 303", got)
	}
	if r, _ := agent.rawCall("do_set_fan_speed", map[string]any{"value": 50.0, "idempotency_key": "k1"}); r["status"] != "success" {
		t.Fatalf("the agent's call after sue approved = %v, want success", r)
	}
	if r, _ := agent.rawCall("do_set_fan_speed", map[string]any{"value": 50.0, "idempotency_key": "k1"}); r["status"] != "success" || r["replayed"] != true {
		t.Fatalf("the agent's retry of the approved call = %v, want the same success, replayed (not actuated twice)", r)
	}
	checkApprovedAndUsed(t, sue, site, id)
}

// checkApprovedAndUsed checks that request id, approved by sue and used by
// the agent, is shown so, and audited with the agent as the caller and sue
// as the approver.
func checkApprovedAndUsed(t *testing.T, sue *http.Client, site *consoleSite, id string) {
	t.Helper()
	resp, err := sue.Get(site.base + "/console/")
	if err != nil {
		t.Fatal(err)
	}
	page := readAll(t, resp)
	card := regexp.MustCompile(`(?s)id="r-` + id + `".*?</div>\s*</div>`).FindString(page)
	if !strings.Contains(card, `approved by <b class="approver">sue</b> (supervisor)`) || !strings.Contains(card, `used by <b class="user">agent</b> (operator)`) {
		t.Errorf("the request as sue's console shows it, want approved by sue (supervisor), used by agent (operator):\n%s", card)
	}
	var results int
	for _, line := range strings.Split(strings.TrimSpace(string(readFile(t, filepath.Join(site.state, "audit.jsonl")))), "\n") {
		var rec struct {
			Event, Caller, Role, Tool, Status string
			Approval                          *struct{ By, Method, ID string }
		}
		if json.Unmarshal([]byte(line), &rec) != nil || rec.Tool != "do_set_fan_speed" || rec.Approval == nil {
			continue
		}
		results++
		if rec.Caller != "agent" || rec.Role != "operator" || rec.Approval.By != "sue" || rec.Approval.Method != "out_of_band" || rec.Approval.ID != "console-"+id {
			t.Errorf("audit record %s: %s", rec.Event, line)
		}
	}
	if results != 2 {
		t.Errorf("%d audit records carry the approval, want 2 (attempt and result) naming agent as the caller and sue as the approver", results)
	}
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	var b strings.Builder
	if _, err := io.Copy(&b, resp.Body); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// rawCall calls a tool and returns its structured body without the
// provenance and schema checks of call (tools/list was not fetched).
func (s *session) rawCall(name string, args map[string]any) (map[string]any, bool) {
	s.t.Helper()
	res, err := s.c.CallTool(s.t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: args}})
	if err != nil {
		s.t.Fatalf("%s(%v): %v", name, args, err)
	}
	body, _ := res.StructuredContent.(map[string]any)
	if body == nil {
		s.t.Fatalf("%s(%v): no structured content", name, args)
	}
	return body, res.IsError
}

// Over real HTTP through the binary: with --console-secure-cookie the
// session cookie is Secure although the listener is plain HTTP (TLS ends at
// a proxy in front); after 5 failed sign-ins from an address the 6th, and
// even a good password, get 429 with Retry-After.
func TestConsoleLoginLimitAndSecureCookie(t *testing.T) {
	t.Parallel()
	site := startConsoleSite(t, "--console-secure-cookie")
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	login := func(password string) *http.Response {
		req, _ := http.NewRequest("POST", site.base+"/console/login", strings.NewReader(url.Values{"name": {"sue"}, "password": {password}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", site.base)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	resp := login(site.suePW)
	if ck := resp.Cookies(); resp.StatusCode != http.StatusSeeOther || len(ck) != 1 || !ck[0].Secure || !ck[0].HttpOnly {
		t.Fatalf("login with --console-secure-cookie over http: %d, cookies %+v; want 303 and one Secure HttpOnly cookie", resp.StatusCode, ck)
	}
	for i := range 5 {
		if resp := login("guess"); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/console/login?bad=1" {
			t.Fatalf("failed login %d: %d %v, want 303 back to the form", i+1, resp.StatusCode, resp.Header)
		}
	}
	for _, pw := range []string{"guess", site.suePW} {
		resp := login(pw)
		if ra, err := strconv.Atoi(resp.Header.Get("Retry-After")); resp.StatusCode != http.StatusTooManyRequests || err != nil || ra < 1 || ra > 60 || len(resp.Cookies()) != 0 {
			t.Fatalf("login after 5 failures: %d, Retry-After %q, cookies %v; want 429, Retry-After 1..60 s, no session",
				resp.StatusCode, resp.Header.Get("Retry-After"), resp.Cookies())
		}
	}
}

// --console is for --http, and its approvers must be declared roles; with
// --tokens it needs accounts of its own (--console-users), which need
// --console.
func TestConsoleFlags(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens.txt")
	if _, stderr, code := runCLI(t, "token", "add", "--tokens", tokens, "--name", "sue", "--role", "supervisor"); code != 0 {
		t.Fatalf("token add: %s", stderr)
	}
	_, stderr, code := runCLI(t, "serve", "--sim", "--manifest", greenhouse, "--http", "127.0.0.1:0", "--tokens", tokens, "--console")
	if code != 2 || !strings.Contains(stderr, "--console with --tokens needs --console-users FILE") || !strings.Contains(stderr, "console-user add") {
		t.Errorf("serve --console --tokens without accounts: exit %d, %q; want exit 2 saying it needs --console-users and how to make one", code, stderr)
	}
	_, stderr, code = runCLI(t, "serve", "--sim", "--manifest", greenhouse, "--http", "127.0.0.1:0", "--console-users", tokens)
	if code != 2 || !strings.Contains(stderr, "--console-users needs --console") {
		t.Errorf("serve --console-users without --console: exit %d, %q; want exit 2", code, stderr)
	}
	_, stderr, code = runCLI(t, "serve", "--sim", "--manifest", greenhouse, "--console")
	if code != 2 || !strings.Contains(stderr, "--console needs --http") {
		t.Errorf("serve --console over stdio: exit %d, %q; want exit 2 saying it needs --http", code, stderr)
	}
	_, stderr, code = runCLI(t, "serve", "--sim", "--manifest", greenhouse, "--http", "127.0.0.1:0", "--console", "--console-approvers", "supervsor")
	if code != 2 || !strings.Contains(stderr, `--console-approvers: role "supervsor" is not declared`) {
		t.Errorf("serve --console-approvers supervsor: exit %d, %q; want exit 2 naming the undeclared role", code, stderr)
	}
	_, stderr, code = runCLI(t, "serve", "--sim", "--manifest", greenhouse, "--http", "127.0.0.1:0", "--console-secure-cookie")
	if code != 2 || !strings.Contains(stderr, "--console-secure-cookie needs --console") {
		t.Errorf("serve --console-secure-cookie without --console: exit %d, %q; want exit 2 saying it needs --console", code, stderr)
	}
}
