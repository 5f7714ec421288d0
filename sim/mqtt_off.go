//go:build nomqtt

package sim

import (
	"crypto/tls"
	"fmt"
	"time"

	"github.com/promcp/promcp-device/drivers"
	"github.com/promcp/promcp-device/manifests"
)

// Built with -tags nomqtt: no embedded broker and no simulated MQTT
// devices; a manifest that declares either is refused when the world
// starts, naming the tag.

// Broker is the embedded MQTT broker, absent from this build.
type Broker struct{}

// BrokerOptions configure StartBroker.
type BrokerOptions struct {
	Addr        string
	TLS         *tls.Config
	Users       map[string]string
	MaxProtocol byte
}

// StartBroker refuses: this build has no broker.
func StartBroker(BrokerOptions) (*Broker, error) { return nil, drivers.ErrNoMQTT }

// Addr is "" without a broker.
func (*Broker) Addr() string { return "" }

// Publish refuses without a broker.
func (*Broker) Publish(string, []byte, bool) error { return drivers.ErrNoMQTT }

// Subscribe refuses without a broker.
func (*Broker) Subscribe(string, int, func(topic string, payload []byte)) error {
	return drivers.ErrNoMQTT
}

// Close does nothing without a broker.
func (*Broker) Close() error { return nil }

// mqttWorld is never made without MQTT.
type mqttWorld struct{ caps []manifests.Capability }

func addMQTTDevice(_ *World, d manifests.Device, _ *build) error {
	return fmt.Errorf("sim: device %s: %w", d.Name, drivers.ErrNoMQTT)
}

func (w *World) startMQTT(buses []string, _ time.Duration) (*Broker, func(), error) {
	if len(buses) > 0 {
		return nil, nil, fmt.Errorf("sim: mqtt bus %s: %w", buses[0], drivers.ErrNoMQTT)
	}
	return nil, func() {}, nil
}

// MQTTPublishPeriod is how often the simulated devices publish (none here).
const MQTTPublishPeriod = time.Second

// SetMQTTOnline refuses without MQTT.
func (w *World) SetMQTTOnline(name string, _ bool) error {
	return fmt.Errorf("sim: %s: %w", name, drivers.ErrNoMQTT)
}

// SetMQTTIgnoresCommands refuses without MQTT.
func (w *World) SetMQTTIgnoresCommands(name string, _ bool) error {
	return fmt.Errorf("sim: %s: %w", name, drivers.ErrNoMQTT)
}

// SetMQTTSilent refuses without MQTT.
func (w *World) SetMQTTSilent(name string, _ bool) error {
	return fmt.Errorf("sim: %s: %w", name, drivers.ErrNoMQTT)
}

// SetMQTTValue refuses without MQTT.
func (w *World) SetMQTTValue(name, _ string, _ any) error {
	return fmt.Errorf("sim: %s: %w", name, drivers.ErrNoMQTT)
}
