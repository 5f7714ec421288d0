//go:build !nomqtt

package sim

import (
	"crypto/subtle"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/listeners"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/promcp/promcp-device/manifests"
)

// Broker is an embedded MQTT broker (mochi-mqtt) on loopback: the
// simulator's devices publish on it under `serve --sim`, and tests start
// one as the real broker their clients talk to.
type Broker struct {
	srv  *mochi.Server
	addr string
}

// BrokerOptions configure StartBroker.
type BrokerOptions struct {
	// Addr is the listen address; "" means 127.0.0.1 with a free port.
	Addr string
	// TLS serves mqtts when set.
	TLS *tls.Config
	// Users, when set, are the only username/password pairs accepted;
	// nil accepts anyone.
	Users map[string]string
	// MaxProtocol, when set, refuses clients that connect with a newer
	// protocol level (4 makes a broker that speaks MQTT 3.1.1 only, as
	// the MQTT listener of a NATS server does).
	MaxProtocol byte
}

// maxProtocol refuses a CONNECT above its protocol level.
type maxProtocol struct {
	mochi.HookBase
	level byte
}

func (h *maxProtocol) ID() string { return "max-protocol" }

func (h *maxProtocol) Provides(b byte) bool { return b == mochi.OnConnect }

func (h *maxProtocol) OnConnect(_ *mochi.Client, pk packets.Packet) error {
	if pk.ProtocolVersion > h.level {
		return packets.ErrUnsupportedProtocolVersion
	}
	return nil
}

// usersHook lets a client connect when users is nil or its username and
// password are one of users' pairs, and lets every client publish and
// subscribe anywhere. It replaces mochi's hooks/auth (AllowHook, and its
// ledger with one allowing rule per pair and no ACL), which links a YAML
// parser (gopkg.in/yaml.v3, 0.16 MiB of the binary) for its ledger files.
type usersHook struct {
	mochi.HookBase
	users map[string]string
}

func (h *usersHook) ID() string { return "sim-users" }

func (h *usersHook) Provides(b byte) bool {
	return b == mochi.OnConnectAuthenticate || b == mochi.OnACLCheck
}

func (h *usersHook) OnConnectAuthenticate(cl *mochi.Client, pk packets.Packet) bool {
	if h.users == nil {
		return true
	}
	p, ok := h.users[string(cl.Properties.Username)]
	return ok && subtle.ConstantTimeCompare([]byte(p), pk.Connect.Password) == 1
}

func (h *usersHook) OnACLCheck(*mochi.Client, string, bool) bool { return true }

