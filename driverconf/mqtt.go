//go:build !nomqtt

package driverconf

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/promcp/promcp-device/drivers/mqtt"
	"github.com/promcp/promcp-device/manifests"
)

// MQTTChannel returns the driver's form of an mqtt device's channel (with
// its preset applied by manifests.MQTTDevice.Channel).
func MQTTChannel(ch manifests.MQTTChannel) mqtt.Channel {
	return mqtt.Channel{Name: ch.Name, State: ch.State, Path: ch.Path, Command: ch.Command,
		Payload: ch.Payload, On: ch.On, Off: ch.Off, Retain: ch.Retain}
}

// MQTTKind returns the driver's kind for a capability's value type.
func MQTTKind(t manifests.ValueType) mqtt.Kind {
	switch t {
	case manifests.TypeNumber:
		return mqtt.Number
	case manifests.TypeInteger:
		return mqtt.Integer
	case manifests.TypeBoolean:
		return mqtt.Boolean
	}
	return mqtt.Text
}

// MQTT compiles an mqtt bus into the driver's configuration: it reads the
// TLS files and the credentials file (relative paths are relative to dir,
// the manifest's directory). A credentials file that others may read is
// refused, as ssh refuses such a key. gateway names the default client id.
func MQTT(b manifests.Bus, gateway, dir string) (mqtt.Config, error) {
	mb := b.MQTT
	if mb == nil {
		return mqtt.Config{}, fmt.Errorf("bus %s: not an mqtt bus", b.Name)
	}
	cfg := mqtt.Config{Name: b.Name, Broker: mb.Broker, ClientID: mb.ClientID, KeepAlive: mb.KeepAlive,
		Protocol: mb.Protocol}
	if cfg.ClientID == "" {
		cfg.ClientID = gateway + "-" + b.Name
	}
	rel := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	if strings.HasPrefix(strings.ToLower(mb.Broker), "mqtts:") {
		addr, err := manifests.BrokerAddress(mb.Broker)
		if err != nil {
			return cfg, fmt.Errorf("bus %s: broker: %w", b.Name, err)
		}
		host := addr[:strings.LastIndex(addr, ":")]
		cfg.TLS = &tls.Config{ServerName: strings.Trim(host, "[]"), MinVersion: tls.VersionTLS12}
		if mb.CA != "" {
			pem, err := os.ReadFile(rel(mb.CA))
			if err != nil {
				return cfg, fmt.Errorf("bus %s: ca: %w", b.Name, err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return cfg, fmt.Errorf("bus %s: ca: %s holds no PEM certificate", b.Name, rel(mb.CA))
			}
			cfg.TLS.RootCAs = pool
		}
		if mb.Cert != "" {
			pair, err := tls.LoadX509KeyPair(rel(mb.Cert), rel(mb.Key))
			if err != nil {
				return cfg, fmt.Errorf("bus %s: cert and key: %w", b.Name, err)
			}
			cfg.TLS.Certificates = []tls.Certificate{pair}
		}
	}
	if mb.Credentials != "" {
		user, pass, err := manifests.ReadCredentials(rel(mb.Credentials))
		if err != nil {
			return cfg, fmt.Errorf("bus %s: credentials: %w", b.Name, err)
		}
		cfg.Username, cfg.Password = user, pass
	}
	return cfg, nil
}
