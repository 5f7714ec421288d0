//go:build nomqtt

package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/promcp/promcp-device/manifests"
)

// Built with -tags nomqtt: no MQTT client and no embedded broker. An mqtt
// bus or device in the manifest, --homeassistant and --notify-mqtt refuse,
// naming the tag.

// leftOutMQTT names this feature in promcp-device version (features.go).
const leftOutMQTT = "MQTT (-tags nomqtt)"

var errNoMQTT = builtWithout("MQTT client", "nomqtt")

// haConfig is never loaded without MQTT.
type haConfig struct{}

func (f *serveFlags) loadHomeAssistant(*manifests.Manifest, *manifests.Policy) (*haConfig, []string, error) {
	if f.homeAssistant == "" {
		return nil, nil, nil
	}
	return nil, nil, failErr(fmt.Errorf("--homeassistant %s: %w", f.homeAssistant, errNoMQTT), false)
}

func startHomeAssistant(context.Context, *haConfig, []string, *openedGateway, *slog.Logger) (func(), error) {
	return func() {}, nil
}
