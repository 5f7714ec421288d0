package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/promcp/promcp-device/notify"
	"github.com/promcp/promcp-device/sim"
)

// delivery is one notification as a receiver got it, and when.
type delivery struct {
	at     time.Time
	header http.Header
	body   []byte
}

// A do_* call that waits for approval reaches a person through the real
// binary: a signed POST to a webhook (verified with the shared secret, as
// the README tells a receiver to), and a message on the MQTT topic of the
// embedded broker, each with the console link and the text in a person's
// words; a webhook that never answers delays neither the call nor the
// other destinations. The times from the call to each delivery are
// reported, not asserted.
func TestNotificationsThroughTheBinary(t *testing.T) {
	t.Parallel()
	secret := "a shared secret of the webhook receiver"
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "webhook.secret")
	if err := os.WriteFile(secretFile, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	hooked := make(chan delivery, 8)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		hooked <- delivery{at: time.Now(), header: r.Header.Clone(), body: b}
	}))
	t.Cleanup(hook.Close)
	hang := make(chan struct{})
	stuck := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(hang); stuck.Close() })
	broker, err := sim.StartBroker(sim.BrokerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { broker.Close() })
	published := make(chan delivery, 8)
	if err := broker.Subscribe("promcp/+/approvals", 7, func(topic string, payload []byte) {
		published <- delivery{at: time.Now(), header: http.Header{"Topic": {topic}}, body: append([]byte(nil), payload...)}
	}); err != nil {
		t.Fatal(err)
	}

	site := startConsoleSite(t, "--notify-webhook", stuck.URL, "--notify-webhook", hook.URL, "--notify-secret", secretFile,
		"--notify-topic", "greenhouse-approvals", "--notify-mqtt", "mqtt://"+broker.Addr(), "--console-url", "https://gw.example:8443")
	agent := site.agentSession(t)
	asked := time.Now()
	r, _ := agent.rawCall("do_set_fan_speed", map[string]any{"value": 48.0, "idempotency_key": "notify-48"})
	answered := time.Since(asked)
	m := regexp.MustCompile(`request ([0-9A-F]+)`).FindStringSubmatch(r["reason"].(string))
	if r["permission"] != "requires_human_approval" || m == nil {
		t.Fatalf("do_set_fan_speed 48 = %v, want a request waiting in the console", r)
	}
	id := m[1]

	wait := func(ch chan delivery, what string) delivery {
		select {
		case d := <-ch:
			return d
		case <-t.Context().Done():
			t.Fatalf("no %s arrived", what)
		}
		return delivery{}
	}
	wh := wait(hooked, "webhook POST")
	mq := wait(published, "MQTT message")
	t.Logf("do_* call answered in %s; webhook received %s and MQTT message %s after the call began (a webhook that never answers configured too)",
		answered.Round(time.Millisecond), wh.at.Sub(asked).Round(time.Millisecond), mq.at.Sub(asked).Round(time.Millisecond))

	if err := notify.Verify([]byte(secret), wh.header.Get("X-Promcp-Timestamp"), wh.header.Get("X-Promcp-Signature"), wh.body, time.Now(), 5*time.Minute); err != nil {
		t.Errorf("the webhook's signature does not verify with the shared secret: %v (headers %v)", err, wh.header)
	}
	if got := wh.header.Get("X-Promcp-Event"); got != "approval_waiting" {
		t.Errorf("X-Promcp-Event = %q, want approval_waiting", got)
	}
	if got := mq.header.Get("Topic"); got != "promcp/greenhouse/approvals" && !strings.HasSuffix(got, "/approvals") {
		t.Errorf("MQTT topic = %q", got)
	}
	for name, d := range map[string]delivery{"webhook": wh, "mqtt": mq} {
		var msg notify.Message
		if err := json.Unmarshal(d.body, &msg); err != nil {
			t.Fatalf("%s body: %v\n%s", name, err, d.body)
		}
		link := "https://gw.example:8443/console/?request=" + id + "#r-" + id
		if msg.Request.ID != id || msg.Click != link || msg.Request.Caller != "agent" || msg.Request.Unit != "Hz" {
			t.Errorf("%s message = %+v, want request %s by agent in Hz, with the link %s", name, msg, id, link)
		}
		if name == "webhook" && msg.Topic != "greenhouse-approvals" {
			t.Errorf("webhook body topic = %q, want the ntfy topic", msg.Topic)
		}
		for _, want := range []string{"agent (operator) asks to set fan speed setpoint to 48 Hz.", "It needs you because the value is above 45 Hz",
			"What will happen: air moves and cools zone1 while the fan runs; draws up to 750 W at 50 Hz."} {
			if !strings.Contains(msg.Message, want) {
				t.Errorf("%s text %q lacks %q", name, msg.Message, want)
			}
		}
		if strings.Contains(msg.Message, "approval key") || strings.Contains(msg.Message, "idempotency") {
			t.Errorf("%s text speaks to the agent: %q", name, msg.Message)
		}
	}
	// The same call again does not notify twice.
	agent.rawCall("do_set_fan_speed", map[string]any{"value": 48.0, "idempotency_key": "notify-48"})
	r2, _ := agent.rawCall("do_set_fan_speed", map[string]any{"value": 49.0, "idempotency_key": "notify-49"})
	if r2["permission"] != "requires_human_approval" {
		t.Fatalf("do_set_fan_speed 49 = %v", r2)
	}
	var next notify.Message
	if err := json.Unmarshal(wait(hooked, "second webhook POST").body, &next); err != nil || next.Request.Value != 49.0 {
		t.Errorf("the next POST is about %v (%v), want the 49 Hz request (the repeated 48 Hz call notifies once)", next.Request.Value, err)
	}
}

