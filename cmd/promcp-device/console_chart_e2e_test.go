package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The console's charts and manual control in a real browser, through the
// real binary: sue (supervisor) signs in; the site power's card draws its
// history as SVG, with the meter's implausible stretches shaded as
// degraded buckets; the range buttons switch to a day and the CSV link
// follows them, and the CSV holds the same buckets with their quality; she
// sets the fan by hand, which runs as her call through can_do and do_*
// and is audited with her name; a second set within the fan's cooldown is
// refused with the policy's reason in words, and the fan's card keeps its
// current value meanwhile. With PROMCP_DOCS_SCREENSHOT=FILE it saves the
// screenshot the README shows.
func TestConsoleChartsAndManualControlInChromium(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	site := startConsoleSite(t)
	err := chromedp.Do(ctx,
		chromedp.EmulateViewport(800, 1000),
		chromedp.Navigate(site.base+"/console/"),
		chromedp.WaitVisible(chromedp.CSS("#password")),
		chromedp.SendKeys(chromedp.CSS("#name"), "sue"),
		chromedp.SendKeys(chromedp.CSS("#password"), site.suePW),
		chromedp.Click(chromedp.CSS("#login")),
		chromedp.WaitVisible(chromedp.CSS("#values")),
	)
	if err != nil {
		t.Fatalf("logging in: %v", err)
	}
	if clk := textOf(t, ctx, "#live-status"); !regexp.MustCompile(`^live · \d\d:\d\d:\d\d \S+$`).MatchString(clk) {
		t.Errorf("header clock = %q, want live · HH:MM:SS ZONE (24-hour, with the zone)", clk)
	}
	chart := `document.querySelector('.chart[data-cap="site_power"]')`
	waitJS(t, ctx, "the site power's chart", chart+` && `+chart+`.querySelector("svg path.line") !== null`)
	// The meter is implausible for 5 s of every 10 from 6 s on: once a
	// minute's bucket holds such a stretch the chart shades it. The chart
	// is fetched again every 30 s, or when a range is chosen.
	waitJS(t, ctx, "the meter's first fault to pass", `document.querySelector("#v-read_site_power .q").innerText === "degraded"`)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`button.range[data-cap="site_power"][data-range="1h"]`))); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, "a degraded bucket on the chart", chart+`.getAttribute("data-bad") >= 1 && `+chart+`.querySelector("rect.qb.q-degraded") !== null`)
	label, _ := chromedp.Run(ctx, chromedp.Evaluate[string](chart+`.querySelector("svg").getAttribute("aria-label")`))
	t.Logf("site power chart: %s", label)
	if shot := os.Getenv("PROMCP_CHART_SCREENSHOT"); shot != "" {
		png, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS("#values")))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(shot, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot %s (%d bytes)", shot, len(png))
	}

	// A day: the chart and the CSV link follow the range.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`button.range[data-cap="site_power"][data-range="24h"]`))); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, "the day's chart", chart+`.getAttribute("data-range") === "24h" && document.querySelector('a.csv[data-cap="site_power"]').href.endsWith("range=24h")`)
	csv, err := chromedp.Run(ctx, chromedp.Evaluate[string](`fetch(document.querySelector('a.csv[data-cap="site_power"]').href.replace("24h", "1h")).then(r => r.text())`,
		chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(csv, "start,capability,mean,unit,quality,samples,good,stale,degraded,error\n") || !strings.Contains(csv, ",site_power,") || !strings.Contains(csv, ",W,degraded,") {
		t.Errorf("CSV of the site power's last hour:\n%s\nwant the header and a degraded bucket in W", csv)
	}

	// Manual control: sue sets the fan to 20 Hz as herself.
	set := func(v string) string {
		t.Helper()
		_, err := chromedp.Run(ctx, chromedp.Evaluate[string](`window.promcpBefore = "set"`))
		if err == nil {
			err = chromedp.Do(ctx,
				chromedp.SetValue(chromedp.CSS(`#a-do_set_fan_speed input[name=value]`), v),
				chromedp.Click(chromedp.CSS(`#a-do_set_fan_speed button.set-button`)))
		}
		if err != nil {
			t.Fatalf("setting the fan to %s: %v", v, err)
		}
		// The form posts and the console loads again with the outcome.
		waitAcrossNavigation(t, ctx, "the outcome of setting the fan to "+v, `window.promcpBefore === undefined && document.readyState === "complete" && document.querySelector("#flash") !== null`)
		return textOf(t, ctx, "#flash")
	}
	if f := set("20"); !strings.Contains(f, "do_set_fan_speed to 20 Hz: done by sue (applied 20 Hz)") {
		t.Fatalf("after setting the fan to 20: %q", f)
	}
	if f := set("25"); !regexp.MustCompile(`do_set_fan_speed to 25 Hz refused by the policy \(cooldown_active: cooldown of 5 min after the last actuation at \d\d:\d\d:\d\d \S+ is active for \d+ min( \d+ s)? more\)`).MatchString(f) {
		t.Errorf("setting the fan again within its cooldown: %q, want refused with the cooldown in words", f)
	}
	waitJS(t, ctx, "the fan card to show its value during the cooldown", `document.querySelector("#a-do_set_fan_speed .current").innerText === "20 Hz"`)
	if st := textOf(t, ctx, "#a-do_set_fan_speed"); strings.Contains(st, "T") && regexp.MustCompile(`\d{4}-\d\d-\d\dT`).MatchString(st) {
		t.Errorf("the fan card shows a raw timestamp: %q", st)
	}
	if p := textOf(t, ctx, "#a-do_set_fan_speed .rules"); !strings.Contains(p, "a person approves above 45 Hz") {
		t.Errorf("the fan's policy line = %q, want the approval limit with its unit", p)
	}
	if h := textOf(t, ctx, "#health"); !strings.Contains(h, "rs485") || !strings.Contains(h, "fan_vfd") {
		t.Errorf("health view = %q, want the rs485 bus and the fan_vfd device", h)
	}
	if g := textOf(t, ctx, "#values .group"); g == "" {
		t.Errorf("no location group in the values")
	}

	var calls int
	for _, line := range strings.Split(strings.TrimSpace(string(readFile(t, filepath.Join(site.state, "audit.jsonl")))), "\n") {
		var rec struct{ Event, Caller, Role, Tool, Status, Permission string }
		if json.Unmarshal([]byte(line), &rec) != nil || rec.Tool != "do_set_fan_speed" || rec.Caller != "sue" {
			continue
		}
		calls++
		if rec.Role != "supervisor" {
			t.Errorf("sue's manual set audited as %+v, want role supervisor", rec)
		}
	}
	if calls < 2 {
		t.Errorf("%d audit records of sue's do_set_fan_speed, want the attempt and the result at least", calls)
	}
}

// waitAcrossNavigation is waitJS for a condition that holds on the page a
// navigation loads: a poll that the navigation cuts short is started
// again on the new page.
func waitAcrossNavigation(t *testing.T, ctx context.Context, what, js string) {
	t.Helper()
	var err error
	for range 5 {
		if _, err = chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(60*time.Second))); err == nil {
			return
		}
	}
	t.Fatalf("waiting for %s: %v", what, err)
}

