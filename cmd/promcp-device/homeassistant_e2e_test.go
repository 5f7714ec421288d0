package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/autopaho"
	"github.com/eclipse/paho.golang/paho"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/promcp/promcp-device/internal/testnet"
	"github.com/promcp/promcp-device/sim"
)

// haBroker is the broker Home Assistant would use: Debian's mosquitto
// when installed (CI installs it and sets PROMCP_REQUIRE_MOSQUITTO, so it
// never falls back), else the embedded mochi broker. It returns its
// host:port and its name.
func haBroker(t *testing.T) (string, string) {
	t.Helper()
	bin, err := exec.LookPath("mosquitto")
	if err != nil {
		if os.Getenv("PROMCP_REQUIRE_MOSQUITTO") != "" {
			t.Fatal("mosquitto is required (PROMCP_REQUIRE_MOSQUITTO) but not installed: apt-get install mosquitto")
		}
		t.Log("mosquitto not installed: testing against the embedded broker")
		b, err := sim.StartBroker(sim.BrokerOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b.Addr(), "mochi"
	}
	addr := testnet.FreeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	conf := filepath.Join(t.TempDir(), "mosquitto.conf")
	os.WriteFile(conf, []byte(fmt.Sprintf("listener %s 127.0.0.1\nallow_anonymous true\npersistence false\n", port)), 0o600)
	cmd := exec.Command(bin, "-c", conf)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.Now().Add(time.Minute)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return addr, "mosquitto"
		}
		if time.Now().After(deadline) {
			t.Fatalf("mosquitto on %s did not start: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond) // an external process's readiness
	}
}

// haWatcher is Home Assistant's side of the broker, as far as the test
// needs it: it subscribes to discovery and to the gateway's topics,
// keeps the last payload of each topic and publishes commands.
type haWatcher struct {
	cm   *autopaho.ConnectionManager
	mu   sync.Mutex
	last map[string]string
}

func watchHA(t *testing.T, addr string) *haWatcher {
	t.Helper()
	w := &haWatcher{last: map[string]string{}}
	u, _ := url.Parse("mqtt://" + addr)
	ctx, cancel := context.WithCancel(context.Background())
	cm, err := autopaho.NewConnection(ctx, autopaho.ClientConfig{
		ServerUrls: []*url.URL{u}, KeepAlive: 30, CleanStartOnInitialConnection: true,
		OnConnectionUp: func(cm *autopaho.ConnectionManager, _ *paho.Connack) {
			cm.Subscribe(context.Background(), &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{
				{Topic: "homeassistant/#", QoS: 1}, {Topic: "promcp/#", QoS: 1}}})
		},
		ClientConfig: paho.ClientConfig{ClientID: "test-home-assistant",
			OnPublishReceived: []func(paho.PublishReceived) (bool, error){func(pr paho.PublishReceived) (bool, error) {
				w.mu.Lock()
				w.last[pr.Packet.Topic] = string(pr.Packet.Payload)
				w.mu.Unlock()
				return true, nil
			}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cm.Disconnect(context.Background()); cancel() })
	actx, acancel := context.WithTimeout(ctx, time.Minute)
	defer acancel()
	if err := cm.AwaitConnection(actx); err != nil {
		t.Fatal(err)
	}
	w.cm = cm
	return w
}

// until waits for ok over the payloads seen so far; a minute bounds a
// bridge that never publishes.
func (w *haWatcher) until(t *testing.T, what string, ok func(last map[string]string) bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		w.mu.Lock()
		done := ok(w.last)
		w.mu.Unlock()
		if done {
			return
		}
		if time.Now().After(deadline) {
			w.mu.Lock()
			defer w.mu.Unlock()
			t.Fatalf("never saw %s; last payloads: %v", what, w.last)
		}
		time.Sleep(20 * time.Millisecond) // messages cross the broker
	}
}

func (w *haWatcher) get(topic string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last[topic]
}

// command publishes payload on a command topic at QoS 1, as Home
// Assistant does.
func (w *haWatcher) command(t *testing.T, topic, payload string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := w.cm.Publish(ctx, &paho.Publish{Topic: topic, Payload: []byte(payload), QoS: 1}); err != nil {
		t.Fatal(err)
	}
}

// lastCommand is the last_command of capability c's attributes in last
// (the payloads until passes, or a copy).
func lastCommand(last map[string]string, c string) map[string]any {
	var a struct {
		LastCommand map[string]any `json:"last_command"`
	}
	json.Unmarshal([]byte(last["promcp/greenhouse-1/"+c+"/attributes"]), &a)
	return a.LastCommand
}

// lastCommand is the last_command of capability c's attributes now.
func (w *haWatcher) lastCommand(c string) map[string]any {
	w.mu.Lock()
	defer w.mu.Unlock()
	return lastCommand(w.last, c)
}

// TestHomeAssistantBridge: `serve --sim --homeassistant` on the greenhouse
// against the real broker. A subscriber in Home Assistant's place sees a
// discovery configuration for each of the 14 entities (11 read_*, 3
// do_*), each accepted by Home Assistant's documented schema, the states
// and availability; a switch command actuates the heater through policy,
// audited with the homeassistant caller and its role; commands the policy
// refuses (out of range, then a cooldown) are reported back on the
// attributes topic and in the log, the state stays the real value, and
// the device never holds them. Stopping serve publishes it offline.
func TestHomeAssistantBridge(t *testing.T) {
	t.Parallel()
	addr, brokerName := haBroker(t)
	w := watchHA(t, addr)
	dir := t.TempDir()
	ha := filepath.Join(dir, "homeassistant.yml")
	os.WriteFile(ha, []byte("version: 1\nmqtt: {broker: \"mqtt://"+addr+"\"}\ncaller: {name: homeassistant, role: operator}\npoll: 500ms\n"), 0o600)
	logs, read := logFile(t)
	p := startProc(t, os.Interrupt, logs, binary, `on (http://\S+/mcp)`,
		simServe("--http", "127.0.0.1:0", "--manifest", greenhouse, "--homeassistant", ha, "--state", filepath.Join(dir, "state"))...)
	url := p.addr(t, time.Minute)

	configs := func(last map[string]string) (n int) {
		for k := range last {
			if strings.HasPrefix(k, "homeassistant/") && strings.HasSuffix(k, "/config") {
				n++
			}
		}
		return n
	}
	w.until(t, "14 discovery configurations", func(last map[string]string) bool { return configs(last) == 14 })
	checkDiscovery(t, w)
	w.until(t, "the heater's state and the gateway online", func(last map[string]string) bool {
		return last["promcp/greenhouse-1/heater/state"] == "OFF" && last["promcp/greenhouse-1/status"] == "online" &&
			last["promcp/greenhouse-1/heater/availability"] == "online" && last["promcp/greenhouse-1/temperature_zone1/state"] != ""
	})
	t.Logf("broker %s: zone 1 at %s °C, availability %s", brokerName, w.get("promcp/greenhouse-1/temperature_zone1/state"),
		w.get("promcp/greenhouse-1/temperature_zone1/availability"))

	w.command(t, "promcp/greenhouse-1/do_set_heater/set", "ON")
	w.until(t, "the heater on", func(last map[string]string) bool { return last["promcp/greenhouse-1/heater/state"] == "ON" })
	if lc := w.lastCommand("heater"); lc["status"] != "success" || lc["applied_value"] != true {
		t.Errorf("heater attributes after ON: last_command %v, want success, applied true", lc)
	}

	refused := func(payload, permission string) {
		t.Helper()
		w.command(t, "promcp/greenhouse-1/do_set_fan_speed/set", payload)
		w.until(t, "the refusal of "+payload, func(last map[string]string) bool {
			return lastCommand(last, "fan_speed_setpoint")["payload"] == payload
		})
		if lc := w.lastCommand("fan_speed_setpoint"); lc["status"] != "refused" || lc["permission"] != permission || lc["reason"] == "" {
			t.Errorf("fan speed %s: last_command %v, want refused, %s, with a reason", payload, lc, permission)
		}
	}
	refused("60", "out_of_range") // above the constraints' 50 Hz
	w.command(t, "promcp/greenhouse-1/do_set_fan_speed/set", "20")
	w.until(t, "the fan at 20 Hz", func(last map[string]string) bool { return last["promcp/greenhouse-1/fan_speed_setpoint/state"] == "20" })
	refused("25", "cooldown_active") // the policy's 5 minute cooldown
	if got := w.get("promcp/greenhouse-1/fan_speed_setpoint/state"); got != "20" {
		t.Errorf("fan speed state after the refused 25: %q, want the real value 20", got)
	}
	s := httpSession(t, url, mcp.ProtocolVersion20251125)
	if body, _ := s.call("read_fan_speed_setpoint", map[string]any{}); body["value"] != 20.0 {
		t.Errorf("read_fan_speed_setpoint = %v, want 20: a refused command was applied", body)
	}
	if l := read(); !strings.Contains(l, "homeassistant: command refused, not applied") || !strings.Contains(l, "permission=cooldown_active") {
		t.Errorf("no refusal logged:\n%s", l)
	}
	stopProc(t, p.cmd, os.Interrupt)
	checkHAAudit(t, filepath.Join(dir, "state", "audit.jsonl"))
	w.until(t, "the gateway offline", func(last map[string]string) bool { return last["promcp/greenhouse-1/status"] == "offline" })
}

// checkDiscovery validates every discovery configuration against the
// schema of its platform.
func checkDiscovery(t *testing.T, w *haWatcher) {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	w.mu.Lock()
	defer w.mu.Unlock()
	kinds := map[string]int{}
	for topic, payload := range w.last {
		parts := strings.Split(topic, "/")
		if parts[0] != "homeassistant" || parts[len(parts)-1] != "config" || parts[2] != "greenhouse-1" {
			continue
		}
		kinds[parts[1]]++
		s, err := c.Compile("../../hass/testdata/homeassistant-mqtt-discovery.schema.json#/$defs/" + parts[1])
		if err != nil {
			t.Fatalf("%s: %v", topic, err)
		}
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(payload))
		if err == nil {
			err = s.Validate(v)
		}
		if err != nil {
			t.Errorf("%s: %v\n%s", topic, err, payload)
		}
	}
	if kinds["sensor"] != 8 || kinds["binary_sensor"] != 3 || kinds["switch"] != 2 || kinds["number"] != 1 {
		t.Errorf("discovered %v, want 8 sensors, 3 binary sensors, 2 switches, 1 number", kinds)
	}
}

// checkHAAudit finds the heater's success and the two refusals in the
// audit log under the homeassistant caller with its role, and no result
// that applied a refused value.
func checkHAAudit(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got []string
	lines := bufio.NewScanner(f)
	lines.Buffer(nil, 1<<20)
	for lines.Scan() {
		var r struct {
			Event, Caller, Role, Tool, Status, Permission string
			Arguments                                     map[string]any
		}
		json.Unmarshal(lines.Bytes(), &r)
		if r.Caller != "homeassistant" || r.Role != "operator" || !strings.HasPrefix(fmt.Sprint(r.Arguments["idempotency_key"]), "homeassistant-") {
			continue
		}
		got = append(got, fmt.Sprintf("%s %s %v %s%s", r.Event, r.Tool, r.Arguments["value"], r.Status, r.Permission))
	}
	want := []string{"attempt do_set_heater true ", "result do_set_heater true success", "refused do_set_fan_speed 60 failedout_of_range",
		"attempt do_set_fan_speed 20 ", "result do_set_fan_speed 20 success", "refused do_set_fan_speed 25 failedcooldown_active"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("audit records of the homeassistant caller:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