// StartBroker starts an embedded broker.
func StartBroker(o BrokerOptions) (*Broker, error) {
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	srv := mochi.New(&mochi.Options{InlineClient: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := srv.AddHook(&usersHook{users: o.Users}, nil); err != nil {
		return nil, err
	}
	if o.MaxProtocol != 0 {
		if err := srv.AddHook(&maxProtocol{level: o.MaxProtocol}, nil); err != nil {
			return nil, err
		}
	}
	tcp := listeners.NewTCP(listeners.Config{Type: "tcp", ID: "sim", Address: o.Addr, TLSConfig: o.TLS})
	if err := srv.AddListener(tcp); err != nil {
		return nil, fmt.Errorf("sim: broker on %s: %w", o.Addr, err)
	}
	if err := srv.Serve(); err != nil {
		return nil, err
	}
	return &Broker{srv: srv, addr: tcp.Address()}, nil
}

// Addr is the broker's host:port.
func (b *Broker) Addr() string { return b.addr }

// Publish publishes from inside the broker (as a device would).
func (b *Broker) Publish(topic string, payload []byte, retain bool) error {
	return b.srv.Publish(topic, payload, retain, 1)
}

// Subscribe calls fn with every message on filter.
func (b *Broker) Subscribe(filter string, id int, fn func(topic string, payload []byte)) error {
	return b.srv.Subscribe(filter, id, func(_ *mochi.Client, _ packets.Subscription, pk packets.Packet) {
		fn(pk.TopicName, pk.Payload)
	})
}

// Close stops the broker and drops its clients.
func (b *Broker) Close() error { return b.srv.Close() }

// mqttWorld is the simulated MQTT devices of a World.
type mqttWorld struct {
	caps []manifests.Capability
	devs []*mqttDevice
}

// mqttDevice is a simulated Tasmota or Zigbee2MQTT device: it publishes
// its state, obeys commands, and can be taken offline (its Last Will).
type mqttDevice struct {
	d manifests.Device

	mu      sync.Mutex
	b       *Broker
	values  map[string]any // by channel name
	online  bool
	ignores bool // commands are acknowledged but not applied
	silent  bool // stays connected but publishes nothing
	// A scenario's dropout (Last Will: offline) and stuck (silent) fault.
	faultOffline, faultSilent bool

	now  func() time.Time // the world's clock
	last time.Time        // a Shelly's meters integrated up to here
}

func addMQTTDevice(w *World, d manifests.Device, _ *build) error {
	if d.MQTT == nil || d.MQTT.Preset == "" && len(d.MQTT.Channels) == 0 {
		return nil // nothing to publish
	}
	if w.mqtt == nil {
		w.mqtt = &mqttWorld{}
	}
	w.mqtt.devs = append(w.mqtt.devs, &mqttDevice{d: d, values: map[string]any{}, online: true, now: w.clk.Now})
	return nil
}

// initial fills each device's channels from its capabilities' types and
// the device's sim values (sim.values by channel; sim.level for power).
func (mw *mqttWorld) initial() {
	for _, dev := range mw.devs {
		for _, c := range mw.caps {
			if c.Read.Device != dev.d.Name {
				continue
			}
			var f float64
			var ok bool
			if dev.d.Sim != nil {
				f, ok = dev.d.Sim.Values[c.Read.Channel]
			}
			switch c.Type {
			case manifests.TypeBoolean:
				dev.values[c.Read.Channel] = ok && f != 0 || !ok && dev.d.Sim != nil && dev.d.Sim.Level
			case manifests.TypeEnum:
				if c.Do != nil && len(c.Do.Constraints.Enum) > 0 {
					dev.values[c.Read.Channel] = c.Do.Constraints.Enum[0]
				}
			default:
				dev.values[c.Read.Channel] = f
			}
		}
		if dev.isShelly() {
			dev.shellyDefaults()
		}
	}
}

// start connects the devices to b: availability and state retained, the
// command topics subscribed.
func (mw *mqttWorld) start(b *Broker) error {
	mw.initial()
	for i, dev := range mw.devs {
		dev.mu.Lock()
		dev.b = b
		dev.mu.Unlock()
		dev.publishAvailability()
		dev.publishState()
		t := dev.d.MQTT.Topic
		filters := []string{"cmnd/" + t + "/+"}
		switch dev.d.MQTT.Preset {
		case manifests.PresetZigbee2MQTT:
			filters = []string{"zigbee2mqtt/" + t + "/set"}
		case manifests.PresetShelly:
			filters = []string{"shellies/" + t + "/relay/+/command"}
		case "":
			filters = nil
			for _, c := range dev.d.MQTT.Channels {
				if ch, _ := dev.d.MQTT.Channel(c.Name); ch.Command != "" {
					filters = append(filters, ch.Command)
				}
			}
		}
		for _, filter := range filters {
			if err := b.Subscribe(filter, i+1, dev.command); err != nil {
				return fmt.Errorf("sim: mqtt device %s: %w", dev.d.Name, err)
			}
		}
	}
	return nil
}

func (dev *mqttDevice) word(on bool) string {
	if on {
		return "ON"
	}
	return "OFF"
}

func (dev *mqttDevice) publishAvailability() {
	dev.mu.Lock()
	b, online, t := dev.b, dev.online && !dev.faultOffline, dev.d.MQTT.Topic
	dev.mu.Unlock()
	if b == nil {
		return
	}
	if dev.d.MQTT.Preset == "" {
		if topic, offline := dev.d.MQTT.AvailabilityTopic(); topic != "" {
			p := "online"
			if !online {
				p = offline
			}
			b.Publish(topic, []byte(p), true)
		}
		return
	}
	if dev.isShelly() {
		dev.publishShellyOnline(b, online)
		return
	}
	if dev.d.MQTT.Preset == manifests.PresetTasmota {
		p := "Offline"
		if online {
			p = "Online"
		}
		b.Publish("tele/"+t+"/LWT", []byte(p), true)
		return
	}
	p := `{"state":"offline"}`
	if online {
		p = `{"state":"online"}`
	}
	b.Publish("zigbee2mqtt/"+t+"/availability", []byte(p), true)
}

// publishState publishes as the firmware does: Tasmota stat/<t>/POWERn
// (plain ON/OFF) and tele/<t>/SENSOR (JSON, nested by path), Zigbee2MQTT
// one retained JSON object on zigbee2mqtt/<name>.
func (dev *mqttDevice) publishState() {
	dev.mu.Lock()
	defer dev.mu.Unlock()
	if dev.b == nil || !dev.online || dev.silent || dev.faultOffline || dev.faultSilent {
		return
	}
	t := dev.d.MQTT.Topic
	if dev.d.MQTT.Preset == "" {
		dev.publishGenericLocked()
		return
	}
	if dev.isShelly() {
		dev.publishShellyLocked()
		return
	}
	if dev.d.MQTT.Preset == manifests.PresetZigbee2MQTT {
		obj := map[string]any{}
		for k, v := range dev.values {
			if k == "state" {
				if on, ok := v.(bool); ok {
					v = dev.word(on)
				}
			}
			obj[k] = v
		}
		p, _ := json.Marshal(obj)
		dev.b.Publish("zigbee2mqtt/"+t, p, true)
		return
	}
	sensor := map[string]any{"Time": "1970-01-01T00:00:00"}
	for k, v := range dev.values {
		if p, ok := tasmotaPowerTopic(k); ok {
			on, _ := v.(bool)
			dev.b.Publish("stat/"+t+"/"+p, []byte(dev.word(on)), false)
			continue
		}
		setPath(sensor, k, v)
	}
	if len(sensor) > 1 {
		p, _ := json.Marshal(sensor)
		dev.b.Publish("tele/"+t+"/SENSOR", p, false)
	}
}

// setPath sets v at the dotted path in the JSON object m ("a.b" is
// m["a"]["b"]), making the objects on the way.
func setPath(m map[string]any, path string, v any) {
	parts := strings.Split(path, ".")
	for _, part := range parts[:len(parts)-1] {
		sub, ok := m[part].(map[string]any)
		if !ok {
			sub = map[string]any{}
			m[part] = sub
		}
		m = sub
	}
	m[parts[len(parts)-1]] = v
}

func tasmotaPowerTopic(name string) (string, bool) {
	n := strings.ToLower(name)
	switch {
	case n == "power":
		return "POWER", true
	case len(n) == 6 && strings.HasPrefix(n, "power") && n[5] >= '1' && n[5] <= '8':
		return "POWER" + n[5:], true
	}
	return "", false
}

// command applies a Tasmota cmnd/<t>/POWERn (ON, OFF, TOGGLE, 1, 0) or a
// Zigbee2MQTT set object, then publishes the new state.
func (dev *mqttDevice) command(topic string, payload []byte) {
	dev.mu.Lock()
	if !dev.online || dev.ignores || dev.faultOffline {
		dev.mu.Unlock()
		return
	}
	if dev.d.MQTT.Preset == "" {
		dev.genericCommandsLocked(topic, payload)
	} else if dev.isShelly() {
		dev.shellyCommandLocked(topic, payload)
	} else if dev.d.MQTT.Preset == manifests.PresetZigbee2MQTT {
		var set map[string]any
		if json.Unmarshal(payload, &set) == nil {
			for k, v := range set {
				old, known := dev.values[k]
				if !known {
					continue
				}
				switch old.(type) {
				case bool:
					if s, ok := v.(string); ok {
						v = strings.EqualFold(s, "ON")
					}
				}
				dev.values[k] = v
			}
		}
	} else {
		cmd := topic[strings.LastIndexByte(topic, '/')+1:]
		for k, v := range dev.values {
			p, ok := tasmotaPowerTopic(k)
			if !ok || !strings.EqualFold(p, cmd) {
				continue
			}
			on, _ := v.(bool)
			switch s := strings.ToUpper(strings.TrimSpace(string(payload))); s {
			case "ON", "1", "TRUE":
				on = true
			case "OFF", "0", "FALSE":
				on = false
			case "TOGGLE", "2":
				on = !on
			}
			dev.values[k] = on
		}
	}
	dev.mu.Unlock()
	dev.publishState()
}

// tick republishes every device's state, as Tasmota's TelePeriod and a
// reporting Zigbee sensor do.
func (mw *mqttWorld) tick() {
	for _, dev := range mw.devs {
		dev.publishState()
	}
}

// mqttFaults applies the scenario's faults to the simulated MQTT devices:
// dropout takes a device offline (its Last Will is published) until the
// fault ends; stuck makes it fall silent (its readings go stale).
func (w *World) mqttFaults(mw *mqttWorld) {
	now := w.clk.Now()
	for _, dev := range mw.devs {
		w.mu.Lock()
		fs := w.faultLocked(dev.d.Name, now)
		w.mu.Unlock()
		offline, silent := fs.is(manifests.FaultDropout), fs.is(manifests.FaultStuck)
		dev.mu.Lock()
		changed := dev.faultOffline != offline
		dev.faultOffline, dev.faultSilent = offline, silent
		dev.mu.Unlock()
		if changed {
			dev.publishAvailability()
		}
	}
}

func (w *World) mqttDevice(name string) (*mqttDevice, error) {
	if w.mqtt != nil {
		for _, d := range w.mqtt.devs {
			if d.d.Name == name {
				return d, nil
			}
		}
	}
	return nil, fmt.Errorf("sim: no simulated mqtt device %q", name)
}

// setMQTT changes the simulated MQTT device called name with set, under
// its lock, and returns it.
func (w *World) setMQTT(name string, set func(d *mqttDevice)) (*mqttDevice, error) {
	d, err := w.mqttDevice(name)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	set(d)
	d.mu.Unlock()
	return d, nil
}

// SetMQTTOnline takes a simulated MQTT device off the broker (its Last
// Will, Offline, is published) or brings it back.
func (w *World) SetMQTTOnline(name string, online bool) error {
	d, err := w.setMQTT(name, func(d *mqttDevice) { d.online = online })
	if err != nil {
		return err
	}
	d.publishAvailability()
	d.publishState()
	return nil
}

// SetMQTTIgnoresCommands makes a simulated MQTT device acknowledge
// commands without applying them (a stuck relay): a do_* reads back
// partial.
func (w *World) SetMQTTIgnoresCommands(name string, ignores bool) error {
	_, err := w.setMQTT(name, func(d *mqttDevice) { d.ignores = ignores })
	return err
}

// SetMQTTSilent makes a simulated MQTT device stop publishing while it
// stays connected (no Last Will): its readings go stale after their TTL.
func (w *World) SetMQTTSilent(name string, silent bool) error {
	_, err := w.setMQTT(name, func(d *mqttDevice) { d.silent = silent })
	return err
}

// SetMQTTValue changes a simulated MQTT device's channel and publishes it.
func (w *World) SetMQTTValue(name, channel string, v any) error {
	d, err := w.setMQTT(name, func(d *mqttDevice) { d.values[channel] = v })
	if err != nil {
		return err
	}
	d.publishState()
	return nil
}

// startMQTT starts the embedded broker when the manifest has simulated
// MQTT devices or mqtt buses, serves every mqtt bus on it, and republishes
// the devices' state every period. It returns the function that stops it.
// When every mqtt bus declares MQTT 3.1.1 (protocol: 4), the broker speaks
// nothing newer, as the site's broker would not.
func (w *World) startMQTT(buses []string, period time.Duration) (*Broker, func(), error) {
	if len(buses) == 0 && w.mqtt == nil {
		return nil, func() {}, nil
	}
	var o BrokerOptions
	if w.mqttLevel == 4 {
		o.MaxProtocol = 4
	}
	b, err := StartBroker(o)
	if err != nil {
		return nil, nil, err
	}
	mw := w.mqtt
	if mw == nil {
		mw = &mqttWorld{}
	}
	if err := mw.start(b); err != nil {
		b.Close()
		return nil, nil, err
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				w.mqttFaults(mw)
				mw.tick()
			}
		}
	}()
	return b, func() { close(done); b.Close() }, nil
}

// MQTTPublishPeriod is how often the simulated MQTT devices republish
// their state (in real time), as a reporting sensor does.
const MQTTPublishPeriod = time.Second
