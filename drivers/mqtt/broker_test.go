package mqtt_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
	pahov3 "github.com/eclipse/paho.mqtt.golang"

	"github.com/promcp/promcp-device/internal/testnet"
	"github.com/promcp/promcp-device/sim"
)

// testBroker is a real broker on loopback started by the test: the
// embedded mochi broker, or Debian's mosquitto.
type testBroker struct {
	name string
	addr string
	// restart stops the broker (dropping every client) and starts it again
	// on the same port, with nothing retained.
	restart func(t *testing.T)
}

func (b *testBroker) url() string { return "mqtt://" + b.addr }

// brokers returns the brokers to test against: mochi always, mosquitto
// when installed. scripts/test installs it and sets
// PROMCP_REQUIRE_MOSQUITTO, so CI never skips it.
func brokers(t *testing.T) []*testBroker {
	out := []*testBroker{mochiBroker(t, sim.BrokerOptions{})}
	if m := mosquitto(t); m != nil {
		out = append(out, m)
	}
	return out
}

func mochiBroker(t *testing.T, o sim.BrokerOptions) *testBroker {
	t.Helper()
	b, err := sim.StartBroker(o)
	if err != nil {
		t.Fatal(err)
	}
	tb := &testBroker{name: "mochi", addr: b.Addr()}
	o.Addr = b.Addr()
	tb.restart = func(t *testing.T) {
		b.Close()
		nb, err := sim.StartBroker(o)
		if err != nil {
			t.Fatalf("restart mochi on %s: %v", o.Addr, err)
		}
		b = nb
	}
	t.Cleanup(func() { b.Close() })
	return tb
}

// mosquitto starts Debian's mosquitto on a free loopback port with a
// config of the test's own, or returns nil (skipping only that part)
// when it is not installed and CI does not require it.
func mosquitto(t *testing.T) *testBroker {
	t.Helper()
	bin, err := exec.LookPath("mosquitto")
	if err != nil {
		if os.Getenv("PROMCP_REQUIRE_MOSQUITTO") != "" {
			t.Fatal("mosquitto is required (PROMCP_REQUIRE_MOSQUITTO) but not installed: apt-get install mosquitto")
		}
		t.Log("mosquitto not installed: testing against the embedded broker only")
		return nil
	}
	addr := testnet.FreeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	conf := filepath.Join(t.TempDir(), "mosquitto.conf")
	os.WriteFile(conf, []byte(fmt.Sprintf("listener %s 127.0.0.1\nallow_anonymous true\npersistence false\n", port)), 0o600)
	var cmd *exec.Cmd
	start := func(t *testing.T) {
		cmd = exec.Command(bin, "-c", conf)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waitListening(t, addr)
	}
	stop := func() {
		cmd.Process.Kill()
		cmd.Wait()
	}
	start(t)
	t.Cleanup(stop)
	return &testBroker{name: "mosquitto", addr: addr, restart: func(t *testing.T) { stop(); start(t) }}
}

// waitListening waits until something accepts on addr (a broker process
// that has just started), for at most 10 s.
func waitListening(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("broker on %s did not start: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond) // polling an external process's readiness
	}
}

// fakeDevice is a device's own MQTT connection (as Tasmota or
// Zigbee2MQTT holds one), with an optional Last Will; kill drops its TCP
// connection without a DISCONNECT, so the broker publishes the will.
type fakeDevice struct {
	conn net.Conn
	c    *paho.Client
}

func newFakeDevice(t *testing.T, addr, id string, will *paho.WillMessage, onCommand func(topic string, payload []byte), subscribe ...string) *fakeDevice {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	cfg := paho.ClientConfig{ClientID: id, Conn: conn}
	if onCommand != nil {
		cfg.OnPublishReceived = []func(paho.PublishReceived) (bool, error){func(pr paho.PublishReceived) (bool, error) {
			onCommand(pr.Packet.Topic, pr.Packet.Payload)
			return true, nil
		}}
	}
	c := paho.NewClient(cfg)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := c.Connect(ctx, &paho.Connect{ClientID: id, CleanStart: true, KeepAlive: 30, WillMessage: will}); err != nil {
		t.Fatalf("device %s: connect: %v", id, err)
	}
	for _, s := range subscribe {
		if _, err := c.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: s, QoS: 1}}}); err != nil {
			t.Fatalf("device %s: subscribe %s: %v", id, s, err)
		}
	}
	d := &fakeDevice{conn: conn, c: c}
	t.Cleanup(func() { conn.Close() })
	return d
}

func (d *fakeDevice) publish(t *testing.T, topic, payload string, retain bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := d.c.Publish(ctx, &paho.Publish{Topic: topic, Payload: []byte(payload), QoS: 1, Retain: retain}); err != nil {
		t.Fatalf("device publish %s: %v", topic, err)
	}
}

// kill drops the device's connection as a power cut would.
func (d *fakeDevice) kill() { d.conn.Close() }

// protoBroker is a test broker and the protocol level the client under
// test speaks to it.
type protoBroker struct {
	*testBroker
	name     string
	protocol int
}

// brokerProtocols returns every test broker twice: the client speaking
// MQTT 5, and MQTT 3.1.1.
func brokerProtocols(t *testing.T) []protoBroker {
	var out []protoBroker
	for _, b := range brokers(t) {
		out = append(out, protoBroker{b, b.name + "/mqtt5", 5}, protoBroker{b, b.name + "/mqtt311", 4})
	}
	return out
}

// device311 is a device speaking MQTT 3.1.1 over TLS, for a broker that
// speaks nothing newer.
type device311 struct{ c pahov3.Client }

func newTLSDevice311(t *testing.T, addr string, pool *x509.CertPool) *device311 {
	t.Helper()
	o := pahov3.NewClientOptions().AddBroker("mqtts://" + addr).SetClientID("door311").
		SetProtocolVersion(4).SetTLSConfig(&tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}).
		SetUsername("gateway").SetPassword("s3cret").SetAutoReconnect(false)
	c := pahov3.NewClient(o)
	if err := wait311(c.Connect()); err != nil {
		t.Fatalf("device connect over MQTT 3.1.1: %v", err)
	}
	t.Cleanup(func() { c.Disconnect(0) })
	return &device311{c}
}

func (d *device311) publish(t *testing.T, topic, payload string, retain bool) {
	t.Helper()
	if err := wait311(d.c.Publish(topic, 1, retain, payload)); err != nil {
		t.Fatalf("device publish %s: %v", topic, err)
	}
}

// watch subscribes to topic and returns the payloads that arrive on it.
func (d *device311) watch(t *testing.T, topic string) <-chan string {
	t.Helper()
	ch := make(chan string, 8)
	if err := wait311(d.c.Subscribe(topic, 1, func(_ pahov3.Client, m pahov3.Message) { ch <- string(m.Payload()) })); err != nil {
		t.Fatalf("device subscribe %s: %v", topic, err)
	}
	return ch
}

func wait311(tok pahov3.Token) error {
	if !tok.WaitTimeout(10 * time.Second) {
		return fmt.Errorf("timed out")
	}
	return tok.Error()
}
