package capabilities_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/promcp/promcp-device/capabilities"
	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/manifests/manifesttest"
	"github.com/promcp/promcp-device/promcp"
	"github.com/promcp/promcp-device/sim"
)

const mqttManifest = `version: 1
gateway: greenhouse-1
buses:
  - name: broker
    kind: mqtt
    mqtt: {broker: "mqtt://127.0.0.1:1883"}
devices:
  - name: door
    bus: broker
    model: mqtt
    mqtt: {preset: zigbee2mqtt, topic: door}
    sim: {values: {contact: 1, battery: 80}}
  - name: plug
    bus: broker
    model: mqtt
    mqtt: {preset: tasmota, topic: plug}
    sim: {level: true, values: {ENERGY.Power: 300}}
capabilities:
  - name: door_closed
    type: boolean
    ttl: 10s
    read: {device: door, channel: contact}
  - name: door_battery
    type: number
    unit: "%"
    ttl: 10s
    health: {max_stale: 1m}
    read: {device: door, channel: battery}
  - name: plug
    type: boolean
    ttl: 10s
    read: {device: plug, channel: power}
    do: {tool: do_set_plug, side_effects: [switches the load], settle: 1s}
  - name: plug_power
    type: number
    unit: W
    ttl: 10s
    read: {device: plug, channel: ENERGY.Power}
`

// openMQTT opens the manifest's capabilities against the simulator's
// embedded broker and simulated devices, on clk.
func openMQTT(t *testing.T, clk *clock.Manual) (*capabilities.Set, *sim.World, *sim.Broker) {
	return openMQTTManifest(t, clk, mqttManifest)
}

func openMQTTManifest(t *testing.T, clk *clock.Manual, text string) (*capabilities.Set, *sim.World, *sim.Broker) {
	t.Helper()
	m := manifesttest.Parse(t, "mqtt.yml", text)
	w, err := sim.New(m, clk)
	if err != nil {
		t.Fatal(err)
	}
	ep, err := w.StartLines()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ep.Close() })
	hw := capabilities.HardwareFuncs{TCP: func(ctx context.Context, b manifests.Bus) (net.Conn, error) {
		addr, _ := ep.Address(b.Name)
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}}
	set, err := capabilities.Open(t.Context(), m, hw, capabilities.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { set.Close() })
	return set, w, ep.Broker
}

// eventually reads c until want holds (the message travels through the
// broker), for at most 10 s of real time.
func eventually(t *testing.T, c *capabilities.Capability, what string, want func(capabilities.Reading) bool) capabilities.Reading {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		r := c.ReadWithin(t.Context(), 0)
		if want(r) {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s never came: last %+v", c.Name, what, r)
		}
		time.Sleep(10 * time.Millisecond) // waiting for a message on the broker, not for time to pass
	}
}

// A read is the last message on the state topic, sampled when it arrived:
// good within the TTL, stale past it (the value and its arrival time
// kept), error past max_stale; the device's Last Will (offline on its
// availability topic) makes it error at once, and its return good again.
func TestMQTTMessageAgeAndLastWillFeedQuality(t *testing.T) {
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	clk := clock.NewManual(start)
	set, w, broker := openMQTT(t, clk)
	battery := get(t, set, "door_battery")
	r := eventually(t, battery, "a good reading", func(r capabilities.Reading) bool { return r.Quality == promcp.QualityGood })
	if r.Value != 80.0 || !r.Time.Equal(start) || string(r.Grounds.Raw) == "" {
		t.Fatalf("battery %+v, want 80 sampled at the arrival time with the payload as grounds", r)
	}
	if battery.Source != "greenhouse-1/mqtt:zigbee2mqtt/door" || battery.Binding.Driver != "mqtt" ||
		!strings.Contains(battery.Binding.Address, "zigbee2mqtt/door/availability") || !strings.Contains(battery.Binding.RawForm, "Lite device") {
		t.Errorf("source %q binding %+v", battery.Source, battery.Binding)
	}
	if v := eventually(t, get(t, set, "door_closed"), "contact", func(r capabilities.Reading) bool { return r.Quality == promcp.QualityGood }).Value; v != true {
		t.Errorf("door_closed = %v, want true", v)
	}
	if v := eventually(t, get(t, set, "plug_power"), "power", func(r capabilities.Reading) bool { return r.Quality == promcp.QualityGood }).Value; v != 300.0 {
		t.Errorf("plug_power = %v, want 300", v)
	}

	// The device stops reporting (still connected): once the last message
	// (81, published after it fell silent, so nothing else is in flight)
	// is older than the TTL, the reading is stale, with that value and
	// its own time.
	if err := w.SetMQTTSilent("door", true); err != nil {
		t.Fatal(err)
	}
	broker.Publish("zigbee2mqtt/door", []byte(`{"contact":true,"battery":81}`), true)
	eventually(t, battery, "the last message", func(r capabilities.Reading) bool { return r.Value == 81.0 })
	clk.Advance(11 * time.Second)
	r = battery.ReadWithin(t.Context(), 0)
	if r.Quality != promcp.QualityStale || r.Value != 81.0 || !r.Time.Equal(start) || !strings.Contains(r.Reason, "no new sample for 11 s") {
		t.Fatalf("after the TTL: %+v, want stale 81 from %s", r, start)
	}
	clk.Advance(time.Minute)
	if r = battery.ReadWithin(t.Context(), 0); r.Quality != promcp.QualityError || r.Value != nil {
		t.Fatalf("past max_stale: %+v, want error", r)
	}
	// It reports again: good, stamped now.
	now := clk.Now()
	if err := w.SetMQTTSilent("door", false); err != nil {
		t.Fatal(err)
	}
	r = eventually(t, battery, "a new message", func(r capabilities.Reading) bool { return r.Quality == promcp.QualityGood })
	if !r.Time.Equal(now) {
		t.Errorf("fresh reading sampled %s, want %s", r.Time, now)
	}

	// The device goes offline (its Last Will): error, saying so.
	if err := w.SetMQTTOnline("door", false); err != nil {
		t.Fatal(err)
	}
	r = eventually(t, battery, "error on the Last Will", func(r capabilities.Reading) bool { return r.Quality == promcp.QualityError })
	if !strings.Contains(r.Err.Error(), "offline") || !strings.Contains(r.Err.Error(), "zigbee2mqtt/door/availability") {
		t.Errorf("offline reading %+v", r)
	}
	if err := w.SetMQTTOnline("door", true); err != nil {
		t.Fatal(err)
	}
	eventually(t, battery, "good once back online", func(r capabilities.Reading) bool { return r.Quality == promcp.QualityGood })
}

