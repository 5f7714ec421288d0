// Package hass bridges a gateway to Home Assistant over MQTT: it publishes
// Home Assistant's MQTT discovery configuration (retained, under
// <discovery_prefix>/<component>/<node_id>/<object_id>/config) for every
// read_* (a sensor, or a binary_sensor for a boolean) and every do_* (a
// switch for a boolean, a number bounded by its constraints, a select for
// an enum), publishes each capability's state when it changes and its
// availability from its quality (online while good or degraded, offline
// on error or stale), and takes Home Assistant's commands back through the
// gateway's own do_* tools, as a named caller with its own role: policy
// decides them as it decides an agent's, and a refused command is reported
// back (the real state re-published, the refusal on the attributes topic,
// a log line), never applied.
package hass

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"

	"github.com/promcp/promcp-device/manifests"
)

// Payloads of the state and availability topics.
const (
	On      = "ON"
	Off     = "OFF"
	Online  = "online"
	Offline = "offline"
)

// Entity is one Home Assistant entity the bridge publishes: the read of a
// capability, or its action.
type Entity struct {
	// Component is Home Assistant's MQTT platform: sensor, binary_sensor,
	// switch, number or select.
	Component string
	// ObjectID is the capability's name for its read, the do_* tool's for
	// its action; unique within the gateway.
	ObjectID string
	// Tool is the tool behind the entity: read_<capability> or the do_*.
	Tool string
	Cap  *manifests.Capability
}

// Entities lists the entities of caps: a read entity for each, then an
// action entity for each that has a do_*.
func Entities(caps []*manifests.Capability) []Entity {
	var out []Entity
	for _, c := range caps {
		comp := "sensor"
		if c.Type == manifests.TypeBoolean {
			comp = "binary_sensor"
		}
		out = append(out, Entity{Component: comp, ObjectID: c.Name, Tool: "read_" + c.Name, Cap: c})
	}
	for _, c := range caps {
		if c.Do == nil {
			continue
		}
		comp := "number"
		switch c.Type {
		case manifests.TypeBoolean:
			comp = "switch"
		case manifests.TypeEnum:
			comp = "select"
		}
		out = append(out, Entity{Component: comp, ObjectID: c.Do.Tool, Tool: c.Do.Tool, Cap: c})
	}
	return out
}

// Topics are where one gateway's entities live.
type Topics struct {
	// Discovery is Home Assistant's discovery prefix ("homeassistant").
	Discovery string
	// Base is the root of the bridge's own topics ("promcp/greenhouse-1").
	Base string
	// Node is the gateway's node id in discovery topics.
	Node string
}

var nodeRE = regexp.MustCompile(`[^a-zA-Z0-9_-]`)

// NodeID is a gateway name as a discovery node id: characters other than
// letters, digits, _ and - become _.
func NodeID(gateway string) string { return nodeRE.ReplaceAllString(gateway, "_") }

// Config is the discovery topic of e.
func (t Topics) Config(e Entity) string {
	return t.Discovery + "/" + e.Component + "/" + t.Node + "/" + e.ObjectID + "/config"
}

// Status is the gateway's availability topic (its Last Will: offline).
func (t Topics) Status() string { return t.Base + "/status" }

// State is the state topic of capability c: its value, as Home Assistant
// reads it.
func (t Topics) State(c string) string { return t.Base + "/" + c + "/state" }

// Availability is the availability topic of capability c, from its quality.
func (t Topics) Availability(c string) string { return t.Base + "/" + c + "/availability" }

// Attributes is the JSON attributes topic of capability c: quality, its
// reason, the time of the reading, and the last command and its outcome.
func (t Topics) Attributes(c string) string { return t.Base + "/" + c + "/attributes" }

// Command is the command topic of do_* tool.
func (t Topics) Command(tool string) string { return t.Base + "/" + tool + "/set" }

// Device is the device block every entity of the gateway shares.
type Device struct {
	Identifiers  []string `json:"identifiers"`
	Name         string   `json:"name"`
	Manufacturer string   `json:"manufacturer,omitempty"`
	Model        string   `json:"model,omitempty"`
	SWVersion    string   `json:"sw_version,omitempty"`
	// ConfigurationURL opens the gateway's console, when it serves one.
	ConfigurationURL string `json:"configuration_url,omitempty"`
}

// Origin names the software that published the discovery.
type Origin struct {
	Name       string `json:"name"`
	SWVersion  string `json:"sw_version,omitempty"`
	SupportURL string `json:"support_url,omitempty"`
}

