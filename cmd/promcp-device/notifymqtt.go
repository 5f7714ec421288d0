//go:build !noconsole && !nomqtt

package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/promcp/promcp-device/drivers/mqtt"
	"github.com/promcp/promcp-device/notify"
)

// mqttPublisher is --notify-mqtt's client: it publishes, and closes.
type mqttPublisher interface {
	notify.Publisher
	io.Closer
}

// notifyMQTT connects --notify-mqtt's client to broker; a broker not
// reachable yet is logged, and the client retries.
func notifyMQTT(broker, gateway string, log *slog.Logger) (mqttPublisher, error) {
	client, err := mqtt.New(mqtt.Config{Name: "notify", Broker: broker, ClientID: "promcp-notify-" + gateway}, nil, log.With("part", "notify"))
	if err != nil {
		return nil, fmt.Errorf("--notify-mqtt: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	if err := client.AwaitConnection(ctx); err != nil {
		log.Warn("notify: the MQTT broker is not reachable yet; notifications retry, and are dropped while it stays down", "broker", broker, "err", err)
	}
	cancel()
	return client, nil
}
