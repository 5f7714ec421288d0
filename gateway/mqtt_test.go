package gateway_test

import (
	"strings"
	"testing"
	"time"

	"github.com/promcp/promcp-device/gateway"
	"github.com/promcp/promcp-device/gateway/gatewaytest"
	"github.com/promcp/promcp-device/manifests/manifesttest"
	"github.com/promcp/promcp-device/promcp"
)

// TestMQTTDoReadsBackTheStateTopic serves manifests/examples/mqtt-home.yml
// on the simulator's embedded broker: a do_* publishes the command and
// reads the state topic back after the settle time, success when the
// Tasmota plug follows and partial when it does not; can_do's candidates
// name the Lite device adopted over MQTT as their source.
func TestMQTTDoReadsBackTheStateTopic(t *testing.T) {
	m := manifesttest.Load(t, "../manifests/examples/mqtt-home.yml")
	pol := manifesttest.ParsePolicy(t, "open.policy.yml", "version: 1\n", m)
	b := serveReal(t, m, gatewaytest.Options{Hardware: lines(t), Gateway: gateway.GatewayOptions{Policy: pol}})
	plug, _ := b.Set.Get("dehumidifier")
	// The gateway's first reads wait for the retained and republished
	// state to arrive through the broker.
	deadline := time.Now().Add(time.Minute)
	for r := plug.ReadWithin(t.Context(), 0); r.Quality != promcp.QualityGood; r = plug.ReadWithin(t.Context(), 0) {
		if time.Now().After(deadline) {
			t.Fatalf("no state from the simulated plug: %+v", r)
		}
		time.Sleep(10 * time.Millisecond) // waiting for a message on the broker
	}

	var res promcp.DoResult
	b.call("do_set_dehumidifier", map[string]any{"value": true, "idempotency_key": "mqtt-on-1"}, &res)
	if res.Status != promcp.StatusSuccess || res.AppliedValue != true || res.PreviousValue != false {
		t.Fatalf("switch on: %+v, want success, applied true (read back from stat/dehumidifier/POWER)", res)
	}

	if err := b.w.SetMQTTIgnoresCommands("dehumidifier_plug", true); err != nil {
		t.Fatal(err)
	}
	b.call("do_set_dehumidifier", map[string]any{"value": false, "idempotency_key": "mqtt-off-1"}, &res)
	if res.Status != promcp.StatusPartial || res.AppliedValue != true || !strings.Contains(res.Reason, "reads back true") {
		t.Fatalf("a plug that ignores the command: %+v, want partial, still true", res)
	}

	var rep promcp.CapabilityReport
	b.call("can_do", map[string]any{"intent": map[string]any{"action": "switch the dehumidifier", "location": "cellar"}}, &rep)
	found := false
	for _, cand := range rep.Candidates {
		if cand.Capability == "do_set_dehumidifier" {
			found = cand.Source == "home-1/mqtt:tasmota/dehumidifier_plug"
		}
	}
	if !found {
		t.Errorf("can_do candidates %+v, want do_set_dehumidifier from home-1/mqtt:tasmota/dehumidifier_plug", rep.Candidates)
	}
}
