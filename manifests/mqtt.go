package manifests

import (
	"net"
	"net/url"
	"strings"
	"time"
)

// MQTT parts of the manifest: the mqtt bus (a broker connection) and the
// mqtt device model (a device that publishes its state on topics and takes
// commands on others, as Tasmota, Zigbee2MQTT, ESPHome and Shelly do).
// These are PhysMCP's Lite devices: this gateway adopts them as a proxy.

// BusMQTT is a connection to an MQTT broker.
const BusMQTT BusKind = "mqtt"

// ModelMQTT is a device seen through an MQTT broker. Channels: the names
// of its MQTT.Channels, or, with a preset, any JSON key of its state (see
// MQTTDevice.Channel).
const ModelMQTT Model = "mqtt"

// MQTTBus is the broker connection of an mqtt bus.
type MQTTBus struct {
	// Broker is the broker's URL: mqtt://host[:1883] or mqtts://host[:8883].
	Broker string
	// ClientID is the client identifier; "" means "<gateway>-<bus>".
	ClientID string
	// CA is a PEM file of the certificate authorities that sign the
	// broker's certificate (mqtts only); "" trusts the system's roots.
	CA string
	// Cert and Key are a PEM client certificate and its key (mqtts only),
	// both or neither.
	Cert, Key string
	// Credentials is a file whose first line is the username and second
	// line the password; "" connects without. Secrets are never inline.
	Credentials string
	// Protocol is the MQTT protocol level: 5 (MQTT 5, the default) or 4
	// (MQTT 3.1.1, for brokers that speak nothing newer).
	Protocol int
	// KeepAlive is the MQTT keep-alive; zero means DefaultMQTTKeepAlive.
	KeepAlive time.Duration
}

// DefaultMQTTKeepAlive is the keep-alive of an mqtt bus that declares none:
// a dead broker is noticed within 1.5 times this.
const DefaultMQTTKeepAlive = 30 * time.Second

// MQTTPreset fills an mqtt device's topics and JSON paths the way one
// firmware publishes them.
type MQTTPreset string

// Presets.
const (
	// PresetTasmota: channel power (power1..power8) is stat/<topic>/POWER
	// (ON/OFF), commanded on cmnd/<topic>/POWER; any other channel is a
	// JSON path in tele/<topic>/SENSOR ("AM2301.Temperature"); the Last
	// Will is tele/<topic>/LWT Online/Offline.
	PresetTasmota MQTTPreset = "tasmota"
	// PresetZigbee2MQTT: any channel is a JSON key of zigbee2mqtt/<topic>
	// ("contact", "temperature", "state"), commanded on
	// zigbee2mqtt/<topic>/set with {"<channel>": value}; availability is
	// zigbee2mqtt/<topic>/availability (offline, or {"state":"offline"}).
	PresetZigbee2MQTT MQTTPreset = "zigbee2mqtt"
)

// MQTTDevice is the topics of an mqtt device.
type MQTTDevice struct {
	Preset MQTTPreset
	// Topic is the device's topic (Tasmota) or friendly name (Zigbee2MQTT)
	// that a preset builds its topics from.
	Topic string
	// Availability is the topic where the device (or its Last Will) says
	// whether it is online; "" means the preset's, or none.
	Availability string
	// Offline is the availability payload that means the device is gone;
	// "" means the preset's, or "offline". Compared without case; a JSON
	// object's "state" key counts as the payload.
	Offline string
	// Channels are the device's named values; with a preset they add to or
	// replace the preset's.
	Channels []MQTTChannel
}

// MQTTChannel is one value of an mqtt device.
type MQTTChannel struct {
	Name string
	// State is the topic the value is published on.
	State string
	// Path is a dot-separated path into the JSON payload ("ENERGY.Power");
	// "" takes the whole payload as the value.
	Path string
	// Command is the topic a do_* publishes on; "" makes it read-only.
	Command string
	// Payload is the command's template: {{value}} becomes the value as
	// text (a boolean as On or Off), {{json}} the value as JSON. "" means
	// "{{value}}".
	Payload string
	// On and Off are a boolean's payload words; defaults ON and OFF. A
	// JSON true/false and "true"/"false" are read as well.
	On, Off string
	// Retain publishes commands with the retain flag.
	Retain bool
}