// Discovery returns the discovery payload of e.
func Discovery(e Entity, t Topics, dev Device, org Origin) ([]byte, error) {
	c := e.Cap
	p := map[string]any{
		"name":                  displayName(e),
		"unique_id":             t.Node + "_" + e.ObjectID,
		"device":                dev,
		"origin":                org,
		"state_topic":           t.State(c.Name),
		"json_attributes_topic": t.Attributes(c.Name),
		"availability":          []map[string]string{{"topic": t.Status()}, {"topic": t.Availability(c.Name)}},
		"availability_mode":     "all",
		"qos":                   1,
	}
	if c.Unit != "" && c.Type != manifests.TypeBoolean && c.Type != manifests.TypeEnum {
		p["unit_of_measurement"] = c.Unit
	}
	dc, sc := classes(c)
	switch e.Component {
	case "sensor":
		if c.Type == manifests.TypeEnum && c.Do != nil && len(c.Do.Constraints.Enum) > 0 {
			p["device_class"], p["options"] = "enum", c.Do.Constraints.Enum
			break
		}
		setIf(p, "device_class", dc)
		setIf(p, "state_class", sc)
	case "binary_sensor":
		p["payload_on"], p["payload_off"] = On, Off
	case "switch":
		p["command_topic"] = t.Command(e.Tool)
		p["payload_on"], p["payload_off"], p["state_on"], p["state_off"] = On, Off, On, Off
		p["optimistic"] = false
	case "number":
		p["command_topic"] = t.Command(e.Tool)
		setIf(p, "device_class", dc)
		numberRange(p, c)
		p["optimistic"] = false
	case "select":
		p["command_topic"] = t.Command(e.Tool)
		p["options"] = c.Do.Constraints.Enum
		p["optimistic"] = false
	}
	return json.Marshal(p)
}

func setIf(p map[string]any, k, v string) {
	if v != "" {
		p[k] = v
	}
}

// numberRange sets a number entity's min, max and step from the action's
// constraints; without a bound, a number is a box (Home Assistant's
// defaults, 1 to 100, would refuse the values the action takes).
func numberRange(p map[string]any, c *manifests.Capability) {
	k := c.Do.Constraints
	lo, hi, step := -1e9, 1e9, 0.001
	if c.Type == manifests.TypeInteger {
		step = 1
	}
	if k.Min != nil {
		lo = *k.Min
	}
	if k.Max != nil {
		hi = *k.Max
	}
	if k.Step != nil && *k.Step > 0 {
		step = *k.Step
	}
	p["min"], p["max"], p["step"] = lo, hi, step
	p["mode"] = "slider"
	if k.Min == nil || k.Max == nil {
		p["mode"] = "box"
	}
}

// displayName is the entity's name: the capability's name in words, and
// "set" for an action ("Temperature zone1", "Heater set").
func displayName(e Entity) string {
	n := strings.ReplaceAll(e.Cap.Name, "_", " ")
	n = strings.ToUpper(n[:1]) + n[1:]
	if e.Tool != "read_"+e.Cap.Name {
		n += " set"
	}
	return n
}

// unitClasses maps a unit to the Home Assistant device class whose units
// include it (sensor and number device classes), and its state class.
var unitClasses = map[string][2]string{
	"°C": {"temperature", "measurement"}, "°F": {"temperature", "measurement"}, "K": {"temperature", "measurement"},
	"Pa": {"pressure", "measurement"}, "hPa": {"pressure", "measurement"}, "kPa": {"pressure", "measurement"},
	"bar": {"pressure", "measurement"}, "mbar": {"pressure", "measurement"}, "psi": {"pressure", "measurement"},
	"W": {"power", "measurement"}, "kW": {"power", "measurement"},
	"Wh": {"energy", "total_increasing"}, "kWh": {"energy", "total_increasing"}, "MWh": {"energy", "total_increasing"},
	"V": {"voltage", "measurement"}, "mV": {"voltage", "measurement"},
	"A": {"current", "measurement"}, "mA": {"current", "measurement"},
	"Hz": {"frequency", "measurement"}, "kHz": {"frequency", "measurement"},
	"lx": {"illuminance", "measurement"},
}

// classes returns the device class and state class of a number or
// integer capability: from its unit, and for "%" from its tags
// (humidity, moisture, battery); "" where none fits.
func classes(c *manifests.Capability) (device, state string) {
	if c.Type != manifests.TypeNumber && c.Type != manifests.TypeInteger {
		return "", ""
	}
	if dc, ok := unitClasses[c.Unit]; ok {
		return dc[0], dc[1]
	}
	switch {
	case c.Unit == "%" && slices.Contains(c.Tags, "humidity"):
		return "humidity", "measurement"
	case c.Unit == "%" && slices.Contains(c.Tags, "moisture"):
		return "moisture", "measurement"
	case c.Unit == "%" && slices.Contains(c.Tags, "battery"):
		return "battery", "measurement"
	case c.Unit == "ppm" && (slices.Contains(c.Tags, "co2") || slices.Contains(c.Tags, "carbon_dioxide")):
		return "carbon_dioxide", "measurement"
	}
	return "", "measurement"
}
