package manifests

import (
	"testing"
	"time"
)

// The presets fill topics and JSON paths as the firmware publishes them;
// declared channels win over the preset's.
func TestMQTTChannels(t *testing.T) {
	m := mustLoad(t, "mqtt_valid", "manifest.yml")
	b := m.Buses[0].MQTT
	if b.Broker != "mqtts://broker.lan" || b.Protocol != 5 || b.KeepAlive != 10*time.Second || b.Credentials != "mqtt.credentials" || b.Key != "client.key" {
		t.Errorf("bus %+v", b)
	}
	if a, err := BrokerAddress(b.Broker); a != "broker.lan:8883" || err != nil {
		t.Errorf("broker address %q, %v", a, err)
	}
	door, plug, shelly := m.Devices[0].MQTT, m.Devices[1].MQTT, m.Devices[2].MQTT
	cases := []struct {
		d    *MQTTDevice
		name string
		want MQTTChannel
	}{
		{door, "contact", MQTTChannel{Name: "contact", State: "zigbee2mqtt/front_door", Path: "contact",
			Command: "zigbee2mqtt/front_door/set", Payload: `{"contact":{{json}}}`, On: "ON", Off: "OFF"}},
		{plug, "power", MQTTChannel{Name: "power", State: "stat/plug_1/POWER", Command: "cmnd/plug_1/POWER", Payload: "{{value}}", On: "ON", Off: "OFF"}},
		{plug, "power2", MQTTChannel{Name: "power2", State: "stat/plug_1/POWER2", Command: "cmnd/plug_1/POWER2", Payload: "{{value}}", On: "ON", Off: "OFF"}},
		{plug, "ENERGY.Power", MQTTChannel{Name: "ENERGY.Power", State: "tele/plug_1/SENSOR", Path: "ENERGY.Power", Payload: "{{value}}", On: "ON", Off: "OFF"}},
		{shelly, "relay", MQTTChannel{Name: "relay", State: "shellies/shelly1-1/relay/0", Command: "shellies/shelly1-1/relay/0/command", Payload: "{{value}}", On: "on", Off: "off"}},
	}
	for _, tc := range cases {
		if got, ok := tc.d.Channel(tc.name); !ok || got != tc.want {
			t.Errorf("Channel(%q) = %+v, %t\nwant %+v", tc.name, got, ok, tc.want)
		}
	}
	if _, ok := shelly.Channel("temperature"); ok {
		t.Error("a generic device resolved an undeclared channel")
	}
	for _, tc := range []struct {
		d             *MQTTDevice
		topic, offine string
	}{
		{door, "zigbee2mqtt/front_door/availability", "offline"},
		{plug, "tele/plug_1/LWT", "offline"},
		{shelly, "shellies/shelly1-1/online", "false"},
	} {
		if topic, off := tc.d.AvailabilityTopic(); topic != tc.topic || off != tc.offine {
			t.Errorf("availability %q %q, want %q %q", topic, off, tc.topic, tc.offine)
		}
	}
}
