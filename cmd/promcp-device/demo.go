package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/server"
)

// cmdDemo walks the proMCP orchestration pattern (plan, observe, act,
// verify) on the simulated greenhouse with a real MCP client in process,
// then tries the unsafe shortcuts an agent might take and shows how the
// server refuses each. Simulated time is driven by the demo, so the run is
// the same every time.
func cmdDemo(c *cli) int {
	manifest := c.String("manifest", "manifests/examples/greenhouse.yml", "the manifest `FILE` (its policy is loaded): the greenhouse gets the full script, any other a can_do → read → do → read session on its first actuator")
	start := c.String("start", "2026-11-30T12:00:00+01:00", "the simulated clock's start `TIME` (RFC 3339)")
	if !c.parse() {
		return 2
	}
	t0, err := time.Parse(time.RFC3339, *start)
	if err != nil {
		return c.usage("--start %q: want RFC 3339", *start)
	}
	m := c.load(*manifest)
	if m == nil {
		return 1
	}
	if !hasGreenhouseTools(m) {
		return demoSession(c, m, *manifest, t0)
	}
	pc, err := resolvePolicy(*manifest, "", m)
	pol := pc.policy
	if err != nil {
		fmt.Fprintln(c.stderr, err)
		return 1
	}
	clk := clock.NewManual(t0)
	gw, err := openGateway(c.ctx, m, gatewayOptions{simulate: true, clock: clk, policy: pol}, slog.New(slog.DiscardHandler))
	if err != nil {
		return c.fail(err)
	}
	defer gw.Close()
	ctx, stdout := c.ctx, c.stdout
	mc, err := client.NewInProcessClient(gw.srv.MCP())
	if err == nil {
		err = mc.Start(ctx)
	}
	if err == nil {
		_, err = mc.Initialize(ctx, mcp.InitializeRequest{})
	}
	if err != nil {
		return c.fail(err)
	}
	defer mc.Close()

	d := &demo{ctx: ctx, c: mc, clk: clk, out: stdout, tools: map[string]bool{}}
	list, err := mc.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		return c.fail(err)
	}
	var names []string
	for _, t := range list.Tools {
		d.tools[t.Name] = true
		names = append(names, t.Name)
	}
	sort.Strings(names)
	fmt.Fprintf(stdout, "promcp-device demo: %s on the simulator, %s (times below in that zone), policy %s\n", m.Gateway, t0.Format("Mon 2006-01-02 15:04 -07:00"), policyName(pol))
	fmt.Fprintf(stdout, "tools: %s\n", strings.Join(names, ", "))
	d.script()
	if d.failed {
		return 1
	}
	return 0
}

func policyName(p *manifests.Policy) string {
	if p == nil {
		return "none"
	}
	return p.File
}

type demo struct {
	ctx    context.Context
	c      *client.Client
	clk    *clock.Manual
	out    io.Writer
	tools  map[string]bool
	failed bool
}

func (d *demo) section(title string) { fmt.Fprintf(d.out, "\n== %s\n", title) }

func (d *demo) advance(dur time.Duration) {
	d.clk.Advance(dur)
	fmt.Fprintf(d.out, "   … %s pass (simulated clock now %s)\n", dur, d.clk.Now().Format("15:04"))
}

// call makes one tool call as role ("" for the default) and prints it.
func (d *demo) call(role, name string, args map[string]any) map[string]any {
	ctx := d.ctx
	who := ""
	if role != "" {
		ctx = server.WithCaller(ctx, server.Caller{Name: "demo", Role: role})
		who = " [as " + role + "]"
	}
	a, _ := json.Marshal(args)
	fmt.Fprintf(d.out, "→ %s %s%s\n", name, a, who)
	res, err := d.c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: args}})
	if err != nil {
		fmt.Fprintf(d.out, "← error: %v\n", err)
		d.failed = true
		return nil
	}
	var body map[string]any
	b, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(b, &body)
	fmt.Fprintf(d.out, "← %s\n", summarize(name, body, d.clk.Now().Location()))
	return body
}

