//go:build nomqtt

package main

import "testing"

// TestBuiltWithoutMQTT: a binary built with -tags nomqtt refuses a
// manifest with MQTT devices, the Home Assistant bridge and MQTT
// notifications, naming the tag.
func TestBuiltWithoutMQTT(t *testing.T) {
	runBuiltWithout(t, "nomqtt", []builtWithoutCase{
		{"serve an mqtt manifest", []string{"serve", "--sim", "--manifest", example("mqtt-home.yml")}},
		{"serve --homeassistant", []string{"serve", "--sim", "--manifest", example("greenhouse.yml"), "--homeassistant", writeTemp(t, "ha.yml", "broker: mqtt://127.0.0.1:1883\n")}},
	})
}
