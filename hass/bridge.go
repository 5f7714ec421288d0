package hass

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/eclipse/paho.golang/autopaho"
	"github.com/eclipse/paho.golang/packets"
	"github.com/eclipse/paho.golang/paho"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/promcp/promcp-device/drivers/mqtt"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/server"
)

// Config is a bridge.
type Config struct {
	// MQTT is the broker connection (drivers/mqtt's, compiled by
	// driverconf from the Home Assistant file's mqtt block); MQTT 5.
	MQTT   mqtt.Config
	Topics Topics
	// Caller is who Home Assistant's commands act as.
	Caller server.Caller
	// Poll is how often every capability is read.
	Poll   time.Duration
	Device Device
	Origin Origin
}

// Bridge publishes a gateway's capabilities to Home Assistant and takes
// its commands back through the gateway's do_* tools. It is safe for
// concurrent use; Run runs it.
type Bridge struct {
	cfg   Config
	srv   *server.Server
	ents  []Entity
	caps  []*manifests.Capability
	byCmd map[string]Entity // command topic: the action entity
	log   *slog.Logger
	keys  *keyer

	mu   sync.Mutex
	cm   *autopaho.ConnectionManager
	last map[string]string // topic: the payload last published (state, availability, attributes)
	// lastCmd is, by capability, the outcome of the last command.
	lastCmd map[string]map[string]any

	up       chan struct{} // a connection came up: publish everything
	commands chan command
}

// command is a message on a command topic, with the idempotency key
// derived from it.
type command struct {
	ent     Entity
	payload string
	key     string
}

// New makes a bridge of srv's capabilities caps (in the manifest's order).
func New(cfg Config, srv *server.Server, caps []*manifests.Capability, log *slog.Logger) (*Bridge, error) {
	if cfg.Poll <= 0 {
		return nil, errors.New("homeassistant: poll must be more than 0")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	b := &Bridge{cfg: cfg, srv: srv, caps: caps, ents: Entities(caps), byCmd: map[string]Entity{}, log: log,
		keys: newKeyer(), last: map[string]string{}, lastCmd: map[string]map[string]any{}, up: make(chan struct{}, 1), commands: make(chan command, 64)}
	for _, e := range b.ents {
		if !strings.HasPrefix(e.Tool, "read_") {
			b.byCmd[cfg.Topics.Command(e.Tool)] = e
		}
	}
	return b, nil
}

// Entities returns the entities the bridge publishes.
func (b *Bridge) Entities() []Entity { return b.ents }

// Run connects to the broker (reconnecting with back-off) and bridges
// until ctx ends; then it publishes the gateway offline and disconnects.
func (b *Bridge) Run(ctx context.Context) error {
	cctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	cm, err := b.connect(cctx)
	if err != nil {
		return fmt.Errorf("homeassistant: %s: %w", b.cfg.MQTT.Broker, err)
	}
	b.mu.Lock()
	b.cm = cm
	b.mu.Unlock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.actuate(ctx)
	}()
	tick := time.NewTicker(b.cfg.Poll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			<-done // the command in hand finishes (and is reported) first
			err := b.close(cm)
			stop()
			<-cm.Done()
			return err
		case <-b.up:
			b.publishAll(ctx)
		case <-tick.C:
			b.poll(ctx, false)
		}
	}
}

// close publishes the gateway offline (retained, as its Last Will would)
// and disconnects.
func (b *Bridge) close(cm *autopaho.ConnectionManager) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := cm.Publish(ctx, &paho.Publish{Topic: b.cfg.Topics.Status(), Payload: []byte(Offline), QoS: 1, Retain: true}); err != nil {
		b.log.Warn("homeassistant: could not publish the gateway offline", "err", err)
	}
	err := cm.Disconnect(ctx)
	if errors.Is(err, autopaho.ConnectionDownError) {
		err = nil
	}
	return err
}

func (b *Bridge) connect(ctx context.Context) (*autopaho.ConnectionManager, error) {
	mc := b.cfg.MQTT
	scheme := "mqtt"
	if mc.TLS != nil {
		scheme = "tls"
	}
	addr, err := manifests.BrokerAddress(mc.Broker)
	if err != nil {
		return nil, err
	}
	u := &url.URL{Scheme: scheme, Host: addr}
	acfg := autopaho.ClientConfig{
		ServerUrls: []*url.URL{u}, TlsCfg: mc.TLS, KeepAlive: 30,
		CleanStartOnInitialConnection: true, SessionExpiryInterval: 0, ConnectTimeout: 10 * time.Second,
		ReconnectBackoff: autopaho.NewExponentialBackoff(250*time.Millisecond, 30*time.Second, time.Second, 2),
		WillMessage:      &paho.WillMessage{Topic: b.cfg.Topics.Status(), Payload: []byte(Offline), QoS: 1, Retain: true},
		OnConnectionUp: func(cm *autopaho.ConnectionManager, _ *paho.Connack) {
			b.keys.newConnection()
			select {
			case b.up <- struct{}{}:
			default:
			}
		},
		OnConnectError: func(err error) {
			b.log.Warn("homeassistant: cannot connect to the broker", "broker", mc.Broker, "err", err)
		},
		ClientConfig: paho.ClientConfig{
			ClientID:          mc.ClientID,
			OnPublishReceived: []func(paho.PublishReceived) (bool, error){b.received},
		},
	}
	if mc.Dial != nil {
		acfg.AttemptConnection = func(ctx context.Context, _ autopaho.ClientConfig, _ *url.URL) (net.Conn, error) {
			conn, err := mc.Dial(ctx)
			if err != nil {
				return nil, err
			}
			return packets.NewThreadSafeConn(conn), nil
		}
	}
	if mc.Username != "" {
		acfg.ConnectUsername, acfg.ConnectPassword = mc.Username, mc.Password
	}
	return autopaho.NewConnection(ctx, acfg)
}

