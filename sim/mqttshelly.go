//go:build !nomqtt

package sim

import (
	"strings"
	"time"

	"github.com/promcp/promcp-device/manifests"
)

// A simulated first-generation Shelly (preset shelly) publishes as its
// firmware does: each channel's bare value on shellies/<id>/<channel>
// (numbers as text, a relay as on or off), shellies/<id>/online true or
// false (its Last Will), and a relay follows on, off or toggle on
// shellies/<id>/relay/<n>/command. A Shelly EM's meter reads plausible
// mains where sim.values say nothing: 230 V, the site's base load, and
// emeter/<i>/total (Wh) growing with emeter/<i>/power on the world's clock.

// shellyDefaults gives the meter channels that sim.values leave unset a
// plausible first value.
func (dev *mqttDevice) shellyDefaults() {
	for k := range dev.values {
		if dev.d.Sim != nil {
			if _, set := dev.d.Sim.Values[k]; set {
				continue
			}
		}
		if _, isNum := dev.values[k].(float64); !isNum {
			continue
		}
		switch k[strings.LastIndexByte(k, '/')+1:] {
		case "voltage":
			dev.values[k] = MainsVoltage
		case "power":
			dev.values[k] = MeterBaseLoad
		case "reactive_power":
			dev.values[k] = MeterBaseLoad * 0.1
		case "pf":
			dev.values[k] = 0.95
		}
	}
}

// publishShellyLocked integrates the meters' energy up to now and publishes
// every channel on its topic; dev.mu is held.
func (dev *mqttDevice) publishShellyLocked() {
	now := dev.now()
	if !dev.last.IsZero() {
		dev.meterShellyLocked(now.Sub(dev.last))
	}
	dev.last = now
	for k, v := range dev.values {
		ch, ok := dev.d.MQTT.Channel(k)
		if !ok {
			continue
		}
		dev.b.Publish(ch.State, []byte(genericWord(ch, v)), false)
	}
}

// meterShellyLocked adds power × dt to each emeter/<i>/total (Wh) whose
// emeter/<i>/power the device has; dev.mu is held.
func (dev *mqttDevice) meterShellyLocked(dt time.Duration) {
	for k, v := range dev.values {
		prefix, ok := strings.CutSuffix(k, "/total")
		total, isNum := v.(float64)
		if !ok || !isNum {
			continue
		}
		if p, ok := dev.values[prefix+"/power"].(float64); ok && dt > 0 {
			dev.values[k] = total + p*dt.Hours()
		}
	}
}

// shellyCommandLocked applies on, off or toggle on
// shellies/<id>/relay/<n>/command to relay/<n>; dev.mu is held.
func (dev *mqttDevice) shellyCommandLocked(topic string, payload []byte) {
	name, ok := strings.CutPrefix(topic, "shellies/"+dev.d.MQTT.Topic+"/")
	if name, ok = strings.CutSuffix(name, "/command"); !ok {
		return
	}
	old, known := dev.values[name].(bool)
	if !known {
		return
	}
	switch strings.TrimSpace(string(payload)) {
	case "on":
		dev.values[name] = true
	case "off":
		dev.values[name] = false
	case "toggle":
		dev.values[name] = !old
	}
}

// publishShellyOnline publishes shellies/<id>/online, retained.
func (dev *mqttDevice) publishShellyOnline(b *Broker, online bool) {
	p := "false"
	if online {
		p = "true"
	}
	b.Publish("shellies/"+dev.d.MQTT.Topic+"/online", []byte(p), true)
}

// isShelly reports whether the device plays a Shelly.
func (dev *mqttDevice) isShelly() bool { return dev.d.MQTT.Preset == manifests.PresetShelly }