// Channel resolves the channel called name: a declared channel, or the
// preset's. ok is false when there is no such channel.
func (d *MQTTDevice) Channel(name string) (MQTTChannel, bool) {
	for _, ch := range d.Channels {
		if ch.Name == name {
			return withDefaults(ch), true
		}
	}
	t := d.Topic
	switch {
	case name == "" || t == "":
		return MQTTChannel{}, false
	case d.Preset == PresetTasmota:
		if p, ok := tasmotaPower(name); ok {
			return withDefaults(MQTTChannel{Name: name, State: "stat/" + t + "/" + p, Command: "cmnd/" + t + "/" + p}), true
		}
		return withDefaults(MQTTChannel{Name: name, State: "tele/" + t + "/SENSOR", Path: name}), true
	case d.Preset == PresetZigbee2MQTT:
		return withDefaults(MQTTChannel{Name: name, State: "zigbee2mqtt/" + t, Path: name,
			Command: "zigbee2mqtt/" + t + "/set", Payload: `{"` + name + `":{{json}}}`}), true
	case d.Preset == PresetShelly:
		ch, ok := shellyChannel(t, name)
		return withDefaults(ch), ok
	}
	return MQTTChannel{}, false
}

// AvailabilityTopic returns the availability topic and its offline word,
// or "" when the device has none.
func (d *MQTTDevice) AvailabilityTopic() (topic, offline string) {
	topic, offline = d.Availability, d.Offline
	switch {
	case topic != "":
	case d.Preset == PresetTasmota && d.Topic != "":
		topic = "tele/" + d.Topic + "/LWT"
	case d.Preset == PresetZigbee2MQTT && d.Topic != "":
		topic = "zigbee2mqtt/" + d.Topic + "/availability"
	case d.Preset == PresetShelly && d.Topic != "" && d.Offline == "":
		topic, offline = "shellies/"+d.Topic+"/online", "false"
	case d.Preset == PresetShelly && d.Topic != "":
		topic = "shellies/" + d.Topic + "/online"
	}
	if offline == "" {
		offline = "offline"
	}
	return topic, offline
}

// tasmotaPower maps power, power1..power8 to Tasmota's POWER words.
func tasmotaPower(name string) (string, bool) {
	n := strings.ToLower(name)
	if n == "power" {
		return "POWER", true
	}
	if len(n) == 6 && strings.HasPrefix(n, "power") && n[5] >= '1' && n[5] <= '8' {
		return "POWER" + n[5:], true
	}
	return "", false
}

func withDefaults(ch MQTTChannel) MQTTChannel {
	if ch.Payload == "" {
		ch.Payload = "{{value}}"
	}
	if ch.On == "" {
		ch.On = "ON"
	}
	if ch.Off == "" {
		ch.Off = "OFF"
	}
	return ch
}

var (
	mqttBusKeys     = []string{"broker", "client_id", "ca", "cert", "key", "credentials", "protocol", "keepalive"}
	mqttDeviceKeys  = []string{"preset", "topic", "availability", "offline", "channels"}
	mqttChannelKeys = []string{"name", "state", "path", "command", "payload", "on", "off", "retain"}
	mqttPresets     = words(PresetTasmota, PresetZigbee2MQTT, PresetShelly)
)