// A write publishes the command; the simulated Tasmota switches and
// publishes stat/<t>/POWER, which the readback sees.
func TestMQTTWritePublishesTheCommand(t *testing.T) {
	clk := clock.NewManual(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	set, _, _ := openMQTT(t, clk)
	plug := get(t, set, "plug")
	eventually(t, plug, "on", func(r capabilities.Reading) bool { return r.Value == true })
	if !plug.Writable() {
		t.Fatal("plug not writable")
	}
	if err := mustWriter(t, set).Write(t.Context(), plug, false); err != nil {
		t.Fatal(err)
	}
	eventually(t, plug, "off after the command", func(r capabilities.Reading) bool { return r.Value == false })
	if plug.Source != "greenhouse-1/mqtt:tasmota/plug" {
		t.Errorf("source %q", plug.Source)
	}
}

// The credentials file is read from beside the manifest and must be the
// owner's alone; the broker refuses a wrong password.
func TestMQTTCredentialsFile(t *testing.T) {
	b, err := sim.StartBroker(sim.BrokerOptions{Users: map[string]string{"gw": "pa:ss word"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	dir := t.TempDir()
	creds := filepath.Join(dir, "mqtt.credentials")
	os.WriteFile(creds, []byte("gw\npa:ss word\n"), 0o644)
	man := strings.Replace(mqttManifest, `mqtt: {broker: "mqtt://127.0.0.1:1883"}`, `mqtt: {broker: "mqtt://`+b.Addr()+`", credentials: mqtt.credentials}`, 1)
	path := filepath.Join(dir, "m.yml")
	os.WriteFile(path, []byte(man), 0o600)
	m := manifesttest.Load(t, path)
	hw := capabilities.HardwareFuncs{TCP: func(ctx context.Context, bus manifests.Bus) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", bus.Address)
	}}
	if _, err := capabilities.Open(t.Context(), m, hw, capabilities.Options{}); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("a credentials file others may read: %v, want refused", err)
	}
	os.Chmod(creds, 0o600)
	set, err := capabilities.Open(t.Context(), m, hw, capabilities.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	b.Publish("zigbee2mqtt/door", []byte(`{"battery":55}`), true)
	eventually(t, get(t, set, "door_battery"), "a reading through the authenticated connection",
		func(r capabilities.Reading) bool { return r.Value == 55.0 })
}

// One message read many times is one sample: a stuck check counts
// messages, not reads.
func TestMQTTRereadIsNotStuck(t *testing.T) {
	clk := clock.NewManual(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	text := strings.Replace(mqttManifest, "health: {max_stale: 1m}", "health: {max_stale: 1m, stuck_samples: 2}", 1)
	set, w, broker := openMQTTManifest(t, clk, text)
	battery := get(t, set, "door_battery")
	eventually(t, battery, "good", func(r capabilities.Reading) bool { return r.Quality == promcp.QualityGood })
	if err := w.SetMQTTSilent("door", true); err != nil {
		t.Fatal(err)
	}
	broker.Publish("zigbee2mqtt/door", []byte(`{"battery":70}`), true)
	eventually(t, battery, "the last message", func(r capabilities.Reading) bool { return r.Value == 70.0 })
	for range 5 {
		if r := battery.ReadWithin(t.Context(), 0); r.Quality != promcp.QualityGood {
			t.Fatalf("the same message read again: %+v, want good", r)
		}
	}
	clk.Advance(time.Second)
	broker.Publish("zigbee2mqtt/door", []byte(`{"battery":70}`), true)
	r := eventually(t, battery, "a second identical message", func(r capabilities.Reading) bool { return r.Quality == promcp.QualityDegraded })
	if !strings.HasPrefix(r.Reason, "stuck") {
		t.Errorf("second identical message: %+v, want stuck", r)
	}
}
