package mqtt

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"sync"

	pahov3 "github.com/eclipse/paho.mqtt.golang"
	"github.com/eclipse/paho.mqtt.golang/packets"
)

// v311 is an MQTT 3.1.1 connection kept up by eclipse/paho.mqtt.golang,
// for brokers that speak nothing newer (the MQTT listener of a NATS
// server, older embedded brokers). It behaves as the MQTT 5 one: a clean
// session on every connection, the watched topics subscribed anew, QoS 1,
// reconnection with the Client's back-off bounds.
type v311 struct {
	pc pahov3.Client

	mu  sync.Mutex
	up  bool
	ups chan struct{} // closed at the next connection
}

func (c *Client) startV311(u *url.URL) (engine, error) {
	e := &v311{ups: make(chan struct{})}
	o := pahov3.NewClientOptions()
	o.AddBroker(u.String())
	o.SetProtocolVersion(4)
	o.SetClientID(c.cfg.ClientID)
	o.SetCleanSession(true)
	o.SetResumeSubs(false)
	o.SetOrderMatters(false)
	o.SetStore(noStore{})
	o.SetKeepAlive(c.cfg.KeepAlive)
	o.SetConnectTimeout(c.cfg.ConnectTimeout)
	o.SetConnectRetry(true)
	o.SetConnectRetryInterval(c.cfg.MinBackoff)
	o.SetAutoReconnect(true)
	o.SetMaxReconnectInterval(c.cfg.MaxBackoff)
	if c.cfg.Username != "" {
		o.SetUsername(c.cfg.Username)
		o.SetPassword(string(c.cfg.Password))
	}
	o.SetCustomOpenConnectionFn(func(u *url.URL, _ pahov3.ClientOptions) (net.Conn, error) {
		return c.dial(c.ctx, u)
	})
	o.SetDefaultPublishHandler(func(_ pahov3.Client, m pahov3.Message) {
		c.received(m.Topic(), m.Payload(), m.Retained())
	})
	o.SetOnConnectHandler(func(pc pahov3.Client) {
		e.mu.Lock()
		e.up = true
		close(e.ups)
		e.ups = make(chan struct{})
		e.mu.Unlock()
		c.up(e)
	})
	o.SetConnectionLostHandler(func(_ pahov3.Client, err error) {
		e.mu.Lock()
		e.up = false
		e.mu.Unlock()
		c.log.Warn("mqtt: connection lost", "broker", c.cfg.Broker, "err", err)
		c.downed()
	})
	e.pc = pahov3.NewClient(o)
	// With ConnectRetry the token completes only once connected (or
	// closed); the attempts go on in the background meanwhile.
	e.pc.Connect()
	return e, nil
}

func (e *v311) subscribe(ctx context.Context, topics []string) error {
	filters := make(map[string]byte, len(topics))
	for _, t := range topics {
		filters[t] = 1
	}
	return wait(ctx, e.pc.SubscribeMultiple(filters, nil))
}

func (e *v311) publish(ctx context.Context, topic string, payload []byte, retain bool) error {
	return wait(ctx, e.pc.Publish(topic, 1, retain, payload))
}

func (e *v311) await(ctx context.Context) error {
	e.mu.Lock()
	up, ch := e.up, e.ups
	e.mu.Unlock()
	if up {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (e *v311) close() error {
	e.pc.Disconnect(250)
	return nil
}

// wait waits for t to complete or ctx to end.
func wait(ctx context.Context, t pahov3.Token) error {
	select {
	case <-t.Done():
		if err := t.Error(); err != nil {
			return fmt.Errorf("MQTT 3.1.1: %w", err)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// noStore keeps nothing: paho.mqtt.golang resends the publishes it has
// stored once it reconnects, and a command that was not acknowledged
// before its caller gave up must never reach the actuator later. A lost
// publish fails its caller (a timeout: outcome unknown) and is gone.
type noStore struct{}

func (noStore) Open()                             {}
func (noStore) Put(string, packets.ControlPacket) {}
func (noStore) Get(string) packets.ControlPacket  { return nil }
func (noStore) All() []string                     { return nil }
func (noStore) Del(string)                        {}
func (noStore) Close()                            {}
func (noStore) Reset()                            {}