func (o obj) mqttBus(m *MQTTBus) {
	if s, ok := o.strOK("broker"); ok {
		if _, err := BrokerAddress(s); err != nil {
			o.add("broker", ErrRange, ": %q (%v)", s, err)
		} else {
			m.Broker = s
		}
	}
	o.require("broker", `the broker's URL, such as "mqtt://127.0.0.1:1883" or "mqtts://broker.lan:8883"`)
	m.ClientID = o.str("client_id")
	m.CA, m.Cert, m.Key, m.Credentials = o.str("ca"), o.str("cert"), o.str("key"), o.str("credentials")
	m.Protocol = 5
	if v, ok := o.integer("protocol"); ok {
		switch v {
		case 4, 5:
			m.Protocol = int(v)
		case 3:
			o.add("protocol", ErrNotAllowed, ": 3 (MQTT 3.1 is not supported: want 4 for MQTT 3.1.1 or 5 for MQTT 5)")
		default:
			o.add("protocol", ErrRange, ": %d (want 4 for MQTT 3.1.1 or 5 for MQTT 5)", v)
		}
	}
	m.KeepAlive = o.dur("keepalive")
	if m.KeepAlive != 0 && (m.KeepAlive < time.Second || m.KeepAlive > 18*time.Hour) {
		o.add("keepalive", ErrRange, ": %s (want 1s..18h)", m.KeepAlive)
	}
	secure := strings.HasPrefix(strings.ToLower(m.Broker), "mqtts:")
	for _, k := range []string{"ca", "cert", "key"} {
		if o.has(k) && m.Broker != "" && !secure {
			o.add(k, ErrNotAllowed, "for broker %q (TLS files need an mqtts:// broker)", m.Broker)
		}
	}
	if o.has("cert") != o.has("key") {
		k := "key"
		if o.has("key") {
			k = "cert"
		}
		o.add(k, ErrMissing, "%s (a client certificate needs both cert and key)", k)
	}
}

// BrokerAddress returns the host:port of an mqtt:// or mqtts:// broker URL,
// with the default port (1883, 8883) when it has none.
func BrokerAddress(broker string) (string, error) {
	u, err := url.Parse(broker)
	if err != nil {
		return "", err
	}
	port := ""
	switch strings.ToLower(u.Scheme) {
	case "mqtt":
		port = "1883"
	case "mqtts":
		port = "8883"
	default:
		return "", errString("want mqtt:// or mqtts://")
	}
	if u.Hostname() == "" {
		return "", errString("no host")
	}
	if u.User != nil {
		return "", errString("no user or password in the URL: put them in a credentials file")
	}
	if u.Path != "" && u.Path != "/" {
		return "", errString("no path")
	}
	if p := u.Port(); p != "" {
		if !validPort(p) {
			return "", errString("bad port")
		}
		port = p
	}
	return net.JoinHostPort(u.Hostname(), port), nil
}

type errString string

func (e errString) Error() string { return string(e) }

func (o obj) mqttDevice(m *MQTTDevice) {
	enum(o, "preset", &m.Preset, mqttPresets, false)
	m.Topic = o.str("topic")
	m.Availability = o.str("availability")
	m.Offline = o.str("offline")
	m.Channels = list(o, "channels", mqttChannelKeys, obj.mqttChannel)
	if m.Preset != "" && m.Topic == "" {
		o.require("topic", "the device's topic (Tasmota), friendly name (Zigbee2MQTT) or id (Shelly), such as \"front_door\" or \"shellyem-B9F3C1\"")
	}
	if m.Preset == "" && len(m.Channels) == 0 && !o.d.bad[o.at("channels")] {
		o.add("channels", ErrMissing, "channels (want a preset, %s, or channels with a state topic each)", oneOf(mqttPresets))
	}
	if strings.ContainsAny(m.Topic, "+#/") {
		o.add("topic", ErrRange, ": %q (want one topic level without wildcards)", m.Topic)
	}
	if strings.ContainsAny(m.Availability, "+#") {
		o.add("availability", ErrRange, ": %q (want a topic without wildcards)", m.Availability)
	}
}

func (o obj) mqttChannel(ch *MQTTChannel) {
	if s, ok := o.strOK("name"); ok {
		ch.Name = s
	}
	o.require("name", "the channel's name, as capabilities bind it")
	ch.State = o.requiredStr("state", "the topic the value is published on")
	ch.Path, ch.Command, ch.Payload = o.str("path"), o.str("command"), o.str("payload")
	ch.On, ch.Off, ch.Retain = o.str("on"), o.str("off"), o.boolean("retain")
	for _, k := range []string{"state", "command"} {
		if v, _ := o.strOK(k); strings.ContainsAny(v, "+#") {
			o.add(k, ErrRange, ": %q (want a topic without wildcards)", v)
		}
	}
	if o.has("payload") && !strings.Contains(ch.Payload, "{{value}}") && !strings.Contains(ch.Payload, "{{json}}") {
		o.add("payload", ErrRange, ": %q (want a template with {{value}} or {{json}})", ch.Payload)
	}
}