// Notification flags that cannot work are refused before anything opens.
func TestNotifyFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--notify-webhook", "http://127.0.0.1:9/x"}, "need --console"},
		{[]string{"--console", "--notify-webhook", "ftp://x"}, `--notify-webhook 1: "ftp://x" is not an http:// or https:// URL`},
		{[]string{"--console", "--notify-mqtt", "http://broker"}, "--notify-mqtt: \"http://broker\" is not a broker URL"},
		{[]string{"--console", "--notify-secret", "f"}, "need --notify-webhook or --notify-mqtt"},
		{[]string{"--console", "--notify-webhook", "http://h/", "--console-url", "gw:8443"}, "--console-url: \"gw:8443\" is not an http:// or https:// URL"},
	} {
		_, stderr, code := runCLI(t, append([]string{"serve", "--sim", "--manifest", greenhouse, "--http", "127.0.0.1:0"}, c.args...)...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("serve %v: exit %d, %q; want exit 2 saying %q", c.args, code, stderr, c.want)
		}
	}
}

// The lapse follows the policy's approval ttl (here 8 s, from --policy),
// and a reminder goes --notify-remind (3 s) before it while nobody has
// decided: the webhook gets the waiting message, then the reminder.
func TestNotificationReminderOnThePolicyTTL(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pol := strings.Replace(string(readFile(t, strings.TrimSuffix(greenhouse, ".yml")+".policy.yml")), "approval: {above: 45}", "approval: {above: 45, ttl: 8s}", 1)
	if !strings.Contains(pol, "ttl: 8s") {
		t.Fatal("the greenhouse policy no longer reads approval: {above: 45}")
	}
	polFile := filepath.Join(dir, "short.policy.yml")
	if err := os.WriteFile(polFile, []byte(pol), 0o644); err != nil {
		t.Fatal(err)
	}
	hooked := make(chan delivery, 8)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		hooked <- delivery{at: time.Now(), header: r.Header.Clone(), body: b}
	}))
	t.Cleanup(hook.Close)
	site := startConsoleSite(t, "--policy", polFile, "--notify-webhook", hook.URL, "--notify-remind", "3s")
	agent := site.agentSession(t)
	asked := time.Now()
	if r, _ := agent.rawCall("do_set_fan_speed", map[string]any{"value": 48.0, "idempotency_key": "remind-48"}); r["permission"] != "requires_human_approval" {
		t.Fatalf("do_set_fan_speed 48 = %v", r)
	}
	var got []notify.Message
	for len(got) < 2 {
		var m notify.Message
		d := <-hooked
		if err := json.Unmarshal(d.body, &m); err != nil {
			t.Fatal(err)
		}
		got = append(got, m)
		t.Logf("%s %.1f s after the call", m.Event, d.at.Sub(asked).Seconds())
	}
	if got[0].Event != notify.EventWaiting || got[1].Event != notify.EventReminder || got[1].Request.ID != got[0].Request.ID {
		t.Fatalf("events %s, %s; want approval_waiting, then approval_reminder of the same request", got[0].Event, got[1].Event)
	}
	a, _ := time.Parse(time.RFC3339, got[0].Request.Asked)
	e, _ := time.Parse(time.RFC3339, got[0].Request.Expires)
	if life := e.Sub(a); life < 7*time.Second || life > 9*time.Second {
		t.Errorf("the request lapses %s after it was asked, want the policy's 8 s", life)
	}
	if !strings.HasPrefix(got[1].Title, "Reminder: fan speed setpoint to 48 Hz lapses in ") {
		t.Errorf("reminder title = %q", got[1].Title)
	}
}
