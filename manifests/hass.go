package manifests

import (
	"slices"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"
)

// HomeAssistant is the Home Assistant bridge file of `serve
// --homeassistant FILE`: the MQTT broker Home Assistant listens to, where
// discovery and state are published, and the caller (with its role) that
// Home Assistant's commands act as.
//
//	version: 1
//	mqtt: {broker: "mqtt://127.0.0.1:1883"}
//	caller: {name: homeassistant, role: operator}
type HomeAssistant struct {
	File    string
	Version int
	// MQTT is the broker connection, as an mqtt bus declares it
	// (protocol 5 only: the bridge speaks MQTT 5).
	MQTT MQTTBus
	// DiscoveryPrefix is Home Assistant's discovery prefix; default
	// "homeassistant".
	DiscoveryPrefix string
	// Topic is the root of the state, availability, attributes and
	// command topics; default "promcp/<gateway>".
	Topic string
	// Caller is who Home Assistant's commands act as: a name for the audit
	// log and a role the policy declares.
	Caller HACaller
	// Poll is how often every capability is read; state is published when
	// it changed. Default 5s, 200ms to 1h.
	Poll time.Duration
	// Capabilities limits the bridge to these capabilities; empty for all.
	Capabilities []string
}

// HACaller is the named caller Home Assistant's commands act as.
type HACaller struct {
	Name, Role string
}

// Defaults of the Home Assistant file.
const (
	DefaultHADiscoveryPrefix = "homeassistant"
	DefaultHAPoll            = 5 * time.Second
	DefaultHACaller          = "homeassistant"
)

var (
	haKeys       = []string{"version", "mqtt", "discovery_prefix", "topic", "caller", "poll", "capabilities"}
	haCallerKeys = []string{"name", "role"}
)

// LoadHomeAssistant reads the Home Assistant file at path; see
// ParseHomeAssistant.
func LoadHomeAssistant(path string, m *Manifest, roles []string) (*HomeAssistant, error) {
	return loadFile(path, "homeassistant file", func(file string, data []byte) (*HomeAssistant, error) {
		return ParseHomeAssistant(file, data, m, roles)
	})
}

// ParseHomeAssistant decodes and validates a Home Assistant file against
// the manifest it bridges (capabilities named must exist) and the roles
// its policy declares (the caller's role must be one), with the defaults
// filled in. Problems are *Error values (file:line:col field), all of
// them joined; it never panics.
func ParseHomeAssistant(file string, data []byte, m *Manifest, roles []string) (*HomeAssistant, error) {
	return parse(file, data, func(d *decoder, root ast.Node) *HomeAssistant {
		h := &HomeAssistant{File: file, DiscoveryPrefix: DefaultHADiscoveryPrefix, Poll: DefaultHAPoll,
			Caller: HACaller{Name: DefaultHACaller}}
		o, ok := d.document(root, haKeys, "mqtt and caller")
		if !ok {
			return h
		}
		h.Version = o.version()
		if b, ok := o.sub("mqtt", mqttBusKeys); ok {
			b.mqttBus(&h.MQTT)
			if h.MQTT.Protocol == 4 {
				b.add("protocol", ErrNotAllowed, ": 4 (the Home Assistant bridge speaks MQTT 5: want 5)")
			}
		}
		o.require("mqtt", `the broker Home Assistant uses, such as {broker: "mqtt://127.0.0.1:1883"}`)
		if s, ok := o.strOK("discovery_prefix"); ok {
			h.DiscoveryPrefix = s
			haTopic(o, "discovery_prefix", s)
		}
		if s, ok := o.strOK("topic"); ok {
			h.Topic = s
			haTopic(o, "topic", s)
		}
		if h.Topic == "" && m != nil {
			h.Topic = "promcp/" + m.Gateway
		}
		if c, ok := o.sub("caller", haCallerKeys); ok {
			if s, ok := d.name(c.f["name"], c.at("name")); ok {
				h.Caller.Name = s
			}
			h.Caller.Role = c.requiredStr("role", "a role the policy declares, such as operator")
			if h.Caller.Role != "" && roles != nil && !slices.Contains(roles, h.Caller.Role) {
				c.add("role", ErrBadReference, "%q (want a role the policy declares: %s)", h.Caller.Role, oneOf(roles))
			}
		}
		o.require("caller", "{name: homeassistant, role: operator}: who Home Assistant's commands act as")
		if o.has("poll") {
			h.Poll = o.dur("poll")
			if h.Poll < 200*time.Millisecond || h.Poll > time.Hour {
				o.add("poll", ErrRange, "%s (want 200ms to 1h)", h.Poll)
			}
		}
		for i, s := range o.strs("capabilities") {
			if m != nil && !slices.ContainsFunc(m.Capabilities, func(c Capability) bool { return c.Name == s }) {
				d.add(index(o.at("capabilities"), i), ErrBadReference, "%q (want a capability of %s)", s, m.File)
			}
			h.Capabilities = append(h.Capabilities, s)
		}
		return h
	})
}

// haTopic reports a topic (or prefix) that cannot be published under: a
// wildcard, an empty level, or a leading or trailing slash.
func haTopic(o obj, k, s string) {
	if s == "" || strings.ContainsAny(s, "+#\x00") || strings.HasPrefix(s, "/") || strings.HasSuffix(s, "/") || strings.Contains(s, "//") {
		o.add(k, ErrUnknownValue, "%q (want topic levels such as promcp/greenhouse: no wildcard, no empty level)", s)
	}
}
