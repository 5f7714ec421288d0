//go:build !noconsole && nomqtt

package main

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/promcp/promcp-device/notify"
)

type mqttPublisher interface {
	notify.Publisher
	io.Closer
}

func notifyMQTT(string, string, *slog.Logger) (mqttPublisher, error) {
	return nil, failErr(fmt.Errorf("--notify-mqtt: %w", errNoMQTT), false)
}
