//go:build !nomqtt

package sim_test

import (
	"testing"
	"time"

	"github.com/promcp/promcp-device/manifests/manifesttest"
)

const shellySite = `version: 1
gateway: home-1
buses:
  - {name: broker, kind: mqtt, mqtt: {broker: "mqtt://127.0.0.1"}}
devices:
  - {name: em, bus: broker, model: mqtt, mqtt: {preset: shelly, topic: shellyem-B9F3C1}}
capabilities:
  - {name: contactor, type: boolean, read: {device: em, channel: relay/0}, do: {tool: do_set_contactor, side_effects: [switches the load]}}
  - {name: em_power, type: number, unit: W, read: {device: em, channel: emeter/0/power}}
  - {name: em_reactive, type: number, unit: VAR, read: {device: em, channel: emeter/0/reactive_power}}
  - {name: em_voltage, type: number, unit: V, read: {device: em, channel: emeter/0/voltage}}
  - {name: em_energy, type: number, unit: Wh, read: {device: em, channel: emeter/0/total}}
`

// TestSimulatedShellyEM: the Shelly twin publishes as Gen1 firmware does
// (bare values under shellies/<id>/, online true/false retained), switches
// its relay on relay/0/command, and its emeter total (Wh) grows with its
// power on the world's clock.
func TestSimulatedShellyEM(t *testing.T) {
	w, clk := newWorld(t, manifesttest.Parse(t, "shelly.yml", shellySite))
	ep, err := w.StartLines()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ep.Close() })
	r := record(t, ep.Broker)
	const base = "shellies/shellyem-B9F3C1/"
	r.wait(t, base+"online", "true")
	for topic, want := range map[string]string{
		"emeter/0/voltage": "230", "emeter/0/power": "150", "emeter/0/reactive_power": "15",
		"emeter/0/total": "0", "relay/0": "off",
	} {
		r.wait(t, base+topic, want)
	}
	if err := ep.Broker.Publish(base+"relay/0/command", []byte("on"), false); err != nil {
		t.Fatal(err)
	}
	r.wait(t, base+"relay/0", "on")
	ep.Broker.Publish(base+"relay/0/command", []byte("toggle"), false)
	r.wait(t, base+"relay/0", "off")
	clk.Advance(time.Hour)
	r.wait(t, base+"emeter/0/total", "150")
	if err := w.SetMQTTOnline("em", false); err != nil {
		t.Fatal(err)
	}
	r.wait(t, base+"online", "false")
}