// TestConsoleScreenshotForDocs makes the screenshot the README shows
// (docs/console-chart.png), when PROMCP_DOCS_SCREENSHOT names the file: the
// greenhouse at 20 simulated seconds a real second, so that its charts
// hold 25 minutes of history, with the meter's implausible readings of
// the first minutes shaded as degraded buckets.
func TestConsoleScreenshotForDocs(t *testing.T) {
	out := os.Getenv("PROMCP_DOCS_SCREENSHOT")
	if out == "" {
		t.Skip("PROMCP_DOCS_SCREENSHOT=FILE makes the README's screenshot")
	}
	ctx := browser(t)
	site := startConsoleSite(t, "--time-scale", "20")
	if err := chromedp.Do(ctx,
		chromedp.EmulateViewport(800, 1250),
		chromedp.Navigate(site.base+"/console/"),
		chromedp.WaitVisible(chromedp.CSS("#password")),
		chromedp.SendKeys(chromedp.CSS("#name"), "sue"),
		chromedp.SendKeys(chromedp.CSS("#password"), site.suePW),
		chromedp.Click(chromedp.CSS("#login")),
		chromedp.WaitVisible(chromedp.CSS("#values")),
	); err != nil {
		t.Fatal(err)
	}
	// Each poll asks for the last hour again, until it holds 25 buckets.
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`(document.querySelectorAll("button.range[data-range='1h']").forEach(b => b.click()),
		document.querySelector('.chart[data-cap="site_power"]').getAttribute("data-buckets") >= 25)`,
		chromedp.WithPollingInterval(2*time.Second), chromedp.WithPollingTimeout(2*time.Minute))); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#v-read_fan_running").scrollIntoView(); ""`)); err != nil {
		t.Fatal(err)
	}
	shot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s (%d bytes)", out, len(shot))
}

