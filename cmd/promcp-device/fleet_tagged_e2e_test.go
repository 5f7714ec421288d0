package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/promcp/promcp-device/internal/testnet"
)

// The README's three-gateway fleet, run by the real binary built with
// -tags natsserver: three `hub --fleet` members and two edge gateways
// (embedded leaf servers) plus a thin-edge one, on loopback with free
// ports. A real MCP client on hub1's fleet endpoint and on the gateways'
// own endpoints checks the fleet can_do, routed calls, a shared cooldown
// race, the loss and return of an edge gateway, and the loss of two hub
// members (partition_no_quorum for shared actions, local ones still run).
func TestFleetTaggedThroughTheBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the binary with -tags natsserver and runs a six-process fleet (~1-2 min)")
	}
	// Its build and the fleet's start-up (the hub electing its JetStream
	// leaders) are mostly waiting: it runs beside the other parallel tests.
	t.Parallel()
	f := &taggedFleet{bin: buildTagged(t), dir: t.TempDir(), start: time.Now()}
	f.writeFiles(t)
	f.startAll(t)
	root := httpSession(t, f.fleetURL, mcp.LATEST_PROTOCOL_VERSION)
	f.canDo(t, root)
	f.routed(t)
	f.sharedRace(t)
	f.edgeLoss(t, root)
	f.revoke(t, root)
	f.hubLoss(t)
	t.Logf("whole fleet test %v", time.Since(f.start).Round(time.Millisecond))
}

// taggedFleet is the README's fleet run by the tagged binary.
type taggedFleet struct {
	bin, dir, pol string
	start         time.Time
	hubFiles      [3]string
	hubLogs       [3]func() string
	gwFiles       map[string]string
	hubs          [3]*proc
	gws           map[string]*proc
	gwURL         map[string]string
	own           map[string]*session // each gateway's own endpoint
	fleetURL      string              // hub1's fleet endpoint
	state         bool                // the gateways keep --state (an audit log the edges forward to FLEET_AUDIT)
}

var heaterOff = map[string]any{"intent": map[string]any{"action": "do_set_heater", "value": false}}

