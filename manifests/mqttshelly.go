package manifests

import "strings"

// PresetShelly reads a Shelly of the first generation (Shelly 1, 1PM, 2.5,
// Plug S, EM, 3EM) as its firmware publishes over MQTT: a channel is the
// topic under shellies/<topic>/, as Shelly's documentation names it
// ("emeter/0/power", "emeter/0/total", "relay/0"); relay/<n> is commanded
// on shellies/<topic>/relay/<n>/command with on or off; the availability
// topic is shellies/<topic>/online (true, or false from the Last Will).
const PresetShelly MQTTPreset = "shelly"

// shellyChannel resolves channel name of a Shelly with device id t.
func shellyChannel(t, name string) (MQTTChannel, bool) {
	if strings.ContainsAny(name, "+#") || strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/") || strings.Contains(name, "//") {
		return MQTTChannel{}, false
	}
	base := "shellies/" + t + "/"
	ch := MQTTChannel{Name: name, State: base + name, On: "on", Off: "off"}
	if isShellyRelay(name) {
		ch.Command = base + name + "/command"
	}
	return ch, true
}

// isShellyRelay reports whether name is relay/<n>, a relay's state.
func isShellyRelay(name string) bool {
	n, ok := strings.CutPrefix(name, "relay/")
	if !ok || n == "" || len(n) > 1 {
		return false
	}
	return n[0] >= '0' && n[0] <= '3'
}
