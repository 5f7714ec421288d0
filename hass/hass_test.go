package hass_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/promcp/promcp-device/hass"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/promcp"
)

const schemaFile = "testdata/homeassistant-mqtt-discovery.schema.json"

// schemas compiles the discovery schema's definition of each platform.
func schemas(t *testing.T) map[string]*jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	out := map[string]*jsonschema.Schema{}
	for _, comp := range []string{"sensor", "binary_sensor", "switch", "number", "select"} {
		s, err := c.Compile(schemaFile + "#/$defs/" + comp)
		if err != nil {
			t.Fatal(err)
		}
		out[comp] = s
	}
	return out
}

func validate(t *testing.T, s *jsonschema.Schema, payload []byte) error {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(string(payload)))
	if err != nil {
		t.Fatal(err)
	}
	return s.Validate(v)
}

func f(v float64) *float64 { return &v }

// caps is the greenhouse example's capabilities, plus an enum with an
// action (a select) and an unbounded integer action (a box number).
func caps(t *testing.T) []*manifests.Capability {
	t.Helper()
	m, err := manifests.Load("../manifests/examples/greenhouse.yml")
	if err != nil {
		t.Fatal(err)
	}
	var out []*manifests.Capability
	for i := range m.Capabilities {
		out = append(out, &m.Capabilities[i])
	}
	return append(out,
		&manifests.Capability{Name: "mode", Type: manifests.TypeEnum,
			Do: &manifests.Action{Tool: "do_set_mode", Constraints: manifests.Constraints{Enum: []string{"auto", "manual", "off"}}}},
		&manifests.Capability{Name: "setpoint_count", Type: manifests.TypeInteger, Unit: "count",
			Do: &manifests.Action{Tool: "do_set_setpoint_count"}},
		&manifests.Capability{Name: "pressure", Type: manifests.TypeNumber, Unit: "hPa"})
}

var topics = hass.Topics{Discovery: "homeassistant", Base: "promcp/greenhouse-1", Node: hass.NodeID("greenhouse-1")}

// TestDiscoveryAgainstSchema: every entity of the greenhouse (and a
// select and a box number) has a discovery payload that Home Assistant's
// documented schema accepts (testdata, sources named in it), with the
// device class, unit and state class the capability implies, number
// bounds from the constraints, and commands on the bridge's topics.
func TestDiscoveryAgainstSchema(t *testing.T) {
	sch := schemas(t)
	dev := hass.Device{Identifiers: []string{"promcp-device_greenhouse-1"}, Name: "greenhouse-1", Manufacturer: "proMCP", SWVersion: "test"}
	org := hass.Origin{Name: "promcp-device", SWVersion: "test", SupportURL: "https://github.com/promcp/promcp-device"}
	got := map[string]map[string]any{}
	for _, e := range hass.Entities(caps(t)) {
		p, err := hass.Discovery(e, topics, dev, org)
		if err != nil {
			t.Fatal(err)
		}
		if err := validate(t, sch[e.Component], p); err != nil {
			t.Errorf("%s %s: %v\n%s", e.Component, e.ObjectID, err, p)
		}
		var m map[string]any
		json.Unmarshal(p, &m)
		got[topics.Config(e)] = m
	}
	for topic, want := range map[string]map[string]any{
		"homeassistant/sensor/greenhouse-1/temperature_zone1/config":     {"device_class": "temperature", "unit_of_measurement": "°C", "state_class": "measurement"},
		"homeassistant/sensor/greenhouse-1/humidity_zone1/config":        {"device_class": "humidity", "unit_of_measurement": "%"},
		"homeassistant/sensor/greenhouse-1/site_power/config":            {"device_class": "power", "unit_of_measurement": "W"},
		"homeassistant/sensor/greenhouse-1/site_energy/config":           {"device_class": "energy", "state_class": "total_increasing"},
		"homeassistant/sensor/greenhouse-1/pressure/config":              {"device_class": "pressure", "unit_of_measurement": "hPa"},
		"homeassistant/binary_sensor/greenhouse-1/heater/config":         {"payload_on": "ON", "state_topic": "promcp/greenhouse-1/heater/state"},
		"homeassistant/switch/greenhouse-1/do_set_heater/config":         {"command_topic": "promcp/greenhouse-1/do_set_heater/set", "state_topic": "promcp/greenhouse-1/heater/state"},
		"homeassistant/number/greenhouse-1/do_set_fan_speed/config":      {"min": 0.0, "max": 50.0, "step": 0.1, "mode": "slider", "device_class": "frequency"},
		"homeassistant/number/greenhouse-1/do_set_setpoint_count/config": {"step": 1.0, "mode": "box"},
		"homeassistant/select/greenhouse-1/do_set_mode/config":           {"command_topic": "promcp/greenhouse-1/do_set_mode/set"},
		"homeassistant/sensor/greenhouse-1/mode/config":                  {"device_class": "enum"},
	} {
		for k, v := range want {
			if got[topic] == nil || got[topic][k] != v {
				t.Errorf("%s: %s = %v, want %v", topic, k, got[topic][k], v)
			}
		}
	}
	if n := len(got); n != 19 {
		t.Errorf("%d entities, want 19 (14 of the greenhouse, 5 added)", n)
	}
}