func (f *taggedFleet) write(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(f.dir, name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// writeFiles writes the hub members' and gateways' fleet files (free
// ports: client, cluster and leaf for each member) and the policy.
func (f *taggedFleet) writeFiles(t *testing.T) {
	var client, cluster, leaf [3]string
	for i := range 3 {
		client[i], cluster[i], leaf[i] = testnet.FreeAddr(t), testnet.FreeAddr(t), testnet.FreeAddr(t)
	}
	// The fleet's keys and certificates, as the README makes them: every
	// link on TLS, every node with its own nkey and permissions.
	if out, err := exec.Command(f.bin, "fleet", "init", filepath.Join(f.dir, "fleet"), "--hubs", "hub1,hub2,hub3",
		"--gateways", "gw1,gw2,gw3").CombinedOutput(); err != nil {
		t.Fatalf("fleet init: %v\n%s", err, out)
	}
	for i := range 3 {
		var peers []string
		for j := range 3 {
			if j != i {
				peers = append(peers, `"nats://`+cluster[j]+`"`)
			}
		}
		f.hubFiles[i] = f.write(t, fmt.Sprintf("hub%d.yml", i+1), fmt.Sprintf(`version: 1
role: hub
gateway: hub%[1]d
identity: fleet/hub%[1]d/hub%[1]d.nk
ca: fleet/ca.crt
cert: fleet/hub%[1]d/hub%[1]d.crt
key: fleet/hub%[1]d/hub%[1]d.key
identities: fleet/identities
listen: {client: %s, cluster: %s, leaf: %s}
cluster: {name: hub, peers: [%s]}
store: %s
http: 127.0.0.1:0
leaf_ping: {interval: 1s, max_missed: 2}
can_do_budget: 500ms
`, i+1, client[i], cluster[i], leaf[i], strings.Join(peers, ", "), filepath.Join(f.dir, fmt.Sprintf("hub%d", i+1))))
	}
	// The greenhouse's policy: the fans are one piece of equipment for
	// the whole fleet (shared: site_fans, one cooldown record for every
	// gateway), the heater is shared (each gateway's own record), the vent
	// stays local.
	f.pol = f.write(t, "greenhouse.policy.yml", `version: 1
roles: [viewer, operator, supervisor, admin]
actions:
  do_set_fan_speed:
    shared: site_fans
    cooldown: 5m
  do_set_heater:
    shared: true
  do_set_vent:
    roles: [operator, supervisor, admin]
`)
	edge := func(gw, zone string, order ...int) string {
		var urls []string
		for _, i := range order {
			urls = append(urls, "nats://"+leaf[i])
		}
		return f.write(t, gw+".yml", fmt.Sprintf("version: 1\nrole: edge\ngateway: %[1]s\nidentity: fleet/%[1]s/%[1]s.nk\nca: fleet/%[1]s/ca.crt\nzone: %[2]s\nhubs: [%[3]s]\nstore: %[4]s\nleaf_ping: {interval: 1s, max_missed: 2}\n",
			gw, zone, strings.Join(urls, ", "), filepath.Join(f.dir, gw)))
	}
	f.gwFiles = map[string]string{
		"gw1": edge("gw1", "north", 0, 1, 2),
		"gw2": edge("gw2", "south", 1, 2, 0),
		"gw3": f.write(t, "gw3.yml", fmt.Sprintf("version: 1\nrole: thin-edge\ngateway: gw3\nidentity: fleet/gw3/gw3.nk\nca: fleet/gw3/ca.crt\nzone: south\nhubs: [nats://%s, nats://%s, nats://%s]\n",
			client[2], client[0], client[1])),
	}
}

func (f *taggedFleet) gwArgs(gw string) []string {
	args := []string{"serve", "--sim", "--manifest", greenhouse, "--policy", f.pol, "--http", "127.0.0.1:0", "--log-level", "error", "--fleet", f.gwFiles[gw]}
	if f.state {
		args = append(args, "--state", filepath.Join(f.dir, gw+"-state"))
	}
	return args
}

// startAll starts the three hub members together (each waits for the
// others' JetStream), then the gateways.
func (f *taggedFleet) startAll(t *testing.T) {
	for i := range 3 {
		var stderr *os.File
		stderr, f.hubLogs[i] = logFile(t)
		f.hubs[i] = startProc(t, os.Interrupt, stderr, f.bin, `fleet endpoint .* on (http://\S+/mcp)`, "hub", "--fleet", f.hubFiles[i], "--log-level", "error")
	}
	for i := range 3 {
		if u := f.hubs[i].addr(t, 90*time.Second); i == 0 {
			f.fleetURL = u
		}
	}
	f.gws, f.gwURL, f.own = map[string]*proc{}, map[string]string{}, map[string]*session{}
	for _, gw := range []string{"gw1", "gw2", "gw3"} {
		f.gws[gw] = startProc(t, os.Interrupt, nil, f.bin, `on (http://\S+/mcp)`, f.gwArgs(gw)...)
	}
	for _, gw := range []string{"gw1", "gw2", "gw3"} {
		f.gwURL[gw] = f.gws[gw].addr(t, 60*time.Second)
		f.own[gw] = httpSession(t, f.gwURL[gw], mcp.LATEST_PROTOCOL_VERSION)
	}
	t.Logf("fleet up (3 hub members, 3 gateways) in %v", time.Since(f.start).Round(time.Millisecond))
}

// 1. can_do over the fleet names candidates of every gateway.
func (f *taggedFleet) canDo(t *testing.T, root *session) {
	rep := waitCanDo(t, root, heaterOff, "all three gateways answer", func(r map[string]any) bool {
		m, _ := r["metadata"].(map[string]any)
		return m["responses_received"] == 3.0
	})
	meta := rep["metadata"].(map[string]any)
	if meta["coordinator_node"] != "hub1" || meta["peers_consulted"] != 3.0 || meta["mesh_size_estimate"] != 3.0 ||
		meta["partition_state"] != "healthy" || meta["responses_dropped_late"] == nil {
		t.Errorf("fleet can_do metadata = %v", meta)
	}
	sources := candidateSources(rep)
	for _, gw := range []string{"gw1", "gw2", "gw3"} {
		if !sources[gw+"/heater_relay"] {
			t.Errorf("fleet can_do: no candidate from %s/heater_relay in %v", gw, sources)
		}
	}
	t.Logf("fleet can_do over 3 gateways answered at %v", time.Since(f.start).Round(time.Millisecond))
}

// 2. A routed read and a routed do_*; the same key replays.
func (f *taggedFleet) routed(t *testing.T) {
	base := strings.TrimSuffix(f.fleetURL, "/mcp")
	if body, isErr := groupWith(t, base, "gw2", "read_gw2_temperature_zone1").call("read_gw2_temperature_zone1", nil); isErr || body["quality"] == "error" {
		t.Errorf("routed read_gw2_temperature_zone1 = %v", body)
	}
	g2 := groupWith(t, base, "gw2", "do_gw2_set_heater")
	args := map[string]any{"value": false, "idempotency_key": "tagged-e2e-1"}
	first, _ := g2.call("do_gw2_set_heater", args)
	again, _ := g2.call("do_gw2_set_heater", args)
	if first["status"] != "success" || again["status"] != "success" || again["replayed"] != true {
		t.Errorf("routed do_gw2_set_heater: %v, then %v", first, again)
	}
}

// 3. Equipment shared by every gateway (shared: site_fans): gw1's own
// endpoint and gw2 through the fleet race for it, exactly one wins; gw3,
// on its own endpoint, then finds the cooldown the winner started.
func (f *taggedFleet) sharedRace(t *testing.T) {
	base := strings.TrimSuffix(f.fleetURL, "/mcp")
	routed := groupWith(t, base, "gw2", "do_gw2_set_fan_speed")
	got := raceTwo(t, f.own["gw1"], "do_set_fan_speed", routed, "do_gw2_set_fan_speed", 20)
	if got["success"] != 1 || got["cooldown_active"] != 1 {
		t.Errorf("do_set_fan_speed raced on gw1's endpoint and routed to gw2: %v; want one success, one cooldown_active", got)
	}
	body, err := callTool(t, f.own["gw3"].c, "do_set_fan_speed", map[string]any{"value": 30.0})
	if err != nil {
		t.Fatal(err)
	}
	if body["permission"] != "cooldown_active" {
		t.Errorf("gw3's do_set_fan_speed after the race: %v; want cooldown_active (one record for the site's fans)", body)
	}
}

// 4. An edge gateway killed: reported source_unreachable; restarted: back.
func (f *taggedFleet) edgeLoss(t *testing.T, root *session) {
	f.gws["gw2"].kill(t)
	killed := time.Now()
	rep := waitCanDo(t, root, heaterOff, "gw2 reported source_unreachable", func(r map[string]any) bool {
		return blockedUnreachable(r, "gw2")
	})
	t.Logf("killed gw2 reported source_unreachable after %v", time.Since(killed).Round(time.Millisecond))
	if m := rep["metadata"].(map[string]any); m["partition_state"] != "suspected_partition" {
		t.Errorf("can_do with gw2 gone: partition_state = %v", m["partition_state"])
	}
	f.gws["gw2"] = startProc(t, os.Interrupt, nil, f.bin, `on (http://\S+/mcp)`, f.gwArgs("gw2")...)
	f.gws["gw2"].addr(t, 60*time.Second)
	restarted := time.Now()
	waitCanDo(t, root, heaterOff, "gw2 back", func(r map[string]any) bool {
		return candidateSources(r)["gw2/heater_relay"] && !blockedUnreachable(r, "gw2")
	})
	t.Logf("restarted gw2 back in the fleet's can_do %v after it served", time.Since(restarted).Round(time.Millisecond))
}

// 5. gw2 revoked by the command the README shows: the hubs cut its leaf
// link and refuse it from then on (each refusal logged with its identity),
// the fleet's can_do reports it unreachable, the others stay.
func (f *taggedFleet) revoke(t *testing.T, root *session) {
	out, err := exec.Command(f.bin, "fleet", "revoke", filepath.Join(f.dir, "fleet"), "gw2").CombinedOutput()
	if err != nil {
		t.Fatalf("fleet revoke: %v\n%s", err, out)
	}
	revoked := time.Now()
	waitCanDo(t, root, heaterOff, "the revoked gw2 reported source_unreachable, gw1 and gw3 answering", func(r map[string]any) bool {
		src := candidateSources(r)
		return blockedUnreachable(r, "gw2") && src["gw1/heater_relay"] && src["gw3/heater_relay"]
	})
	t.Logf("revoked gw2 cut off from the fleet's can_do after %v, the others answering", time.Since(revoked).Round(time.Millisecond))
	for refused := time.Now().Add(30 * time.Second); ; {
		logs := f.hubLogs[0]() + f.hubLogs[1]() + f.hubLogs[2]()
		if strings.Contains(logs, "authentication error") && strings.Contains(logs, "identity=gw2") && strings.Contains(logs, "revoked=true") {
			break
		}
		if time.Now().After(refused) {
			t.Fatalf("no hub logged the refusal of the revoked gw2:\n%s", logs)
		}
		select { // poll the hubs' logs
		case <-time.After(200 * time.Millisecond):
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		}
	}
}

// 6. Two of three hub members killed: shared actions have no quorum,
// local ones still run.
func (f *taggedFleet) hubLoss(t *testing.T) {
	f.hubs[1].kill(t)
	f.hubs[2].kill(t)
	lost := time.Now()
	gw1 := f.own["gw1"]
	r, _ := gw1.call("do_set_heater", map[string]any{"value": true, "idempotency_key": "tagged-e2e-noquorum"})
	if r["status"] != "failed" || r["permission"] != "partition_no_quorum" {
		t.Errorf("gw1 do_set_heater(true) with one hub member of three: %v; want failed, partition_no_quorum", r)
	}
	t.Logf("shared action refused partition_no_quorum %v after losing two hub members", time.Since(lost).Round(time.Millisecond))
	// can_do reads the record: the stream leader serves reads until it
	// sees its followers gone, so it may lag do_* by a few seconds.
	waitCanDo(t, gw1, map[string]any{"intent": map[string]any{"action": "do_set_heater", "value": true}},
		"gw1's can_do to say partition_no_quorum", func(r map[string]any) bool {
			blocked, _ := r["blocked"].([]any)
			for _, b := range blocked {
				if m, ok := b.(map[string]any); ok && m["capability"] == "do_set_heater" && m["permission"] == "partition_no_quorum" {
					return r["feasible"] == false
				}
			}
			return false
		})
	t.Logf("gw1's can_do says partition_no_quorum %v after losing two hub members", time.Since(lost).Round(time.Millisecond))
	r, _ = gw1.call("do_set_vent", map[string]any{"value": false, "idempotency_key": "tagged-e2e-local"})
	if r["status"] != "success" {
		t.Errorf("gw1 do_set_vent(false), a local action, without quorum: %v; want success", r)
	}
}

// buildTagged builds the binary with the embedded NATS server (and the
// race detector when the tests run under it) once, into a temp dir.
func buildTagged(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "promcp-device-nats")
	flags := []string{"build", "-tags", "natsserver", "-o", bin, "."}
	if raceEnabled {
		flags = []string{"build", "-race", "-tags", "natsserver", "-o", bin, "."}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", flags...).CombinedOutput()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(flags, " "), err, out)
	}
	return bin
}

// waitCanDo asks can_do until ok holds, for at most 60 s, and returns the
// last answer; each answer comes within the fleet's budget.
func waitCanDo(t *testing.T, s *session, args map[string]any, what string, ok func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		asked := time.Now()
		rep, _ := s.call("can_do", args)
		if took := time.Since(asked); took > 3*time.Second { // the 500 ms budget, with room for -race on 2 loaded cores
			t.Errorf("fleet can_do took %v", took)
		}
		if ok(rep) {
			return rep
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: last can_do = %v", what, rep)
		}
		select { // poll: the fleet converges on its own time (registration, leaf links)
		case <-time.After(250 * time.Millisecond):
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		}
	}
}

