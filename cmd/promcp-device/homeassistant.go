//go:build !nomqtt

package main

import (
	"context"
	"log/slog"
	"path/filepath"
	"slices"

	"github.com/promcp/promcp-device/driverconf"
	"github.com/promcp/promcp-device/hass"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/server"
)

// leftOutMQTT is empty: this binary has the feature (the -tags build names it, features.go).
const leftOutMQTT = ""

// haConfig is the Home Assistant bridge's configuration.
type haConfig = hass.Config

// loadHomeAssistant reads --homeassistant FILE (nil without it), checked
// against the manifest and the roles its policy declares, and compiles its
// broker connection (credentials file, TLS) before anything opens.
func (f *serveFlags) loadHomeAssistant(m *manifests.Manifest, pol *manifests.Policy) (*hass.Config, []string, error) {
	if f.homeAssistant == "" {
		return nil, nil, nil
	}
	roles := manifests.DefaultRoleNames
	if pol != nil {
		roles = pol.Roles
	}
	h, err := manifests.LoadHomeAssistant(f.homeAssistant, m, roles)
	if err != nil {
		return nil, nil, failErr(commandErr("serve", err), true)
	}
	h.MQTT.Protocol = 5
	mc, err := driverconf.MQTT(manifests.Bus{Name: "homeassistant", Kind: manifests.BusMQTT, MQTT: &h.MQTT}, m.Gateway, filepath.Dir(f.homeAssistant))
	if err != nil {
		return nil, nil, failErr(err, false)
	}
	if h.MQTT.ClientID == "" {
		mc.ClientID = "promcp-" + m.Gateway + "-homeassistant"
	}
	cfg := &hass.Config{MQTT: mc, Caller: server.Caller{Name: h.Caller.Name, Role: h.Caller.Role}, Poll: h.Poll,
		Topics: hass.Topics{Discovery: h.DiscoveryPrefix, Base: h.Topic, Node: hass.NodeID(m.Gateway)},
		Device: hass.Device{Identifiers: []string{"promcp-device_" + m.Gateway}, Name: m.Gateway, Manufacturer: "proMCP",
			Model: "promcp-device gateway", SWVersion: version},
		Origin: hass.Origin{Name: "promcp-device", SWVersion: version, SupportURL: "https://github.com/promcp/promcp-device"}}
	return cfg, h.Capabilities, nil
}

// startHomeAssistant runs the bridge of --homeassistant until the
// returned stop is called (which publishes the gateway offline and waits
// for the bridge to end). Entities are those of the capabilities named
// (all without a list) whose tools are served: under --read-only no
// do_* entity is published.
func startHomeAssistant(ctx context.Context, cfg *hass.Config, only []string, gw *openedGateway, log *slog.Logger) (func(), error) {
	var caps []*manifests.Capability
	for i := range gw.manifest.Capabilities {
		c := gw.manifest.Capabilities[i]
		if len(only) > 0 && !slices.Contains(only, c.Name) {
			continue
		}
		if c.Do != nil && gw.srv.MCP().GetTool(c.Do.Tool) == nil {
			c.Do = nil // not served (--read-only): read only in Home Assistant too
		}
		caps = append(caps, &c)
	}
	b, err := hass.New(*cfg, gw.srv, caps, log)
	if err != nil {
		return nil, err
	}
	bctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := b.Run(bctx); err != nil {
			log.Error("homeassistant bridge", "err", err)
		}
	}()
	log.Info("homeassistant: bridging", "broker", cfg.MQTT.Broker, "entities", len(b.Entities()),
		"caller", cfg.Caller.Name, "role", cfg.Caller.Role, "topic", cfg.Topics.Base, "discovery_prefix", cfg.Topics.Discovery)
	return func() { cancel(); <-done }, nil
}
