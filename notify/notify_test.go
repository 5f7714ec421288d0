package notify_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/promcp/promcp-device/notify"
	"github.com/promcp/promcp-device/server"
)

var asked = time.Date(2026, 12, 1, 17, 40, 0, 0, time.UTC)

func request() server.Request {
	return server.Request{ID: "ABC123", Tool: "do_set_fan_speed", Title: "Set fan speed", Value: 50.0, Key: "k",
		Caller: server.Caller{Name: "agent", Role: "operator"}, Asked: asked, Expires: asked.Add(10 * time.Minute),
		Reason: "do_set_fan_speed with a value above 45 % needs a human's approval", SideEffects: []string{"fans change speed"},
		Compensable: true, State: server.Waiting}
}

// manualAfter keeps the scheduled reminders for the test to fire.
type manualAfter struct {
	mu  sync.Mutex
	due []time.Duration
	f   []func()
}

func (m *manualAfter) after(d time.Duration, f func()) func() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.due, m.f = append(m.due, d), append(m.f, f)
	return func() {}
}

// A waiting request reaches the webhook as JSON in a person's words, signed
// so the receiver can verify it; a reminder goes before it lapses only
// while it still waits.
func TestWebhookSignedAndReminder(t *testing.T) {
	secret := []byte("s3cret")
	got := make(chan *http.Request, 4)
	bodies := make(chan []byte, 4)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- r
		bodies <- b
	}))
	defer hook.Close()
	state := server.Waiting
	var mu sync.Mutex
	ma := &manualAfter{}
	n, err := notify.New(notify.Config{Webhooks: []notify.Webhook{{URL: hook.URL, Secret: secret, Topic: "greenhouse"}},
		ConsoleURL: "https://gw.example:8443/", Now: func() time.Time { return asked.Add(time.Second) }, After: ma.after,
		Describe: func(string) (string, string) { return "Fan speed", "%" },
		Lookup: func(id string) (server.Request, bool) {
			mu.Lock()
			defer mu.Unlock()
			r := request()
			r.State = state
			return r, true
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	n.Waiting(request())
	r, body := <-got, <-bodies
	if err := notify.Verify(secret, r.Header.Get(notify.HeaderTimestamp), r.Header.Get(notify.HeaderSignature), body, time.Now(), 5*time.Minute); err != nil {
		t.Errorf("the delivery does not verify: %v", err)
	}
	if err := notify.Verify([]byte("other"), r.Header.Get(notify.HeaderTimestamp), r.Header.Get(notify.HeaderSignature), body, time.Now(), 5*time.Minute); err == nil {
		t.Error("a delivery verified under another secret")
	}
	if err := notify.Verify(secret, r.Header.Get(notify.HeaderTimestamp), r.Header.Get(notify.HeaderSignature), body, time.Now().Add(time.Hour), 5*time.Minute); err == nil {
		t.Error("an hour-old delivery verified")
	}
	var m notify.Message
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	if m.Event != notify.EventWaiting || m.Topic != "greenhouse" || m.Title != "Approval needed: Fan speed to 50 %" ||
		m.Click != "https://gw.example:8443/console/?request=ABC123#r-ABC123" || m.Request.ID != "ABC123" || m.Request.Unit != "%" {
		t.Errorf("message = %+v", m)
	}
	for _, want := range []string{"agent (operator) asks to set Fan speed to 50 %.", "It needs you because the value is above 45 %, beyond what the policy lets it do without a person's approval.",
		"What will happen: fans change speed.", "(in 9 min 59 s)"} {
		if !strings.Contains(m.Message, want) {
			t.Errorf("message text %q lacks %q", m.Message, want)
		}
	}
	for _, bad := range []string{"approval key", "promcp-device approve", "idempotency"} {
		if strings.Contains(m.Message, bad) {
			t.Errorf("message text %q speaks to the agent (%q)", m.Message, bad)
		}
	}
	if len(ma.due) != 1 || ma.due[0] != 8*time.Minute {
		t.Fatalf("reminders scheduled at %v, want one 8 min after it was asked (2 min before it lapses)", ma.due)
	}
	ma.f[0]()
	if r := <-got; r.Header.Get(notify.HeaderEvent) != notify.EventReminder {
		t.Errorf("second delivery is %q, want the reminder", r.Header.Get(notify.HeaderEvent))
	}
	<-bodies
	mu.Lock()
	state = server.Approved
	mu.Unlock()
	ma.f[0]() // decided meanwhile: no reminder
	n.Waiting(request())
	if r := <-got; r.Header.Get(notify.HeaderEvent) != notify.EventWaiting {
		t.Errorf("after the request was decided a %q went out, want no reminder", r.Header.Get(notify.HeaderEvent))
	}
}

// blockedPublisher never returns until released: the queue fills, and
// Waiting still returns at once, logging each message it drops.
type blockedPublisher struct{ release chan struct{} }

func (p blockedPublisher) Publish(ctx context.Context, topic string, payload []byte, retain bool) error {
	select {
	case <-p.release:
	case <-ctx.Done():
	}
	return nil
}

func TestFullQueueDropsWithALogLine(t *testing.T) {
	var logs bytes.Buffer
	var lmu sync.Mutex
	p := blockedPublisher{release: make(chan struct{})}
	n, err := notify.New(notify.Config{MQTT: p, MQTTTopic: "promcp/approvals", Queue: 2, RemindBefore: -1,
		Log: slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &lmu}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		n.Waiting(request()) // must not block
	}
	close(p.release)
	n.Close()
	lmu.Lock()
	defer lmu.Unlock()
	if c := strings.Count(logs.String(), "queue full, message dropped"); c < 7 {
		t.Errorf("%d drops logged of 10 messages through a queue of 2 and one in delivery, want at least 7:\n%s", c, logs.String())
	}
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// A webhook that fails is retried, then dropped with a log line.
func TestWebhookRetried(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	ok := make(chan struct{})
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls < 3 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		close(ok)
	}))
	defer hook.Close()
	n, err := notify.New(notify.Config{Webhooks: []notify.Webhook{{URL: hook.URL}}, Backoff: time.Millisecond, RemindBefore: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	n.Waiting(request())
	<-ok
}

func TestConfigRefused(t *testing.T) {
	if _, err := notify.New(notify.Config{}); err == nil {
		t.Error("a notifier with nowhere to send was made")
	}
	if _, err := notify.New(notify.Config{Webhooks: []notify.Webhook{{URL: "ftp://x"}}}); err == nil || !strings.Contains(err.Error(), "webhook 1") {
		t.Errorf("ftp webhook: %v, want an error naming webhook 1", err)
	}
}

func TestHumanWords(t *testing.T) {
	for d, want := range map[time.Duration]string{281 * time.Second: "4 min 41 s", 2 * time.Minute: "2 min", 12 * time.Second: "12 s",
		2*time.Hour + 5*time.Minute: "2 h 5 min", 0: "0 s", 50 * time.Hour: "2 d 2 h", time.Hour: "1 h"} {
		if got := notify.Duration(d); got != want {
			t.Errorf("Duration(%s) = %q, want %q", d, got, want)
		}
	}
	if got := notify.Clock(time.Date(2026, 12, 1, 17, 49, 41, 0, time.UTC).In(time.UTC)); !strings.HasPrefix(got, time.Date(2026, 12, 1, 17, 49, 41, 0, time.UTC).Local().Format("15:04:05")) {
		t.Errorf("Clock = %q, want a 24-hour clock", got)
	}
	if got := notify.Why("do_x", "do_x always needs a human's approval"); got != "the policy has a person approve every use of this action" {
		t.Errorf("Why always = %q", got)
	}
}