// expect notes a result that differs from what the demo shows.
func (d *demo) expect(ok bool, what string) {
	if !ok {
		fmt.Fprintf(d.out, "   !! unexpected: %s\n", what)
		d.failed = true
	}
}

func (d *demo) script() {
	d.section("1. plan: ask can_do before acting")
	rep := d.call("", "can_do", map[string]any{"intent": map[string]any{
		"semantic_tags": []string{"heating"}, "action": "turn on heater", "location": "zone1", "value": true}})
	d.expect(rep["feasible"] == true, "heating should be feasible")

	d.section("2. observe: read what the decision needs (parallelizable)")
	before := d.call("", "read_temperature_zone1", map[string]any{})
	d.call("", "read_vent", map[string]any{})

	d.section("3. act: once, with an idempotency key")
	on := d.call("", "do_set_heater", map[string]any{"value": true, "idempotency_key": "demo-heat-1"})
	d.expect(on["status"] == "success", "the heater should switch on")

	d.section("4. verify: read the post-state")
	d.advance(10 * time.Minute)
	d.call("", "read_heater", map[string]any{})
	after := d.call("", "read_temperature_zone1", map[string]any{})
	t0, _ := before["value"].(float64)
	t1, _ := after["value"].(float64)
	d.expect(t1 > t0, "zone1 should be warmer with the heater on")

	d.section("5. the shortcuts an agent might take, and the server's answers")
	fmt.Fprintln(d.out, "a retry with the same key returns the first result and does not actuate:")
	again := d.call("", "do_set_heater", map[string]any{"value": true, "idempotency_key": "demo-heat-1"})
	d.expect(again["replayed"] == true, "the retry should be replayed")
	fmt.Fprintln(d.out, "the same key for another action is refused:")
	d.call("", "do_set_heater", map[string]any{"value": false, "idempotency_key": "demo-heat-1"})
	fmt.Fprintln(d.out, "a viewer may look but not act:")
	v := d.call("viewer", "do_set_vent", map[string]any{"value": true})
	d.expect(v["permission"] == "permission_insufficient", "a viewer should be refused")
	fmt.Fprintln(d.out, "with the heater on, the interlock refuses opening the vent:")
	rev := d.call("", "do_set_vent", map[string]any{"value": true})
	d.expect(rev["permission"] == "policy_denied", "the interlock should refuse opening the vent with the heater on")
	fmt.Fprintln(d.out, "switching the heater off stays allowed:")
	off := d.call("", "do_set_heater", map[string]any{"value": false})
	d.expect(off["status"] == "success", "switching the heater off should be allowed")
	fmt.Fprintln(d.out, "open the vent, then try to heat: the interlock refuses the other way too, without can_do:")
	d.call("", "do_set_vent", map[string]any{"value": true})
	il := d.call("", "do_set_heater", map[string]any{"value": true, "idempotency_key": "demo-heat-2"})
	d.expect(il["permission"] == "policy_denied", "the interlock should refuse heating with the vent open")
	d.call("", "do_set_vent", map[string]any{"value": false})
	if d.tools["do_set_fan_speed"] {
		d.fan()
	}
	fmt.Fprintln(d.out, "at night the vent may not be opened; can_do says until when:")
	d.advance(d.untilLocal(23, 0))
	d.call("", "can_do", map[string]any{"intent": map[string]any{"action": "do_set_vent", "value": true}})
	night := d.call("", "do_set_vent", map[string]any{"value": true})
	d.expect(night["permission"] == "policy_denied", "the vent should be refused at night")
	fmt.Fprintln(d.out, "closing it stays allowed at night:")
	d.call("", "do_set_vent", map[string]any{"value": false})
	fmt.Fprintln(d.out, "a value of the wrong type never reaches a pin:")
	d.call("", "do_set_vent", map[string]any{"value": "wide open"})
}