func candidateSources(rep map[string]any) map[string]bool {
	out := map[string]bool{}
	cands, _ := rep["candidates"].([]any)
	for _, c := range cands {
		if m, ok := c.(map[string]any); ok {
			out[fmt.Sprint(m["source"])] = true
		}
	}
	return out
}

func blockedUnreachable(rep map[string]any, gw string) bool {
	blocked, _ := rep["blocked"].([]any)
	for _, b := range blocked {
		if m, ok := b.(map[string]any); ok && m["device_id"] == gw && m["permission"] == "source_unreachable" {
			return true
		}
	}
	return false
}

// groupWith opens the group endpoint of gw on the fleet that serves tool.
func groupWith(t *testing.T, base, gw, tool string) *session {
	t.Helper()
	for _, name := range []string{gw, gw + "_2", gw + "_3"} {
		s := httpSession(t, base+"/mcp/"+name, mcp.LATEST_PROTOCOL_VERSION)
		for _, tl := range s.tools {
			if tl.Name == tool {
				return s
			}
		}
	}
	t.Fatalf("no group of %s serves %s", gw, tool)
	return nil
}

// raceTwo calls toolA on a and toolB on b at once with value and returns
// how many answers were success and how many each refusal.
func raceTwo(t *testing.T, a *session, toolA string, b *session, toolB string, value float64) map[string]int {
	t.Helper()
	var wg sync.WaitGroup
	res := make([]string, 2)
	for i, c := range []struct {
		s    *session
		tool string
	}{{a, toolA}, {b, toolB}} {
		wg.Go(func() {
			body, err := callTool(t, c.s.c, c.tool, map[string]any{"value": value})
			if err != nil {
				res[i] = "error: " + err.Error()
				return
			}
			if body["status"] == "success" {
				res[i] = "success"
			} else {
				res[i] = fmt.Sprint(body["permission"])
			}
		})
	}
	wg.Wait()
	got := map[string]int{}
	for _, r := range res {
		got[r]++
	}
	return got
}
