package mqtt

import (
	"context"
	"errors"
	"net"
	"net/url"
	"time"

	"github.com/eclipse/paho.golang/autopaho"
	"github.com/eclipse/paho.golang/packets"
	"github.com/eclipse/paho.golang/paho"
)

// v5 is an MQTT 5 connection kept up by autopaho; stop ends the context
// it runs under.
type v5 struct {
	cm   *autopaho.ConnectionManager
	stop context.CancelFunc
}

func (c *Client) startV5(ctx context.Context, u *url.URL) (engine, error) {
	acfg := autopaho.ClientConfig{
		ServerUrls:                    []*url.URL{u},
		TlsCfg:                        c.cfg.TLS,
		KeepAlive:                     uint16(min(c.cfg.KeepAlive/time.Second, 65535)),
		CleanStartOnInitialConnection: true,
		SessionExpiryInterval:         0,
		ConnectTimeout:                c.cfg.ConnectTimeout,
		ReconnectBackoff:              c.backoff,
		AttemptConnection: func(ctx context.Context, _ autopaho.ClientConfig, u *url.URL) (net.Conn, error) {
			conn, err := c.dial(ctx, u)
			if err != nil {
				return nil, err
			}
			return packets.NewThreadSafeConn(conn), nil
		},
		OnConnectionUp:   func(cm *autopaho.ConnectionManager, _ *paho.Connack) { c.up(v5{cm: cm}) },
		OnConnectionDown: c.downed,
		OnConnectError: func(err error) {
			c.log.Warn("mqtt: cannot connect to the broker", "broker", c.cfg.Broker, "err", err)
		},
		ClientConfig: paho.ClientConfig{
			ClientID: c.cfg.ClientID,
			OnPublishReceived: []func(paho.PublishReceived) (bool, error){
				func(pr paho.PublishReceived) (bool, error) {
					c.received(pr.Packet.Topic, pr.Packet.Payload, pr.Packet.Retain)
					return true, nil
				},
			},
		},
	}
	if c.cfg.Username != "" {
		acfg.ConnectUsername, acfg.ConnectPassword = c.cfg.Username, c.cfg.Password
	}
	cm, err := autopaho.NewConnection(ctx, acfg)
	if err != nil {
		return nil, err
	}
	return v5{cm: cm, stop: c.stop}, nil
}

func (s v5) subscribe(ctx context.Context, topics []string) error {
	subs := make([]paho.SubscribeOptions, len(topics))
	for i, t := range topics {
		subs[i] = paho.SubscribeOptions{Topic: t, QoS: 1}
	}
	_, err := s.cm.Subscribe(ctx, &paho.Subscribe{Subscriptions: subs})
	return err
}

func (s v5) publish(ctx context.Context, topic string, payload []byte, retain bool) error {
	_, err := s.cm.Publish(ctx, &paho.Publish{Topic: topic, Payload: payload, QoS: 1, Retain: retain})
	return err
}

func (s v5) await(ctx context.Context) error { return s.cm.AwaitConnection(ctx) }

func (s v5) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := s.cm.Disconnect(ctx)
	s.stop()
	<-s.cm.Done()
	if errors.Is(err, autopaho.ConnectionDownError) {
		err = nil
	}
	return err
}