// TestSchemaRefuses: the schema can fail — it refuses what Home Assistant
// would reject or misread.
func TestSchemaRefuses(t *testing.T) {
	sch := schemas(t)
	for _, c := range []struct{ comp, payload string }{
		{"number", `{"state_topic": "a/b"}`},                                                          // no command_topic
		{"switch", `{"command_topic": "a/b", "payload_onn": "ON"}`},                                   // misspelt key
		{"sensor", `{"state_topic": "a", "device_class": "temperature", "unit_of_measurement": "C"}`}, // not a temperature unit
		{"sensor", `{"state_topic": "a", "device_class": "energy", "unit_of_measurement": "kWh", "state_class": "measurement"}`},
		{"sensor", `{"state_topic": "a", "device_class": "enum", "options": ["x"], "state_class": "measurement"}`},
		{"select", `{"command_topic": "a"}`},                              // no options
		{"binary_sensor", `{"state_topic": "a/#"}`},                       // a wildcard
		{"sensor", `{"state_topic": "a", "origin": {"sw_version": "1"}}`}, // origin without a name
		{"number", `{"command_topic": "a", "step": 0}`},
	} {
		if err := validate(t, sch[c.comp], []byte(c.payload)); err == nil {
			t.Errorf("%s %s: accepted", c.comp, c.payload)
		}
	}
}

// TestKeys: a QoS 1 command the broker redelivers (DUP, same packet id)
// gets the idempotency key of its first delivery, so the do_* store
// replays it; a new message reusing the packet id, a QoS 0 message and a
// message on a new connection each get a new key.
func TestKeys(t *testing.T) {
	k := hass.NewKeyer()
	k.NewConnection()
	first := k.Key(7, false)
	if again := k.Key(7, true); again != first {
		t.Errorf("redelivered: key %s, want %s (the first delivery's)", again, first)
	}
	next := k.Key(7, false)
	if next == first {
		t.Errorf("a new message reusing packet id 7 got the first one's key %s", first)
	}
	if a, b := k.Key(0, false), k.Key(0, false); a == b {
		t.Errorf("two QoS 0 messages share key %s", a)
	}
	k.NewConnection()
	if k.Key(7, true) == next {
		t.Error("a message on a new connection got a key of the last one")
	}
	if other := hass.NewKeyer(); func() string { other.NewConnection(); return other.Key(7, false) }() == first {
		t.Error("two bridges (a restart) derive the same key")
	}
	if len(first) > 200 {
		t.Errorf("key %q is longer than an idempotency_key may be", first)
	}
}

// TestValues: command payloads decode by the capability's type; state
// and availability payloads follow the value and its quality.
func TestValues(t *testing.T) {
	boolean := &manifests.Capability{Type: manifests.TypeBoolean}
	number := &manifests.Capability{Type: manifests.TypeNumber}
	for _, c := range []struct {
		cap     *manifests.Capability
		payload string
		want    any
	}{{boolean, "ON", true}, {boolean, "off", false}, {boolean, "true", true}, {number, " 21.5", 21.5}, {number, "-3", -3.0}} {
		if v, err := hass.CommandValue(c.cap, c.payload); err != nil || v != c.want {
			t.Errorf("CommandValue(%s, %q) = %v, %v; want %v", c.cap.Type, c.payload, v, err, c.want)
		}
	}
	for _, bad := range []struct {
		cap     *manifests.Capability
		payload string
	}{{boolean, "1"}, {boolean, ""}, {number, "NaN"}, {number, "Inf"}, {number, "warm"}} {
		if v, err := hass.CommandValue(bad.cap, bad.payload); err == nil {
			t.Errorf("CommandValue(%s, %q) = %v, want an error", bad.cap.Type, bad.payload, v)
		}
	}
	for v, want := range map[any]string{true: "ON", false: "OFF", 21.5: "21.5", 1e-05: "0.00001", "auto": "auto"} {
		if got := hass.StatePayload(v); got != want {
			t.Errorf("StatePayload(%v) = %q, want %q", v, got, want)
		}
	}
	for q, want := range map[promcp.Quality]string{promcp.QualityGood: "online", promcp.QualityDegraded: "online",
		promcp.QualityStale: "offline", promcp.QualityError: "offline", "": "offline"} {
		if got := hass.Availability(q); got != want {
			t.Errorf("Availability(%s) = %s, want %s", q, got, want)
		}
	}
}