// mqttDeviceCheck checks an mqtt device: its bus and the keys of other
// models.
func (c *checker) mqttDevice(dev Device, bus *Bus, path string) {
	field := func(k string) string { return join(path, k) }
	c.notAllowed(path, []string{"address", "pin", "active_low", "pull", "registers", "unit_id", "max_span", "timeout", "request", "terminator", "response"},
		"for model mqtt (its topics are under mqtt:)")
	if bus != nil && bus.Kind != BusMQTT {
		c.d.add(field("model"), ErrNotAllowed, "on %s bus %q: mqtt (want an mqtt bus)", bus.Kind, bus.Name)
	}
	if dev.MQTT == nil && !c.d.bad[field("mqtt")] {
		c.d.add(field("mqtt"), ErrMissing, "mqtt (want {preset: tasmota|zigbee2mqtt|shelly, topic: ...} or {channels: [...]})")
	}
	if dev.MQTT != nil {
		seen := map[string]string{}
		for i, ch := range dev.MQTT.Channels {
			c.unique(seen, "channel name", ch.Name, join(index(join(path, "mqtt.channels"), i), "name"))
		}
	}
}

// mqttChannel checks a capability bound to an mqtt device.
func (c *checker) mqttChannel(cp *Capability, dev *Device, path string) {
	chp := join(path, "read.channel")
	if dev.MQTT == nil {
		return // reported on the device
	}
	names := mqttChannelNames(*dev)
	ch, ok := dev.MQTT.Channel(cp.Read.Channel)
	switch {
	case !c.d.has(chp):
		c.d.add(chp, ErrMissing, "channel (a channel of %s: %s)", dev.Name, mqttChannelHint(dev.MQTT, names))
		return
	case !ok:
		c.d.add(chp, ErrBadReference, "channel %q of device %q (%s)", cp.Read.Channel, dev.Name, mqttChannelHint(dev.MQTT, names))
		return
	}
	if cp.Do != nil && ch.Command == "" {
		c.d.add(join(path, "do"), ErrNotAllowed, "on read-only channel %q of mqtt device %q (want command: on the channel, a power channel of a tasmota preset, or relay/<n> of a shelly preset)", cp.Read.Channel, dev.Name)
	}
}

func mqttChannelHint(d *MQTTDevice, names []string) string {
	switch d.Preset {
	case PresetTasmota:
		return "want power, power1..power8, or a JSON path in tele/" + d.Topic + "/SENSOR" + alsoNames(names)
	case PresetZigbee2MQTT:
		return "want a JSON key of zigbee2mqtt/" + d.Topic + alsoNames(names)
	case PresetShelly:
		return "want a topic under shellies/" + d.Topic + "/, such as emeter/0/power or relay/0" + alsoNames(names)
	}
	return candidates("channel", names)
}

func alsoNames(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return ", or " + oneOf(names)
}

// busMQTT checks the keys of an mqtt bus and the mqtt key of other buses.
func (c *checker) busMQTT(b Bus, path string) {
	if b.Kind == BusMQTT {
		c.notAllowed(path, []string{"device", "address", "port", "baud", "data_bits", "parity", "stop_bits", "rs485", "frame_gap", "retries"},
			"for an mqtt bus (its broker is under mqtt:)")
		if b.MQTT == nil && !c.d.bad[join(path, "mqtt")] {
			c.d.add(join(path, "mqtt"), ErrMissing, `mqtt (want {broker: "mqtt://127.0.0.1:1883"})`)
		}
		return
	}
	a := "a"
	if strings.IndexByte("aeiou", string(b.Kind + " ")[0]) >= 0 {
		a = "an"
	}
	c.notAllowed(path, []string{"mqtt"}, "for %s %s bus (only an mqtt bus has a broker)", a, b.Kind)
}