// fan shows the fan's range guard, approval threshold and cooldown.
func (d *demo) fan() {
	fmt.Fprintln(d.out, "a fan speed outside 0..50 Hz is refused before any bus is touched:")
	oor := d.call("", "do_set_fan_speed", map[string]any{"value": 60})
	d.expect(oor["permission"] == "out_of_range", "60 Hz should be out of range")
	fmt.Fprintln(d.out, "above 45 Hz (90 % of full speed) a human must approve, out of band (an answer through the client would not count):")
	ap := d.call("", "do_set_fan_speed", map[string]any{"value": 48})
	d.expect(ap["permission"] == "requires_human_approval", "48 Hz should need approval")
	d.call("", "do_set_fan_speed", map[string]any{"value": 30})
	fmt.Fprintln(d.out, "the fan's cooldown refuses a second change right away, and says when it ends:")
	d.call("", "can_do", map[string]any{"intent": map[string]any{"action": "do_set_fan_speed", "value": 20}})
	cd := d.call("", "do_set_fan_speed", map[string]any{"value": 20})
	d.expect(cd["permission"] == "cooldown_active", "the cooldown should refuse")
	d.advance(5 * time.Minute)
	fmt.Fprintln(d.out, "once the cooldown is over, the change goes through:")
	ok := d.call("", "do_set_fan_speed", map[string]any{"value": 20})
	d.expect(ok["status"] == "success", "after the cooldown the change should succeed")
}

// untilLocal returns the duration until the next hh:mm on the clock's day.
func (d *demo) untilLocal(hh, mm int) time.Duration {
	now := d.clk.Now()
	t := time.Date(now.Year(), now.Month(), now.Day(), hh, mm, 0, 0, now.Location())
	if !t.After(now) {
		t = t.AddDate(0, 0, 1)
	}
	return t.Sub(now)
}

// summarize prints the fields of a result a person reads first.
func summarize(tool string, b map[string]any, loc *time.Location) string {
	if b == nil {
		return "no result"
	}
	str := func(k string) string {
		v, ok := b[k]
		if !ok || v == nil {
			return "null"
		}
		j, _ := json.Marshal(v)
		return string(j)
	}
	switch {
	case tool == "can_do":
		var parts []string
		for _, e := range b["candidates"].([]any) {
			c := e.(map[string]any)
			parts = append(parts, fmt.Sprintf("candidate %s %s (confidence %v, valid until %s)", c["capability"], c["permission"], c["confidence"], hhmmss(c["valid_until"], loc)))
		}
		for _, e := range b["blocked"].([]any) {
			c := e.(map[string]any)
			until := ""
			if c["valid_until"] != nil {
				until = ", may clear at " + hhmmss(c["valid_until"], loc)
			}
			parts = append(parts, fmt.Sprintf("blocked %s %s: %s%s", c["capability"], c["permission"], c["reason"], until))
		}
		if len(parts) == 0 {
			parts = append(parts, "nothing matches")
		}
		return fmt.Sprintf("feasible=%v; %s", b["feasible"], strings.Join(parts, "; "))
	case strings.HasPrefix(tool, "read_"):
		s := fmt.Sprintf("value=%s unit=%s quality=%s at %s", str("value"), str("unit"), b["quality"], hhmmss(b["timestamp"], loc))
		if r, ok := b["quality_reason"]; ok {
			s += fmt.Sprintf(" (%v)", r)
		}
		return s
	}
	s := fmt.Sprintf("status=%v %s → %s", b["status"], str("previous_value"), str("applied_value"))
	if b["replayed"] == true {
		s += " replayed (nothing actuated)"
	}
	if p, ok := b["permission"]; ok {
		s += fmt.Sprintf(" permission=%v", p)
	}
	if e, ok := b["error"].(map[string]any); ok {
		s += fmt.Sprintf(" error=%v: %v", e["code"], e["message"])
	} else if r, ok := b["reason"]; ok {
		s += fmt.Sprintf(" reason=%v", r)
	}
	if h, ok := b["compensation_hint"].(string); ok {
		s += fmt.Sprintf(" (undo: %s)", h)
	}
	return s
}

func hhmmss(v any, loc *time.Location) string {
	s, _ := v.(string)
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return s
	}
	return t.In(loc).Format("15:04:05")
}
