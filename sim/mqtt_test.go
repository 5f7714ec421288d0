package sim_test

import (
	"sync"
	"testing"
	"time"

	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/manifests/manifesttest"
	"github.com/promcp/promcp-device/sim"
)

const mqttSite = `version: 1
gateway: home-1
buses:
  - {name: broker, kind: mqtt, mqtt: {broker: "mqtt://127.0.0.1"}}
devices:
  - {name: plug, bus: broker, model: mqtt, mqtt: {preset: tasmota, topic: plug}, sim: {level: true, values: {ENERGY.Power: 312}}}
  - {name: door, bus: broker, model: mqtt, mqtt: {preset: zigbee2mqtt, topic: front_door}, sim: {values: {contact: 1, state: 0}}}
capabilities:
  - {name: plug, type: boolean, read: {device: plug, channel: power}, do: {tool: do_set_plug, side_effects: [switches]}}
  - {name: plug_power, type: number, unit: W, read: {device: plug, channel: ENERGY.Power}}
  - {name: door, type: boolean, read: {device: door, channel: contact}}
  - {name: light, type: boolean, read: {device: door, channel: state}, do: {tool: do_set_light, side_effects: [light]}}
`

// mqttWorld builds mqttSite on a manual clock and serves its broker until
// the end of the test.
func mqttWorld(t *testing.T) (*sim.World, *sim.ModbusEndpoints) {
	t.Helper()
	w, _ := newWorld(t, manifesttest.Parse(t, "site.yml", mqttSite))
	ep, err := w.StartLines()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ep.Close() })
	return w, ep
}

// recorder keeps the last payload of every topic seen on the broker.
type recorder struct {
	mu    sync.Mutex
	last  map[string]string
	count map[string]int
	seen  chan string
}

func record(t *testing.T, b *sim.Broker) *recorder {
	r := &recorder{last: map[string]string{}, count: map[string]int{}, seen: make(chan string, 256)}
	if err := b.Subscribe("#", 99, func(topic string, payload []byte) {
		r.mu.Lock()
		r.last[topic] = string(payload)
		r.count[topic]++
		r.mu.Unlock()
		select {
		case r.seen <- topic:
		default:
		}
	}); err != nil {
		t.Fatal(err)
	}
	return r
}

// wait waits until topic carries want; the bound only ends a hung test.
func (r *recorder) wait(t *testing.T, topic, want string) {
	t.Helper()
	deadline := time.After(2 * time.Minute)
	for {
		r.mu.Lock()
		got := r.last[topic]
		r.mu.Unlock()
		if got == want {
			return
		}
		select {
		case <-r.seen:
		case <-deadline:
			t.Fatalf("%s = %q, want %q", topic, got, want)
		}
	}
}

// next waits for a message on topic after the n-th and returns it.
func (r *recorder) next(t *testing.T, topic string, n int) string {
	t.Helper()
	deadline := time.After(2 * time.Minute)
	for {
		r.mu.Lock()
		got, c := r.last[topic], r.count[topic]
		r.mu.Unlock()
		if c > n {
			return got
		}
		select {
		case <-r.seen:
		case <-deadline:
			t.Fatalf("no new message on %s", topic)
		}
	}
}

func (r *recorder) seenCount(topic string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.count[topic]
}

// The simulated devices publish on the topics, and in the payloads, that
// Tasmota and Zigbee2MQTT use, obey their commands, and publish their
// Last Will when taken offline.
func TestSimulatedMQTTDevicesSpeakAsTheFirmware(t *testing.T) {
	w, ep := mqttWorld(t)
	if addr, ok := ep.Address("broker"); !ok || addr != ep.Broker.Addr() {
		t.Fatalf("bus broker served at %q, broker at %q", addr, ep.Broker.Addr())
	}
	r := record(t, ep.Broker)
	// Retained state and availability are there for a late subscriber;
	// the rest comes with the next republish.
	r.wait(t, "tele/plug/LWT", "Online")
	r.wait(t, "zigbee2mqtt/front_door/availability", `{"state":"online"}`)
	r.wait(t, "zigbee2mqtt/front_door", `{"contact":true,"state":"OFF"}`)
	r.wait(t, "stat/plug/POWER", "ON")
	r.wait(t, "tele/plug/SENSOR", `{"ENERGY":{"Power":312},"Time":"1970-01-01T00:00:00"}`)

	ep.Broker.Publish("cmnd/plug/POWER", []byte("TOGGLE"), false)
	r.wait(t, "stat/plug/POWER", "OFF")
	ep.Broker.Publish("zigbee2mqtt/front_door/set", []byte(`{"state":"ON"}`), false)
	r.wait(t, "zigbee2mqtt/front_door", `{"contact":true,"state":"ON"}`)

	if err := w.SetMQTTIgnoresCommands("plug", true); err != nil {
		t.Fatal(err)
	}
	ep.Broker.Publish("cmnd/plug/POWER", []byte("ON"), false)
	// The next state the plug publishes (its periodic report) is still off.
	if got := r.next(t, "stat/plug/POWER", r.seenCount("stat/plug/POWER")); got != "OFF" {
		t.Errorf("a plug that ignores commands: stat/plug/POWER = %q after ON, want OFF", got)
	}

	if err := w.SetMQTTOnline("plug", false); err != nil {
		t.Fatal(err)
	}
	r.wait(t, "tele/plug/LWT", "Offline")
	if err := w.SetMQTTOnline("door", false); err != nil {
		t.Fatal(err)
	}
	r.wait(t, "zigbee2mqtt/front_door/availability", `{"state":"offline"}`)
	if err := w.SetMQTTOnline("nothing", false); err == nil {
		t.Error("SetMQTTOnline of an unknown device: no error")
	}
}

// Faults from a scenario (or injected): dropout takes the device off the
// broker with its Last Will until cleared; stuck silences it; nack does
// not apply to a device on a broker.
func TestMQTTDeviceFaults(t *testing.T) {
	w, ep := mqttWorld(t)
	r := record(t, ep.Broker)
	r.wait(t, "tele/plug/LWT", "Online")
	if err := w.Inject("plug", manifests.Fault{Kind: manifests.FaultNACK}); err == nil {
		t.Error("nack injected on an mqtt device: no error")
	}
	if err := w.Inject("plug", manifests.Fault{Kind: manifests.FaultDropout}); err != nil {
		t.Fatal(err)
	}
	r.wait(t, "tele/plug/LWT", "Offline")
	w.Clear("plug")
	r.wait(t, "tele/plug/LWT", "Online")

	if err := w.Inject("door", manifests.Fault{Kind: manifests.FaultStuck}); err != nil {
		t.Fatal(err)
	}
	// Two reports of the plug later, a whole round of reports has begun
	// after the fault was injected: from then on the door publishes
	// nothing while the plug goes on.
	n := r.seenCount("stat/plug/POWER")
	r.next(t, "stat/plug/POWER", n+1)
	door := r.seenCount("zigbee2mqtt/front_door")
	r.next(t, "stat/plug/POWER", n+3)
	if got := r.seenCount("zigbee2mqtt/front_door"); got != door {
		t.Errorf("a stuck (silent) door published %d messages", got-door)
	}
}