// publishAll publishes, on a new connection, the discovery configuration
// of every entity and the gateway online, subscribes to the command
// topics and to Home Assistant's status (its birth message asks for the
// discovery again), and publishes every state anew.
func (b *Bridge) publishAll(ctx context.Context) {
	for _, e := range b.ents {
		payload, err := Discovery(e, b.cfg.Topics, b.cfg.Device, b.cfg.Origin)
		if err == nil {
			err = b.publish(ctx, b.cfg.Topics.Config(e), payload, true)
		}
		if err != nil {
			b.log.Warn("homeassistant: could not publish discovery", "entity", e.ObjectID, "err", err)
			return
		}
	}
	subs := []paho.SubscribeOptions{{Topic: b.cfg.Topics.Discovery + "/status", QoS: 1}}
	for topic := range b.byCmd {
		subs = append(subs, paho.SubscribeOptions{Topic: topic, QoS: 1, NoLocal: true})
	}
	b.mu.Lock()
	cm := b.cm
	b.mu.Unlock()
	sctx, cancel := context.WithTimeout(ctx, publishTimeout)
	defer cancel()
	if _, err := cm.Subscribe(sctx, &paho.Subscribe{Subscriptions: subs}); err != nil {
		b.log.Warn("homeassistant: could not subscribe to the command topics", "err", err)
		return
	}
	if err := b.publish(ctx, b.cfg.Topics.Status(), []byte(Online), true); err != nil {
		b.log.Warn("homeassistant: could not publish the gateway online", "err", err)
	}
	b.poll(ctx, true)
	b.log.Info("homeassistant: discovery published", "entities", len(b.ents), "broker", b.cfg.MQTT.Broker,
		"discovery_prefix", b.cfg.Topics.Discovery, "topic", b.cfg.Topics.Base, "caller", b.cfg.Caller.Name, "role", b.cfg.Caller.Role)
}

// publishTimeout bounds the wait for a publish's acknowledgement: a
// broker that stops answering holds up neither the bridge nor shutdown.
const publishTimeout = 10 * time.Second

// publish publishes payload on topic (QoS 1).
func (b *Bridge) publish(ctx context.Context, topic string, payload []byte, retain bool) error {
	b.mu.Lock()
	cm := b.cm
	b.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, publishTimeout)
	defer cancel()
	_, err := cm.Publish(ctx, &paho.Publish{Topic: topic, Payload: payload, QoS: 1, Retain: retain})
	return err
}

// publishChanged publishes payload on topic unless it is what was last
// published there (force publishes anyway). State, availability and
// attributes are retained: Home Assistant restarting sees them at once.
func (b *Bridge) publishChanged(ctx context.Context, topic, payload string, force bool) {
	b.mu.Lock()
	same := b.last[topic] == payload
	b.mu.Unlock()
	if same && !force {
		return
	}
	if err := b.publish(ctx, topic, []byte(payload), true); err != nil {
		b.log.Warn("homeassistant: could not publish", "topic", topic, "err", err)
		return
	}
	b.mu.Lock()
	b.last[topic] = payload
	b.mu.Unlock()
}

// call runs a tool of the gateway in process as the bridge's caller, and
// decodes its body.
func (b *Bridge) call(ctx context.Context, tool string, args map[string]any) (map[string]any, error) {
	st := b.srv.MCP().GetTool(tool)
	if st == nil {
		return nil, fmt.Errorf("%s is not served", tool)
	}
	var req mcp.CallToolRequest
	req.Params.Name, req.Params.Arguments = tool, args
	res, err := st.Handler(server.WithCaller(ctx, b.cfg.Caller), req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tool, err)
	}
	for _, ct := range res.Content {
		if tc, ok := mcp.AsTextContent(ct); ok {
			var body map[string]any
			if err := json.Unmarshal([]byte(tc.Text), &body); err != nil {
				return nil, fmt.Errorf("%s: %w", tool, err)
			}
			return body, nil
		}
	}
	return nil, fmt.Errorf("%s answered no body", tool)
}

// keyer derives a command's idempotency key from its MQTT message: the
// bridge's start (random), the connection, the packet id and
// how many new (not DUP) messages that packet id has carried on this
// connection. A QoS 1 message the broker redelivers (DUP set, the same
// packet id) gets the key of the first delivery, so the do_* store
// replays its result and nothing actuates twice; a new message reusing
// the packet id gets a new key. The connection starts clean (no session
// is resumed), so no message is redelivered across connections.
type keyer struct {
	mu    sync.Mutex
	epoch string
	conn  uint64
	gen   map[uint16]uint64
}

func newKeyer() *keyer {
	var r [8]byte
	rand.Read(r[:])
	return &keyer{epoch: hex.EncodeToString(r[:]), gen: map[uint16]uint64{}}
}

func (k *keyer) newConnection() {
	k.mu.Lock()
	k.conn++
	clear(k.gen)
	k.mu.Unlock()
}

// key is the idempotency key of the message with packet id (0 for QoS 0)
// and the DUP flag dup.
func (k *keyer) key(id uint16, dup bool) string {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !dup || id == 0 || k.gen[id] == 0 {
		k.gen[id]++
	}
	return fmt.Sprintf("homeassistant-%s-%d-%d-%d", k.epoch, k.conn, id, k.gen[id])
}
