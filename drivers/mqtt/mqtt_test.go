package mqtt_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/drivers"
	"github.com/promcp/promcp-device/drivers/mqtt"
	"github.com/promcp/promcp-device/internal/testnet"
	"github.com/promcp/promcp-device/sim"
)

func newClient(t *testing.T, cfg mqtt.Config) *mqtt.Client {
	t.Helper()
	if cfg.Name == "" {
		cfg.Name = "broker"
	}
	if cfg.ClientID == "" {
		cfg.ClientID = "gateway-" + strings.ReplaceAll(t.Name(), "/", "-")
	}
	cfg.MinBackoff, cfg.MaxBackoff = 50*time.Millisecond, 500*time.Millisecond
	cfg.ConnectTimeout = 5 * time.Second
	c, err := mqtt.New(cfg, clock.System{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func connected(t *testing.T, c *mqtt.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := c.AwaitConnection(ctx); err != nil {
		t.Fatalf("not connected: %v", err)
	}
}

// await waits for ch (a Next channel) for at most a minute.
func await(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(time.Minute):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// sync makes sure the client's subscriptions are active: it watches a
// topic, a device publishes a retained message there, and the client sees
// it (the broker answers one connection's packets in order).
func syncWatch(t *testing.T, c *mqtt.Client, dev *fakeDevice, topic string) {
	t.Helper()
	next := c.Next(topic)
	c.Watch(topic)
	dev.publish(t, topic, "sync", true)
	await(t, next, "the sync message on "+topic)
}

// Retained state is there as soon as the client subscribes; a
// non-retained message sent before is lost (ErrNoMessage), and one sent
// after arrives with its arrival time.
func TestRetainedAndLiveState(t *testing.T) {
	for _, b := range brokerProtocols(t) {
		t.Run(b.name, func(t *testing.T) {
			dev := newFakeDevice(t, b.addr, "plug", nil, nil)
			dev.publish(t, "stat/plug/POWER", "ON", false) // nobody listens yet: lost
			// A broker may acknowledge a QoS 1 publish before it routes it
			// (mochi does), but handles one connection's packets in order:
			// once the next publish is acknowledged, ON has gone to nobody.
			dev.publish(t, "zigbee2mqtt/door", `{"contact":true,"battery":91}`, true)

			c := newClient(t, mqtt.Config{Broker: b.url(), Protocol: b.protocol})
			next := c.Next("zigbee2mqtt/door")
			c.Watch("zigbee2mqtt/door")
			c.Watch("stat/plug/POWER")
			connected(t, c)
			await(t, next, "the retained state")
			m, err := c.Last("zigbee2mqtt/door")
			if err != nil || !m.Retained || string(m.Payload) != `{"contact":true,"battery":91}` {
				t.Fatalf("retained: %+v, %v", m, err)
			}
			ch := mqtt.Channel{Name: "contact", Path: "contact", On: "ON", Off: "OFF"}
			if v, err := ch.Decode(m.Payload, mqtt.Boolean); v != true || err != nil {
				t.Errorf("contact: %v, %v", v, err)
			}
			syncWatch(t, c, dev, "sync/retained")
			if _, err := c.Last("stat/plug/POWER"); !errors.Is(err, mqtt.ErrNoMessage) {
				t.Errorf("a non-retained message sent before the subscription: %v, want ErrNoMessage", err)
			}
			next = c.Next("stat/plug/POWER")
			before := time.Now()
			dev.publish(t, "stat/plug/POWER", "OFF", false)
			await(t, next, "the live state")
			m, err = c.Last("stat/plug/POWER")
			if err != nil || m.Retained || string(m.Payload) != "OFF" || m.Time.Before(before) || m.Seq != 1 {
				t.Fatalf("live: %+v, %v", m, err)
			}
		})
	}
}

// A device's Last Will reaches the client when the device's connection
// dies without a goodbye.
func TestLastWill(t *testing.T) {
	for _, b := range brokerProtocols(t) {
		t.Run(b.name, func(t *testing.T) {
			// A topic of each protocol's own: the broker keeps the will
			// retained from the run before.
			lwt := fmt.Sprintf("tele/plug%d/LWT", b.protocol)
			c := newClient(t, mqtt.Config{Broker: b.url(), Protocol: b.protocol})
			c.Watch(lwt)
			connected(t, c)
			will := &paho.WillMessage{Topic: lwt, Payload: []byte("Offline"), Retain: true, QoS: 1}
			dev := newFakeDevice(t, b.addr, "plug-lwt", will, nil)
			next := c.Next(lwt)
			dev.publish(t, lwt, "Online", true)
			await(t, next, "Online")
			if m, _ := c.Last(lwt); mqtt.Offline(m.Payload, "offline") {
				t.Fatalf("online device reads offline: %q", m.Payload)
			}
			next = c.Next(lwt)
			dev.kill()
			await(t, next, "the Last Will")
			if m, _ := c.Last(lwt); !mqtt.Offline(m.Payload, "offline") {
				t.Fatalf("after the kill: %q, want Offline", m.Payload)
			}
		})
	}
}

// The broker restarts: the client reconnects with back-off, subscribes
// again, and new messages arrive; a publish while down fails at once.
func TestReconnectRestoresSubscriptions(t *testing.T) {
	for _, b := range brokerProtocols(t) {
		t.Run(b.name, func(t *testing.T) {
			c := newClient(t, mqtt.Config{Broker: b.url(), Protocol: b.protocol})
			c.Watch("zigbee2mqtt/cellar")
			connected(t, c)
			dev := newFakeDevice(t, b.addr, "cellar", nil, nil)
			syncWatch(t, c, dev, "sync/before")
			b.restart(t)
			dev = newFakeDevice(t, b.addr, "cellar2", nil, nil)
			connected(t, c)
			// Until the subscriptions are back, publish until one lands.
			next := c.Next("zigbee2mqtt/cellar")
			deadline := time.After(10 * time.Second)
			tick := time.NewTicker(50 * time.Millisecond)
			defer tick.Stop()
			for done := false; !done; {
				dev.publish(t, "zigbee2mqtt/cellar", `{"temperature":14.5}`, false)
				select {
				case <-next:
					done = true
				case <-tick.C:
				case <-deadline:
					t.Fatal("no message after the broker restarted")
				}
			}
			made, lost := c.Connections()
			if made < 2 || lost < 1 {
				t.Errorf("connections made %d, lost %d; want a reconnection", made, lost)
			}
		})
	}
}

func TestPublishWithoutBrokerFailsAtOnce(t *testing.T) {
	for _, p := range []int{5, 4} {
		c := newClient(t, mqtt.Config{Broker: "mqtt://" + testnet.FreeAddr(t), Protocol: p})
		err := c.Publish(t.Context(), "cmnd/plug/POWER", []byte("ON"), false)
		if !errors.Is(err, drivers.ErrUnavailable) {
			t.Fatalf("protocol %d: publish without a broker: %v, want ErrUnavailable", p, err)
		}
	}
}

// A broker that speaks MQTT 3.1.1 only (as a NATS server's MQTT listener):
// the client set to MQTT 5 is refused and stays unconnected; set to 3.1.1
// (`protocol: 4`) it connects, receives retained and live state over TLS
// with credentials, and its commands reach a device.
func TestBrokerThatSpeaksOnly311(t *testing.T) {
	b, cfg, pool := tlsBroker(t, 4)

	v5 := cfg
	v5.ClientID = "gateway-v5"
	neverConnects(t, newClient(t, v5), "an MQTT 5 client to a 3.1.1-only broker")

	v311 := cfg
	v311.Protocol = 4
	c := newClient(t, v311)
	c.Watch("stat/plug/POWER")
	dev := newTLSDevice311(t, b.addr, pool)
	doorArrives(t, c, dev, "a retained message over MQTT 3.1.1")
	if m, err := c.Last("zigbee2mqtt/door"); err != nil || string(m.Payload) != `{"contact":false}` {
		t.Fatalf("door: %+v, %v", m, err)
	}
	cmd := dev.watch(t, "cmnd/plug/POWER")
	if err := c.Publish(t.Context(), "cmnd/plug/POWER", []byte("ON"), false); err != nil {
		t.Fatalf("publish over MQTT 3.1.1: %v", err)
	}
	select {
	case got := <-cmd:
		if got != "ON" {
			t.Fatalf("device got %q, want ON", got)
		}
	case <-time.After(time.Minute):
		t.Fatal("the command did not reach the device")
	}
}

// testCA makes a CA and a server certificate for 127.0.0.1 signed by it.
func testCA(t *testing.T) (pool *x509.CertPool, server tls.Certificate) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "broker"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(ca)
	return pool, tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// mqtts with a CA made by the test and a username/password: the right
// ones connect and receive; an unknown CA or a wrong password does not.
func TestTLSAndCredentials(t *testing.T) {
	b, cfg, pool := tlsBroker(t, 0)
	doorArrives(t, newClient(t, cfg), newTLSDevice(t, b.addr, pool), "a message over TLS")

	for name, bad := range map[string]mqtt.Config{
		"wrong password": {Broker: cfg.Broker, Username: "gateway", Password: []byte("guess"), TLS: &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}},
		"unknown CA":     {Broker: cfg.Broker, Username: "gateway", Password: []byte("s3cret"), TLS: &tls.Config{ServerName: "127.0.0.1"}},
	} {
		t.Run(name, func(t *testing.T) {
			bad.Name, bad.ClientID = "bad", "bad-"+strings.ReplaceAll(name, " ", "-")
			neverConnects(t, newClient(t, bad), name)
		})
	}
}

// tlsBroker starts a broker that speaks mqtts with a CA made by the test
// (pool) and knows the user gateway with password s3cret; a maxProtocol
// other than 0 refuses clients of a newer MQTT version. cfg connects to it
// as that user.
func tlsBroker(t *testing.T, maxProtocol byte) (b *testBroker, cfg mqtt.Config, pool *x509.CertPool) {
	t.Helper()
	pool, cert := testCA(t)
	b = mochiBroker(t, sim.BrokerOptions{MaxProtocol: maxProtocol, TLS: &tls.Config{Certificates: []tls.Certificate{cert}},
		Users: map[string]string{"gateway": "s3cret"}})
	cfg = mqtt.Config{Broker: "mqtts://" + b.addr, Username: "gateway", Password: []byte("s3cret"),
		TLS: &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}}
	return b, cfg, pool
}

// neverConnects fails the test if c connects within half a second.
func neverConnects(t *testing.T, c *mqtt.Client, what string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	if err := c.AwaitConnection(ctx); err == nil || c.Connected() {
		t.Fatalf("%s: connected", what)
	}
}

// doorArrives has c watch zigbee2mqtt/door and connect, then dev publish a
// retained state there, and waits until c has it.
func doorArrives(t *testing.T, c *mqtt.Client, dev interface {
	publish(t *testing.T, topic, payload string, retain bool)
}, what string) {
	t.Helper()
	c.Watch("zigbee2mqtt/door")
	connected(t, c)
	next := c.Next("zigbee2mqtt/door")
	dev.publish(t, "zigbee2mqtt/door", `{"contact":false}`, true)
	await(t, next, what)
}

func newTLSDevice(t *testing.T, addr string, pool *x509.CertPool) *fakeDevice {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	c := paho.NewClient(paho.ClientConfig{ClientID: "door", Conn: conn})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := c.Connect(ctx, &paho.Connect{ClientID: "door", CleanStart: true, KeepAlive: 30,
		UsernameFlag: true, Username: "gateway", PasswordFlag: true, Password: []byte("s3cret")}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &fakeDevice{conn: conn, c: c}
}

func TestDecodeAndEncode(t *testing.T) {
	tasmotaSensor := []byte(`{"Time":"2026-11-30T10:00:00","ENERGY":{"Power":312,"Voltage":229.5},"AM2301":{"Temperature":21.4}}`)
	cases := []struct {
		ch      mqtt.Channel
		payload string
		kind    mqtt.Kind
		want    any
		err     string
	}{
		{mqtt.Channel{Name: "p", Path: "ENERGY.Power"}, string(tasmotaSensor), mqtt.Number, 312.0, ""},
		{mqtt.Channel{Name: "t", Path: "AM2301.Temperature"}, string(tasmotaSensor), mqtt.Integer, int64(21), ""},
		{mqtt.Channel{Name: "x", Path: "ENERGY.Current"}, string(tasmotaSensor), mqtt.Number, nil, `has no "ENERGY.Current"`},
		{mqtt.Channel{Name: "power", On: "ON", Off: "OFF"}, "ON", mqtt.Boolean, true, ""},
		{mqtt.Channel{Name: "power", On: "ON", Off: "OFF"}, "off", mqtt.Boolean, false, ""},
		{mqtt.Channel{Name: "power", On: "ON", Off: "OFF"}, "maybe", mqtt.Boolean, nil, "neither ON nor OFF"},
		{mqtt.Channel{Name: "state", Path: "state", On: "ON", Off: "OFF"}, `{"state":"ON"}`, mqtt.Boolean, true, ""},
		{mqtt.Channel{Name: "temp"}, " 21.50\n", mqtt.Number, 21.5, ""},
		{mqtt.Channel{Name: "temp"}, "nan-ish", mqtt.Number, nil, "not a number"},
		{mqtt.Channel{Name: "mode", Path: "mode"}, `{"mode":"heat"}`, mqtt.Text, "heat", ""},
		{mqtt.Channel{Name: "c", Path: "contact"}, `not json`, mqtt.Boolean, nil, "not JSON"},
	}
	for _, tc := range cases {
		v, err := tc.ch.Decode([]byte(tc.payload), tc.kind)
		if v != tc.want || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s %q: %v (%T), %v; want %v, %q", tc.ch.Name, tc.payload, v, v, err, tc.want, tc.err)
		}
	}
	z2m := mqtt.Channel{Payload: `{"state":{{json}}}`, On: "ON", Off: "OFF"}
	if got := string(z2m.Encode(true)); got != `{"state":"ON"}` {
		t.Errorf("z2m encode: %s", got)
	}
	if got := string(mqtt.Channel{Payload: `{"brightness":{{json}}}`}.Encode(128.0)); got != `{"brightness":128}` {
		t.Errorf("z2m number: %s", got)
	}
	if got := string(mqtt.Channel{Payload: "{{value}}", On: "ON", Off: "OFF"}.Encode(false)); got != "OFF" {
		t.Errorf("tasmota encode: %s", got)
	}
	for p, want := range map[string]bool{"Offline": true, "offline": true, `{"state":"offline"}`: true, "Online": false, `{"state":"online"}`: false} {
		if mqtt.Offline([]byte(p), "offline") != want {
			t.Errorf("Offline(%q) = %t", p, !want)
		}
	}
}
