package manifests_test

import (
	"strings"
	"testing"
	"time"

	"github.com/promcp/promcp-device/manifests"
)

// TestParseHomeAssistant: the bridge file's defaults, and each problem
// reported at its file:line:col with the field named.
func TestParseHomeAssistant(t *testing.T) {
	m, err := manifests.Load("examples/greenhouse.yml")
	if err != nil {
		t.Fatal(err)
	}
	roles := []string{"viewer", "operator"}
	h, err := manifests.ParseHomeAssistant("ha.yml", []byte("version: 1\nmqtt: {broker: \"mqtt://127.0.0.1:1883\"}\ncaller: {role: operator}\n"), m, roles)
	if err != nil {
		t.Fatal(err)
	}
	if h.DiscoveryPrefix != "homeassistant" || h.Topic != "promcp/greenhouse-1" || h.Caller != (manifests.HACaller{Name: "homeassistant", Role: "operator"}) ||
		h.Poll != 5*time.Second || h.MQTT.Broker != "mqtt://127.0.0.1:1883" || len(h.Capabilities) != 0 {
		t.Errorf("defaults: %+v", h)
	}
	bad := `version: 1
mqtt: {broker: "http://127.0.0.1", protocol: 4}
discovery_prefix: "home/#"
caller: {name: Home-Assistant, role: opertor}
poll: 10ms
capabilities: [heater, boiler]
extra: 1
`
	_, err = manifests.ParseHomeAssistant("ha.yml", []byte(bad), m, roles)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		`ha.yml:2:16: mqtt.broker: out of range: "http://127.0.0.1"`,
		"ha.yml:2:46: mqtt.protocol: not allowed: 4",
		`ha.yml:3:19: discovery_prefix: unknown value "home/#"`,
		`ha.yml:4:16: caller.name: bad name "Home-Assistant"`,
		`ha.yml:4:38: caller.role: undefined "opertor" (want a role the policy declares: viewer or operator)`,
		"ha.yml:5:7: poll: out of range 10ms",
		`ha.yml:6:24: capabilities[1]: undefined "boiler" (want a capability of examples/greenhouse.yml)`,
		"ha.yml:7:1: extra: unknown field",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
	if _, err := manifests.ParseHomeAssistant("ha.yml", []byte("version: 1\n"), m, roles); err == nil ||
		!strings.Contains(err.Error(), "mqtt") || !strings.Contains(err.Error(), "caller") {
		t.Errorf("empty file: %v, want mqtt and caller missing", err)
	}
}
