// Package mqtt is the driver of devices seen through an MQTT broker
// (Tasmota, Zigbee2MQTT, ESPHome, Shelly): one Client per broker keeps the
// connection (reconnecting with back-off and restoring its subscriptions),
// remembers the last message of every watched topic with its arrival time,
// and publishes commands. It speaks MQTT 5 (eclipse/paho.golang's autopaho)
// or, for brokers that speak nothing newer, MQTT 3.1.1
// (eclipse/paho.mqtt.golang).
//
// The driver owns its configuration (Config); driverconf compiles a
// manifest's mqtt bus into it.
package mqtt

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"sync"
	"time"

	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/drivers"
)

// Config is one broker connection.
type Config struct {
	// Name is the bus's name, for errors and logs.
	Name string
	// Broker is the broker's URL, mqtt:// or mqtts://.
	Broker string
	// ClientID identifies the connection to the broker.
	ClientID string
	// TLS is the TLS configuration of an mqtts:// broker; nil for mqtt://.
	TLS *tls.Config
	// Username and Password authenticate the connection; "" connects
	// without.
	Username string
	Password []byte
	// KeepAlive is the MQTT keep-alive; zero means 30 s.
	KeepAlive time.Duration
	// Dial opens the TCP connection to the broker (TLS is added on top for
	// mqtts). Nil dials the URL's host:port.
	Dial func(ctx context.Context) (net.Conn, error)
	// ConnectTimeout bounds one connection attempt; zero means 10 s.
	ConnectTimeout time.Duration
	// MinBackoff and MaxBackoff bound the wait between failed connection
	// attempts, which doubles from MinBackoff; zero means 250 ms and 30 s.
	MinBackoff, MaxBackoff time.Duration
	// Protocol is the MQTT protocol level: 5 (MQTT 5, also for zero) or 4
	// (MQTT 3.1.1).
	Protocol int
}

// session is one live connection to the broker, whichever the protocol.
type session interface {
	subscribe(ctx context.Context, topics []string) error
	publish(ctx context.Context, topic string, payload []byte, retain bool) error
}

// engine keeps a connection to the broker up, reconnecting with back-off.
type engine interface {
	await(ctx context.Context) error
	close() error
}

// Message is the last message on a topic.
type Message struct {
	Payload  []byte
	Retained bool
	// Time is when the message arrived (the client's clock).
	Time time.Time
	// Seq counts the messages on the topic since the client started.
	Seq uint64
}

// ErrNoMessage is returned for a topic on which nothing has arrived.
var ErrNoMessage = errors.New("no message yet")

// Client is a connection to one broker. It is safe for concurrent use.
type Client struct {
	cfg   Config
	clock clock.Clock
	log   *slog.Logger
	eng   engine
	ctx   context.Context // ends with Close
	stop  context.CancelFunc

	mu        sync.Mutex
	cur       session // non-nil while connected
	watched   map[string]bool
	last      map[string]Message
	waiters   map[string][]chan struct{}
	ups, down int // connections made and lost
}

// New starts the connection to the broker in the background: it returns at
// once, and a broker that is down now is reached when it comes up.
func New(cfg Config, clk clock.Clock, log *slog.Logger) (*Client, error) {
	u, err := url.Parse(cfg.Broker)
	if err != nil {
		return nil, fmt.Errorf("mqtt bus %s: broker %q: %w", cfg.Name, cfg.Broker, err)
	}
	if clk == nil {
		clk = clock.System{}
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.KeepAlive <= 0 {
		cfg.KeepAlive = 30 * time.Second
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = 10 * time.Second
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = 250 * time.Millisecond
	}
	if cfg.MaxBackoff <= cfg.MinBackoff {
		cfg.MaxBackoff = max(30*time.Second, 2*cfg.MinBackoff)
	}
	c := &Client{cfg: cfg, clock: clk, log: log.With("bus", cfg.Name), watched: map[string]bool{},
		last: map[string]Message{}, waiters: map[string][]chan struct{}{}}
	ctx, stop := context.WithCancel(context.Background())
	c.ctx, c.stop = ctx, stop
	var eng engine
	switch cfg.Protocol {
	case 0, 5:
		eng, err = c.startV5(ctx, u)
	case 4:
		eng, err = c.startV311(u)
	default:
		err = fmt.Errorf("protocol level %d (want 5 for MQTT 5 or 4 for MQTT 3.1.1)", cfg.Protocol)
	}
	if err != nil {
		stop()
		return nil, fmt.Errorf("mqtt bus %s: %w", cfg.Name, err)
	}
	c.eng = eng
	return c, nil
}

// backoff doubles the wait from MinBackoff to MaxBackoff; the first
// attempt does not wait.
func (c *Client) backoff(attempt int) time.Duration {
	if attempt <= 0 {
		return 0
	}
	d := c.cfg.MinBackoff
	for i := 1; i < attempt && d < c.cfg.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, c.cfg.MaxBackoff)
}

