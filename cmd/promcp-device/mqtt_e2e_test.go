package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

const mqttHome = "../../manifests/examples/mqtt-home.yml"

// TestMQTTHomeServedOnSim: `serve --sim` starts the embedded broker and the
// simulated Tasmota and Zigbee2MQTT devices; over stdio the reads come
// good from the devices' messages, with the adopted Lite device as their
// source, and the example lints clean with every read_* and can_do called.
func TestMQTTHomeServedOnSim(t *testing.T) {
	s := stdioSession(t, mcp.ProtocolVersion20251125, "--manifest", mqttHome)
	// Each device's first message travels through the broker on its own:
	// the door's may come after the cellar's, however long a loaded
	// machine takes (a minute bounds a broker that never delivers).
	deadline := time.Now().Add(2 * time.Minute)
	good := func(tool string) map[string]any { return s.untilGood(tool, deadline) }
	if body := good("read_cellar_temperature"); body["quality"] != "good" || body["value"] != 14.2 {
		t.Fatalf("read_cellar_temperature = %v, want good 14.2 from zigbee2mqtt/cellar_climate", body)
	}
	if body := good("read_front_door_closed"); body["quality"] != "good" || body["value"] != true {
		t.Errorf("read_front_door_closed = %v, want good true", body)
	}
	if found, rep := s.canDoOffers(map[string]any{"action": "turn on the dehumidifier", "location": "cellar"},
		"do_set_dehumidifier", "home-1/mqtt:tasmota/dehumidifier_plug"); !found {
		t.Errorf("can_do = %v, want do_set_dehumidifier from home-1/mqtt:tasmota/dehumidifier_plug", rep)
	}

	code, codes := lintJSON(t, "--call-reads", "--manifest", mqttHome, "--", binary, "serve", "--sim", "--manifest", mqttHome, "--log-level", "error")
	if code != 0 {
		t.Errorf("lint --call-reads -- serve --sim mqtt-home: exit %d, %s", code, strings.Join(codes, " "))
	}
}

// TestMQTTHomeScenario plays mqtt-home-faults.yml on the binary, at up
// to 20× as the machine allows (pace_e2e_test.go):
// the door's dropout (its Last Will) makes its reads error, saying it is
// offline, and they are good again once the fault ends.
func TestMQTTHomeScenario(t *testing.T) {
	t.Parallel()
	// The door is good for 20 s (and the lead), then out for 1 m: the
	// scale and the lead come from what this machine measures now.
	pace := paceScenario(t, mcp.ProtocolVersion20251125, []string{"--manifest", mqttHome}, 20,
		scenarioPhases{shortest: time.Minute, length: 80 * time.Second},
		func(s *session) {
			s.call("read_front_door_closed", map[string]any{})
			time.Sleep(50 * time.Millisecond) // as until does
		})
	s := stdioSession(t, mcp.ProtocolVersion20251125, "--manifest", mqttHome,
		"--scenario", pace.scenario(t, "../../manifests/examples/mqtt-home-faults.yml"), "--time-scale", pace.timeScale())
	until := func(what string, ok func(map[string]any) bool) map[string]any {
		t.Helper()
		deadline := pace.deadline
		for {
			body, _ := s.call("read_front_door_closed", map[string]any{})
			if ok(body) {
				return body
			}
			if time.Now().After(deadline) {
				t.Fatalf("read_front_door_closed never %s: last %v", what, body)
			}
			time.Sleep(50 * time.Millisecond) // the scenario plays on the simulator's clock
		}
	}
	until("good", func(b map[string]any) bool { return b["quality"] == "good" })
	body := until("error", func(b map[string]any) bool { return b["quality"] == "error" })
	if e, _ := body["error"].(map[string]any); !strings.Contains(fmt.Sprint(e["message"]), "offline since") {
		t.Errorf("during the dropout: %v, want an error saying the device is offline", body)
	}
	until("good again", func(b map[string]any) bool { return b["quality"] == "good" })
}

// TestMQTT311BrokerServedOnSim: the mqtt-home example with its broker
// declared as MQTT 3.1.1 (`protocol: 4`). Under --sim the embedded broker
// then speaks nothing newer, as such a site broker would not, and the
// gateway's reads still come good from the devices' messages and its
// commands reach the plug.
func TestMQTT311BrokerServedOnSim(t *testing.T) {
	t.Parallel()
	src := readFile(t, mqttHome)
	const broker = "      broker: mqtt://127.0.0.1:1883\n"
	if !strings.Contains(string(src), broker) {
		t.Fatalf("%s no longer declares %q", mqttHome, broker)
	}
	dir := t.TempDir()
	manifest := filepath.Join(dir, "mqtt-home.yml")
	if err := os.WriteFile(manifest, []byte(strings.Replace(string(src), broker, broker+"      protocol: 4\n", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	pol := readFile(t, filepath.Join(filepath.Dir(mqttHome), "mqtt-home.policy.yml"))
	if err := os.WriteFile(filepath.Join(dir, "mqtt-home.policy.yml"), pol, 0o600); err != nil {
		t.Fatal(err)
	}
	s := stdioSession(t, mcp.ProtocolVersion20251125, "--manifest", manifest)
	good := func(tool string) map[string]any {
		t.Helper()
		body := s.untilGood(tool, time.Now().Add(2*time.Minute))
		if body["quality"] != "good" {
			t.Fatalf("%s over MQTT 3.1.1 = %v, want good", tool, body)
		}
		return body
	}
	if body := good("read_cellar_temperature"); body["value"] != 14.2 {
		t.Fatalf("read_cellar_temperature over MQTT 3.1.1 = %v, want 14.2", body)
	}
	good("read_dehumidifier")
	res, _ := s.call("do_set_dehumidifier", map[string]any{"value": true, "idempotency_key": "mqtt311-on-1"})
	if res["status"] != "success" || res["applied_value"] != true {
		t.Fatalf("do_set_dehumidifier over MQTT 3.1.1 = %v, want success, applied true", res)
	}
}