// Setting an actuator from the console obeys the same checks as approving
// and the same policy as an agent, through the binary over plain HTTP: a
// POST from another origin or with a wrong CSRF token is refused (403) and
// sets nothing; vic (viewer) is refused with the policy's reason
// (permission_insufficient); sue's value above the approval limit is not
// applied but waits on the desk as her own request (somebody else
// approves it), and is audited as hers.
func TestConsoleManualSetObeysPolicy(t *testing.T) {
	t.Parallel()
	site := startConsoleSite(t)
	signIn := func(name, pw string) (*http.Client, string) {
		jar, _ := cookiejar.New(nil)
		c := &http.Client{Jar: jar}
		req, _ := http.NewRequest("POST", site.base+"/console/login", strings.NewReader(url.Values{"name": {name}, "password": {pw}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", site.base)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		page := readAll(t, resp)
		resp.Body.Close()
		m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(page)
		if m == nil {
			t.Fatalf("%s did not sign in", name)
		}
		return c, m[1]
	}
	set := func(c *http.Client, origin, csrf, value string) (int, string) {
		req, _ := http.NewRequest("POST", site.base+"/console/set", strings.NewReader(url.Values{"tool": {"do_set_fan_speed"}, "value": {value}, "csrf": {csrf}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", origin)
		c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		loc, _ := url.Parse(resp.Header.Get("Location"))
		if loc != nil {
			return resp.StatusCode, loc.Query().Get("done")
		}
		return resp.StatusCode, readAll(t, resp)
	}
	sue, sueCSRF := signIn("sue", site.suePW)
	vic, vicCSRF := signIn("vic", site.vicPW)
	if code, _ := set(sue, "http://evil.example", sueCSRF, "20"); code != http.StatusForbidden {
		t.Errorf("a set from another origin: %d, want 403", code)
	}
	if code, _ := set(sue, site.base, "forged", "20"); code != http.StatusForbidden {
		t.Errorf("a set with a wrong CSRF token: %d, want 403", code)
	}
	if code, msg := set(vic, site.base, vicCSRF, "20"); code != http.StatusSeeOther || !strings.Contains(msg, "refused by the policy (permission_insufficient") {
		t.Errorf("vic (viewer) setting the fan: %d %q, want refused with permission_insufficient", code, msg)
	}
	code, msg := set(sue, site.base, sueCSRF, "48")
	if code != http.StatusSeeOther || !strings.Contains(msg, "requires_human_approval") || !strings.Contains(msg, "operator console as request") {
		t.Fatalf("sue setting the fan to 48 (above 45): %d %q, want it waiting for somebody else's approval", code, msg)
	}
	agent := site.agentSession(t)
	if r, _ := agent.rawCall("read_fan_speed_setpoint", map[string]any{}); r["value"] != 0.0 {
		t.Errorf("after the refused and waiting sets the setpoint is %v, want 0 (nothing applied)", r["value"])
	}
	var refusals, sets int
	for _, line := range strings.Split(strings.TrimSpace(string(readFile(t, filepath.Join(site.state, "audit.jsonl")))), "\n") {
		var rec struct{ Caller, Tool, Permission string }
		if json.Unmarshal([]byte(line), &rec) != nil || rec.Tool != "do_set_fan_speed" {
			continue
		}
		if rec.Caller == "vic" {
			refusals++
		}
		if rec.Caller == "sue" && rec.Permission == "requires_human_approval" {
			sets++
		}
	}
	if refusals != 0 || sets == 0 {
		t.Errorf("audit: %d records of vic's set (refused by can_do, never called), %d of sue's waiting set; want 0 and at least 1", refusals, sets)
	}
}
