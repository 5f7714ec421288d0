//go:build !noconsole

package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/notify"
	"github.com/promcp/promcp-device/server"
)

// notifyConfig is serve's notification flags: where a do_* call that waits
// for a person's approval in the console is pushed.
type notifyConfig struct {
	webhooks   listFlag
	secretFile string
	topic      string
	broker     string
	mqttTopic  string
	remind     time.Duration
	consoleURL string
}

func notifyFlags(fs *flag.FlagSet) *notifyConfig {
	c := &notifyConfig{}
	fs.Var(&c.webhooks, "notify-webhook", "with --console: POST each do_* call that waits for approval, as JSON, to `URL` (repeatable; an ntfy server's root URL with --notify-topic publishes to ntfy)")
	fs.StringVar(&c.secretFile, "notify-secret", "", "with --notify-webhook: sign each POST with the shared secret in `FILE` (HMAC-SHA256 over timestamp.body, in X-Promcp-Signature)")
	fs.StringVar(&c.topic, "notify-topic", "", "with --notify-webhook: the ntfy `TOPIC` put in the body's \"topic\"")
	fs.StringVar(&c.broker, "notify-mqtt", "", "with --console: publish each do_* call that waits for approval to the MQTT broker `URL` (mqtt://host:1883, mqtts://…)")
	fs.StringVar(&c.mqttTopic, "notify-mqtt-topic", "", "with --notify-mqtt: the `TOPIC` (default promcp/GATEWAY/approvals)")
	fs.DurationVar(&c.remind, "notify-remind", notify.DefaultRemindBefore, "with --notify-*: remind this `DURATION` before a waiting call lapses (0: no reminder)")
	fs.StringVar(&c.consoleURL, "console-url", "", "with --console: the console's base `URL` as people reach it (https://gw.example:8443), for the link in each notification")
	return c
}

// on says whether any notification is asked for.
func (c *notifyConfig) on() bool { return len(c.webhooks) > 0 || c.broker != "" }

// check refuses notification flags that cannot work.
func (c *notifyConfig) check(console, readOnly bool) error {
	if !c.on() {
		if c.secretFile != "" || c.topic != "" || c.mqttTopic != "" {
			return usageErr("--notify-secret, --notify-topic and --notify-mqtt-topic need --notify-webhook or --notify-mqtt")
		}
		if c.consoleURL != "" && !console {
			return usageErr("--console-url needs --console")
		}
		return nil
	}
	if !console || readOnly {
		return usageErr("--notify-webhook and --notify-mqtt need --console (the calls waiting for approval are kept there) and no --read-only")
	}
	for i, w := range c.webhooks {
		if u, err := url.Parse(w); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return usageErr("--notify-webhook %d: %q is not an http:// or https:// URL", i+1, w)
		}
	}
	if c.secretFile != "" && len(c.webhooks) == 0 {
		return usageErr("--notify-secret needs --notify-webhook")
	}
	if c.broker != "" {
		if u, err := url.Parse(c.broker); err != nil || u.Host == "" || !strings.HasPrefix(u.Scheme, "mqtt") && !strings.HasPrefix(u.Scheme, "tcp") && !strings.HasPrefix(u.Scheme, "ssl") {
			return usageErr("--notify-mqtt: %q is not a broker URL (want mqtt://host:1883 or mqtts://host:8883)", c.broker)
		}
	}
	if c.consoleURL != "" {
		if u, err := url.Parse(c.consoleURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return usageErr("--console-url: %q is not an http:// or https:// URL", c.consoleURL)
		}
	}
	if c.remind < 0 {
		return usageErr("--notify-remind must not be negative")
	}
	return nil
}

// start starts the notifier on desk, or returns a no-op closer without
// notification flags.
func (c *notifyConfig) start(desk *server.Desk, m *manifests.Manifest, clk clock.Clock, log *slog.Logger) (func(), error) {
	if !c.on() || desk == nil {
		return func() {}, nil
	}
	cfg := notify.Config{ConsoleURL: c.consoleURL, Gateway: m.Gateway, RemindBefore: c.remind, Lookup: desk.Request,
		Describe: describer(m), Now: clk.Now, After: afterOn(clk), Log: log.With("part", "notify")}
	if c.remind == 0 {
		cfg.RemindBefore = -1
	}
	var secret []byte
	if c.secretFile != "" {
		b, err := os.ReadFile(c.secretFile)
		if err != nil {
			return nil, fmt.Errorf("--notify-secret: %w", err)
		}
		if secret = []byte(strings.TrimSpace(string(b))); len(secret) < 16 {
			return nil, usageErr("--notify-secret %s: the secret is %d bytes; use at least 16 (openssl rand -hex 32 > FILE)", c.secretFile, len(secret))
		}
	}
	for _, w := range c.webhooks {
		cfg.Webhooks = append(cfg.Webhooks, notify.Webhook{URL: w, Secret: secret, Topic: c.topic})
	}
	var client io.Closer
	if c.broker != "" {
		pub, err := notifyMQTT(c.broker, m.Gateway, log)
		if err != nil {
			return nil, err
		}
		client, cfg.MQTT, cfg.MQTTTopic = pub, pub, c.mqttTopic
		if cfg.MQTTTopic == "" {
			cfg.MQTTTopic = "promcp/" + m.Gateway + "/approvals"
		}
	}
	n, err := notify.New(cfg)
	if err != nil {
		if client != nil {
			_ = client.Close()
		}
		return nil, err
	}
	desk.OnWait(n.Waiting)
	log.Info("notifications on", "webhooks", len(cfg.Webhooks), "mqtt_topic", cfg.MQTTTopic, "signed", secret != nil, "console_url", c.consoleURL)
	return func() {
		n.Close()
		if client != nil {
			_ = client.Close()
		}
	}, nil
}

// afterOn runs f after d on clk (the gateway's clock, which --time-scale
// speeds up, as it does the requests' lapse), until cancelled.
func afterOn(clk clock.Clock) func(time.Duration, func()) func() {
	return func(d time.Duration, f func()) func() {
		stop := make(chan struct{})
		go func() {
			select {
			case <-clk.After(d):
				f()
			case <-stop:
			}
		}()
		return func() { close(stop) }
	}
}

// describer gives a do_* tool's title (its capability's description) and
// unit, from the manifest.
func describer(m *manifests.Manifest) notify.Describer {
	return func(tool string) (string, string) {
		for _, c := range m.Capabilities {
			if c.Do != nil && c.Do.Tool == tool {
				return strings.ReplaceAll(c.Name, "_", " "), c.Unit
			}
		}
		return "", ""
	}
}
