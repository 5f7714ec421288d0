//go:build !nomqtt

package capabilities

import (
	"context"
	"fmt"
	"net"
	"path/filepath"

	"github.com/promcp/promcp-device/driverconf"
	"github.com/promcp/promcp-device/drivers"
	"github.com/promcp/promcp-device/drivers/mqtt"
	"github.com/promcp/promcp-device/manifests"
)

// broker is an open mqtt bus.
type broker struct {
	bus    manifests.Bus
	client *mqtt.Client
}

// openBrokers starts the connection of every mqtt bus of m, through hw's
// TCP dialer (the simulator's embedded broker under --sim). A broker that
// is down does not stop the gateway: its devices read error until it is
// reached, and the client reconnects with back-off.
func openBrokers(m *manifests.Manifest, hw Hardware, opts Options, s *Set) (map[string]*broker, error) {
	out := map[string]*broker{}
	for _, b := range m.Buses {
		if b.Kind != manifests.BusMQTT || b.MQTT == nil {
			continue
		}
		dir := ""
		if m.File != "" {
			dir = filepath.Dir(m.File)
		}
		cfg, err := driverconf.MQTT(b, m.Gateway, dir)
		if err != nil {
			return nil, err
		}
		addr, err := manifests.BrokerAddress(b.MQTT.Broker)
		if err != nil {
			return nil, fmt.Errorf("bus %s: %w", b.Name, err)
		}
		dialBus := b
		dialBus.Address = addr
		cfg.Dial = func(ctx context.Context) (net.Conn, error) { return hw.DialTCP(ctx, dialBus) }
		c, err := mqtt.New(cfg, opts.Clock, opts.Log)
		if err != nil {
			return nil, err
		}
		s.closers = append(s.closers, c.Close)
		out[b.Name] = &broker{bus: b, client: c}
	}
	return out, nil
}

// openMQTT opens a device seen through an MQTT broker: PhysMCP's Lite
// device, adopted by this gateway as a proxy. A read is the last message
// on the channel's state topic, sampled when it arrived: older than the
// TTL it is stale, and an offline word on the availability topic (the
// device's Last Will) makes it error. A write publishes the command; the
// gateway reads the state topic back after the settle time, partial when
// the state did not follow.
func openMQTT(_ context.Context, d manifests.Device, e env) (*device, error) {
	br, ok := e.brokers[d.Bus]
	if !ok || d.MQTT == nil {
		return nil, fmt.Errorf("bus %q is not an open mqtt bus", d.Bus)
	}
	cl := br.client
	avail, offline := d.MQTT.AvailabilityTopic()
	if avail != "" {
		cl.Watch(avail)
	}
	channel := func(name string) (mqtt.Channel, error) {
		ch, ok := d.MQTT.Channel(name)
		if !ok {
			return mqtt.Channel{}, fmt.Errorf("mqtt device %s has no channel %q", d.Name, name)
		}
		return driverconf.MQTTChannel(ch), nil
	}
	preset := string(d.MQTT.Preset)
	if preset == "" {
		preset = "generic"
	}
	return &device{
		model:  d.Model,
		origin: "mqtt:" + preset + "/",
		source: func(name string, t manifests.ValueType) (*sampler, func(any) any, error) {
			ch, err := channel(name)
			if err != nil {
				return nil, nil, err
			}
			cl.Watch(ch.State)
			kind := driverconf.MQTTKind(t)
			return newSampler(e.clock, func(context.Context) (any, []byte, error) {
				if avail != "" {
					if m, err := cl.Last(avail); err == nil && mqtt.Offline(m.Payload, offline) {
						return nil, nil, fmt.Errorf("mqtt device %s: %w: offline since %s (%s said %q: its Last Will or its own word)",
							d.Name, errDeviceOffline, m.Time.UTC().Format("15:04:05"), avail, m.Payload)
					}
				}
				m, err := cl.Last(ch.State)
				if err != nil {
					return nil, nil, err
				}
				v, err := ch.Decode(m.Payload, kind)
				if err != nil {
					return nil, nil, fmt.Errorf("mqtt device %s: topic %s: %w", d.Name, ch.State, err)
				}
				return stamped{value: v, at: m.Time}, m.Payload, nil
			}), identity, nil
		},
		writer: func(name string, _ manifests.ValueType) (func(context.Context, any) error, error) {
			ch, err := channel(name)
			if err != nil {
				return nil, err
			}
			if ch.Command == "" {
				return nil, fmt.Errorf("mqtt device %s: channel %q has no command topic", d.Name, name)
			}
			return func(ctx context.Context, v any) error {
				return cl.Publish(ctx, ch.Command, ch.Encode(v), ch.Retain)
			}, nil
		},
		bind: func(name string) Binding {
			ch, _ := channel(name)
			return mqttBinding(name, ch, br.bus.MQTT.Broker, avail)
		},
	}, nil
}

// mqttBinding says where channel name (ch) of a device on broker comes
// from, with its availability topic avail ("" for none).
func mqttBinding(name string, ch mqtt.Channel, broker, avail string) Binding {
	conv := "the whole payload"
	if ch.Path != "" {
		conv = fmt.Sprintf("JSON path %q of the payload", ch.Path)
	}
	addr := "topic " + ch.State + " on " + broker
	if avail != "" {
		addr += ", availability " + avail
	}
	return Binding{Driver: "mqtt", Address: addr, Register: name,
		RawForm:    "the message's payload as published (a PhysMCP Lite device adopted by this gateway as its proxy: the device publishes, the gateway does not poll it)",
		Conversion: conv + fmt.Sprintf(", sampled when the message arrived; booleans %s/%s", ch.On, ch.Off)}
}

// errDeviceOffline is a device that said (or whose Last Will said) it is
// offline: a device error, so its reads are error.
var errDeviceOffline = fmt.Errorf("%w: device offline", drivers.ErrDeviceError)
