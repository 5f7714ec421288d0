//go:build nomqtt

package capabilities

import (
	"context"
	"fmt"

	"github.com/promcp/promcp-device/drivers"
	"github.com/promcp/promcp-device/manifests"
)

// Built with -tags nomqtt: no MQTT client. A manifest with an mqtt bus or
// device is refused when the capabilities open, naming the tag.

// broker is never opened without MQTT.
type broker struct{}

func openBrokers(m *manifests.Manifest, _ Hardware, _ Options, _ *Set) (map[string]*broker, error) {
	for _, b := range m.Buses {
		if b.Kind == manifests.BusMQTT {
			return nil, fmt.Errorf("bus %s: %w", b.Name, drivers.ErrNoMQTT)
		}
	}
	return nil, nil
}

func openMQTT(_ context.Context, d manifests.Device, _ env) (*device, error) {
	return nil, fmt.Errorf("device %s: %w", d.Name, drivers.ErrNoMQTT)
}
