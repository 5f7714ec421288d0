package gateway_test

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/promcp/promcp-device/gateway/gatewaytest"
	"github.com/promcp/promcp-device/server"
)

// groupTools serves the capabilities names as a tool group of b and
// returns the group's server and its tool names.
func groupTools(t *testing.T, b *bench, names ...string) (*server.Server, []string) {
	t.Helper()
	grp, err := b.Server.Surface("bench/group", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Gateway.ServeGroup(grp, names); err != nil {
		t.Fatal(err)
	}
	var tools []string
	for _, tl := range grp.Tools() {
		tools = append(tools, tl.MCP.Name)
	}
	return grp, tools
}

// TestGroupServesItsJobs (issue 23, item 8): a tool group that holds every
// capability of a job serves the job's start_*, read_status_* and
// do_cancel_*, and its can_do answers for the job; a group that misses one
// of them serves none of the job's tools. A job started through the group
// is the gateway's job: it holds, reports and cancels there.
func TestGroupServesItsJobs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newJobsBench(t)
		_, pumpOnly := groupTools(t, b, "pump")
		if !slices.Contains(pumpOnly, "start_dry_pump") || slices.Contains(pumpOnly, "start_water") {
			t.Fatalf("group [pump] serves %v; want dry_pump's tools (pump only) and not water's (valve and pump)", pumpOnly)
		}
		grp, tools := groupTools(t, b, "valve", "pump")
		for _, want := range []string{"start_water", "read_status_water", "do_cancel_water", "start_dry_pump", "read_status_dry_pump", "do_cancel_dry_pump"} {
			if !slices.Contains(tools, want) {
				t.Errorf("group [valve, pump] serves %v; want %s", tools, want)
			}
		}
		_, heater := groupTools(t, b, "heater")
		if slices.ContainsFunc(heater, func(n string) bool { return n != "read_heater" && n != "do_set_heater" && n != "can_do" }) {
			t.Errorf("group [heater] serves %v; want no job's tools", heater)
		}

		c := gatewaytest.Connect(t, grp)
		cd := bodyOf(t, c, "can_do", map[string]any{"intent": map[string]any{"action": "start_water"}})
		if cands, _ := cd["candidates"].([]any); len(cands) != 1 || cands[0].(map[string]any)["capability"] != "start_water" {
			t.Fatalf("group can_do start_water = %v; want start_water a candidate", cd)
		}
		r := bodyOf(t, c, "start_water", map[string]any{})
		id, _ := r["job_id"].(string)
		if r["status"] != "success" || id == "" {
			t.Fatalf("start_water through the group = %v", r)
		}
		waitOn(t, b.clk, 1)
		if st := bodyOf(t, c, "read_status_water", map[string]any{"job_id": id}); st["value"].(map[string]any)["state"] != "running" {
			t.Fatalf("read_status_water through the group = %v; want running", st)
		}
		if v := bodyOf(t, c, "read_valve", map[string]any{"max_age_ms": 0}); v["value"] != true {
			t.Fatalf("read_valve = %v; want the job's first step applied", v)
		}
		if r := bodyOf(t, c, "do_cancel_water", map[string]any{"value": id}); r["status"] != "success" {
			t.Fatalf("do_cancel_water through the group = %v", r)
		}
		b.clk.Advance(time.Second)
		synctest.Wait()
		if v := bodyOf(t, c, "read_valve", map[string]any{"max_age_ms": 0}); v["value"] != false {
			t.Fatalf("read_valve after the cancel = %v; want restored to false", v)
		}
	})
}