// dial opens one connection to the broker at u: Config.Dial or TCP, then
// TLS for an mqtts:// broker.
func (c *Client) dial(ctx context.Context, u *url.URL) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.ConnectTimeout)
	defer cancel()
	var conn net.Conn
	var err error
	if c.cfg.Dial != nil {
		conn, err = c.cfg.Dial(ctx)
	} else {
		var d net.Dialer
		conn, err = d.DialContext(ctx, "tcp", u.Host)
	}
	if err != nil {
		return nil, err
	}
	if c.cfg.TLS != nil {
		tc := tls.Client(conn, c.cfg.TLS)
		if err := tc.HandshakeContext(ctx); err != nil {
			conn.Close()
			return nil, fmt.Errorf("TLS: %w", err)
		}
		conn = tc
	}
	return conn, nil
}

// up subscribes to every watched topic again: the session is new on each
// connection, and the broker sends the retained messages anew.
func (c *Client) up(cm session) {
	c.mu.Lock()
	c.cur = cm
	c.ups++
	topics := make([]string, 0, len(c.watched))
	for t := range c.watched {
		topics = append(topics, t)
	}
	gen := c.ups
	c.mu.Unlock()
	c.log.Info("mqtt: connected", "broker", c.cfg.Broker, "topics", len(topics))
	go c.subscribe(cm, gen, topics)
}

func (c *Client) downed() bool {
	c.mu.Lock()
	c.cur = nil
	c.down++
	c.mu.Unlock()
	c.log.Warn("mqtt: connection lost; reconnecting", "broker", c.cfg.Broker)
	return true
}

// subscribe subscribes cm, connection number gen, to topics, and tries
// again with back-off while that connection is the current one: a
// subscription whose acknowledgement did not come in time (a loaded
// broker) would otherwise leave its topics silent while the connection
// stays up ("no message yet (connected)"). A newer connection subscribes
// anew, so this one stops.
func (c *Client) subscribe(cm session, gen int, topics []string) {
	if len(topics) == 0 {
		return
	}
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(c.ctx, c.cfg.ConnectTimeout)
		err := cm.subscribe(ctx, topics)
		cancel()
		if err == nil {
			return
		}
		if !c.connectedAs(gen) {
			c.log.Warn("mqtt: subscribe failed; the next connection subscribes again", "topics", topics, "err", err)
			return
		}
		wait := c.backoff(attempt)
		c.log.Warn("mqtt: subscribe failed; trying again", "topics", topics, "err", err, "in", wait)
		t := time.NewTimer(wait)
		select {
		case <-c.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		if !c.connectedAs(gen) {
			return
		}
	}
}

// connectedAs reports whether connection number gen is still the current
// one and the client open.
func (c *Client) connectedAs(gen int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cur != nil && c.ups == gen && c.ctx.Err() == nil
}

func (c *Client) received(topic string, payload []byte, retained bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.watched[topic] {
		return
	}
	m := Message{Payload: payload, Retained: retained, Time: c.clock.Now(), Seq: c.last[topic].Seq + 1}
	c.last[topic] = m
	for _, w := range c.waiters[topic] {
		close(w)
	}
	delete(c.waiters, topic)
}

// Watch subscribes to topic (now if connected, and on every reconnection).
// Watching a topic twice is watching it once.
func (c *Client) Watch(topic string) {
	c.mu.Lock()
	if c.watched[topic] {
		c.mu.Unlock()
		return
	}
	c.watched[topic] = true
	cm, gen := c.cur, c.ups
	c.mu.Unlock()
	if cm != nil {
		go c.subscribe(cm, gen, []string{topic})
	}
}

// Last returns the last message on a watched topic, or ErrNoMessage.
func (c *Client) Last(topic string) (Message, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m, ok := c.last[topic]
	if !ok {
		state := "connected"
		if c.cur == nil {
			state = "not connected to " + c.cfg.Broker
		}
		return Message{}, fmt.Errorf("mqtt bus %s: topic %s: %w (%s)", c.cfg.Name, topic, ErrNoMessage, state)
	}
	return m, nil
}

// Next returns a channel closed when the next message on topic arrives.
func (c *Client) Next(topic string) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan struct{})
	c.waiters[topic] = append(c.waiters[topic], ch)
	return ch
}

// Connected reports whether the client holds a connection now.
func (c *Client) Connected() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cur != nil
}

// Connections returns how many connections were made and lost so far.
func (c *Client) Connections() (made, lost int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ups, c.down
}

// AwaitConnection waits until the client is connected or ctx ends.
func (c *Client) AwaitConnection(ctx context.Context) error {
	return c.eng.await(ctx)
}

// Publish sends payload on topic with QoS 1 and waits for the broker's
// acknowledgement. It fails at once when there is no connection: a command
// is never queued to run later.
func (c *Client) Publish(ctx context.Context, topic string, payload []byte, retain bool) error {
	c.mu.Lock()
	cm := c.cur
	c.mu.Unlock()
	if cm == nil {
		return fmt.Errorf("mqtt bus %s: publish %s: %w: not connected to %s", c.cfg.Name, topic, drivers.ErrUnavailable, c.cfg.Broker)
	}
	if err := cm.publish(ctx, topic, payload, retain); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("mqtt bus %s: publish %s: %w: %w", c.cfg.Name, topic, drivers.ErrTimeout, err)
		}
		return fmt.Errorf("mqtt bus %s: publish %s: %w", c.cfg.Name, topic, err)
	}
	return nil
}

// Close disconnects from the broker and stops reconnecting.
func (c *Client) Close() error {
	err := c.eng.close()
	c.stop()
	return err
}
