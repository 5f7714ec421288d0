// Package notify pushes the do_* calls that wait for a person's approval
// to people: to webhooks (a JSON body signed with HMAC-SHA256 over a
// timestamp and the body; the same body publishes to ntfy-style push
// services), and to an MQTT topic. A request is pushed the moment it waits,
// and again as a reminder before it lapses, with a link that opens it in
// the operator console.
//
// Delivery never blocks the do_* call that put the request on the desk:
// Waiting only queues a message (a bounded queue per destination; when it
// is full the message is dropped with a log line), and the destination's
// worker delivers it, retrying a failed delivery a few times with a growing
// pause; a slow receiver delays no other.
package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/promcp/promcp-device/server"
)

// Headers of a signed webhook delivery. The signature is
// "sha256=" + hex(HMAC-SHA256(secret, timestamp + "." + body)), the
// timestamp the Unix time in seconds when it was sent: a receiver
// recomputes it over the raw body and refuses an old timestamp.
const (
	HeaderTimestamp = "X-Promcp-Timestamp"
	HeaderSignature = "X-Promcp-Signature"
	HeaderEvent     = "X-Promcp-Event"
)

// Events a message carries.
const (
	EventWaiting  = "approval_waiting"
	EventReminder = "approval_reminder"
)

// Defaults of a Config.
const (
	DefaultQueue        = 64
	DefaultRetries      = 3
	DefaultRemindBefore = 2 * time.Minute
	DefaultTimeout      = 5 * time.Second
)

// Webhook is one receiver of HTTP POSTs.
type Webhook struct {
	URL string
	// Secret signs each delivery (HeaderSignature); nil sends it unsigned.
	Secret []byte
	// Topic is put in the body's "topic": an ntfy server publishes a JSON
	// body posted to its root URL to that topic.
	Topic string
}

// Publisher publishes a payload on an MQTT topic (drivers/mqtt's Client).
type Publisher interface {
	Publish(ctx context.Context, topic string, payload []byte, retain bool) error
}

// Describer tells a tool's words for people: its title and the unit of
// its value.
type Describer func(tool string) (title, unit string)

// Config configures a Notifier.
type Config struct {
	Webhooks []Webhook
	// MQTT, when set, gets each message as JSON on MQTTTopic.
	MQTT      Publisher
	MQTTTopic string
	// ConsoleURL is the console's base URL as people reach it
	// ("https://gw.example:8443"); the link is ConsoleURL +
	// "/console/?request=ID#r-ID". "" sends no link.
	ConsoleURL string
	// Gateway names the gateway in the messages.
	Gateway string
	// RemindBefore is how long before a request lapses the reminder goes
	// (0: DefaultRemindBefore; negative: no reminder). A request that
	// waits less than twice as long gets its reminder halfway.
	RemindBefore time.Duration
	// Lookup returns a request as it is now (server.Desk.Request): a
	// reminder goes only while it still waits.
	Lookup func(id string) (server.Request, bool)
	// Describe gives a tool's title and unit; nil uses the tool's name.
	Describe Describer
	// Queue bounds the messages waiting for delivery (0: DefaultQueue);
	// Retries the attempts after a failed one (0: DefaultRetries).
	Queue, Retries int
	// Backoff is the pause before the first retry, doubled each time
	// (0: one second).
	Backoff time.Duration
	Client  *http.Client
	// Now is the gateway's clock, in which requests are asked and lapse
	// (the texts' "in 10 min"); nil means time.Now. A signature's
	// timestamp is always the system's time, which receivers check.
	Now func() time.Time
	// After runs f after d (time.AfterFunc; a test's clock); it returns a
	// function that cancels it.
	After func(d time.Duration, f func()) (cancel func())
	Log   *slog.Logger
}

// Message is what a person is told, as JSON: the fields of ntfy's JSON
// publishing (topic, title, message, click, priority, tags) and the
// request itself.
type Message struct {
	Event    string   `json:"event"`
	Topic    string   `json:"topic,omitempty"`
	Title    string   `json:"title"`
	Message  string   `json:"message"`
	Click    string   `json:"click,omitempty"`
	Priority int      `json:"priority"`
	Tags     []string `json:"tags"`
	Gateway  string   `json:"gateway,omitempty"`
	Request  Pending  `json:"request"`
	Sent     string   `json:"sent"`
}

// Pending is the waiting request in a Message.
type Pending struct {
	ID          string   `json:"id"`
	Tool        string   `json:"tool"`
	Title       string   `json:"title"`
	Value       any      `json:"value"`
	Unit        string   `json:"unit,omitempty"`
	Caller      string   `json:"caller"`
	Role        string   `json:"role"`
	Reason      string   `json:"reason"`
	SideEffects []string `json:"side_effects"`
	Compensable bool     `json:"compensable"`
	Asked       string   `json:"asked"`
	Expires     string   `json:"expires"`
	URL         string   `json:"url,omitempty"`
}

// Notifier delivers messages about waiting requests.
type Notifier struct {
	cfg    Config
	dests  []dest // one queue and worker each: a slow receiver delays no other
	stop   context.CancelFunc
	ctx    context.Context
	worker sync.WaitGroup

	mu      sync.Mutex
	cancels map[string]func() // pending reminders, by request id
	closed  bool
}

// dest is one destination with its queue.
type dest struct {
	name  string   // "webhook N (URL)" or "mqtt TOPIC"
	hook  *Webhook // nil for MQTT
	queue chan Message
}

// New starts a notifier; Close stops it.
func New(cfg Config) (*Notifier, error) {
	if len(cfg.Webhooks) == 0 && cfg.MQTT == nil {
		return nil, errors.New("notify: no webhook and no MQTT topic")
	}
	if cfg.MQTT != nil && cfg.MQTTTopic == "" {
		return nil, errors.New("notify: MQTT without a topic")
	}
	for i, w := range cfg.Webhooks {
		if !strings.HasPrefix(w.URL, "http://") && !strings.HasPrefix(w.URL, "https://") {
			return nil, fmt.Errorf("notify: webhook %d: URL %q is not http:// or https://", i+1, w.URL)
		}
	}
	if cfg.Queue <= 0 {
		cfg.Queue = DefaultQueue
	}
	if cfg.Retries <= 0 {
		cfg.Retries = DefaultRetries
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = time.Second
	}
	if cfg.RemindBefore == 0 {
		cfg.RemindBefore = DefaultRemindBefore
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: DefaultTimeout}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.After == nil {
		cfg.After = func(d time.Duration, f func()) func() { t := time.AfterFunc(d, f); return func() { t.Stop() } }
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	cfg.ConsoleURL = strings.TrimRight(cfg.ConsoleURL, "/")
	ctx, stop := context.WithCancel(context.Background())
	n := &Notifier{cfg: cfg, ctx: ctx, stop: stop, cancels: map[string]func(){}}
	for i := range n.cfg.Webhooks {
		w := &n.cfg.Webhooks[i]
		n.dests = append(n.dests, dest{name: "webhook " + strconv.Itoa(i+1) + " (" + w.URL + ")", hook: w, queue: make(chan Message, cfg.Queue)})
	}
	if cfg.MQTT != nil {
		n.dests = append(n.dests, dest{name: "mqtt " + cfg.MQTTTopic, queue: make(chan Message, cfg.Queue)})
	}
	for _, d := range n.dests {
		n.worker.Add(1)
		go n.run(d)
	}
	return n, nil
}

// Waiting is told of a request the moment it waits (server.Desk.OnWait):
// it queues the message to every destination and schedules the reminder.
// It never blocks.
func (n *Notifier) Waiting(r server.Request) {
	n.send(EventWaiting, r)
	life := r.Expires.Sub(r.Asked)
	if n.cfg.RemindBefore < 0 || life <= 0 {
		return
	}
	at := life - n.cfg.RemindBefore
	if life < 2*n.cfg.RemindBefore {
		at = life / 2
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return
	}
	n.cancels[r.ID] = n.cfg.After(at, func() { n.remind(r) })
}

// remind sends the reminder of r if it still waits.
func (n *Notifier) remind(r server.Request) {
	n.mu.Lock()
	delete(n.cancels, r.ID)
	n.mu.Unlock()
	if n.cfg.Lookup != nil {
		now, ok := n.cfg.Lookup(r.ID)
		if !ok || now.State != server.Waiting {
			return
		}
		r = now
	}
	n.send(EventReminder, r)
}

// send queues the message about r to each destination, dropping it (with
// a log line) where the queue is full.
func (n *Notifier) send(event string, r server.Request) {
	msg := n.message(event, r)
	for _, d := range n.dests {
		m := msg
		if d.hook != nil {
			m.Topic = d.hook.Topic
		}
		select {
		case d.queue <- m:
		default:
			n.cfg.Log.Warn("notify: queue full, message dropped", "request", r.ID, "event", event, "to", d.name, "queue", n.cfg.Queue)
		}
	}
}

// run delivers d's queued messages until Close.
func (n *Notifier) run(d dest) {
	defer n.worker.Done()
	for {
		select {
		case <-n.ctx.Done():
			return
		case m := <-d.queue:
			n.deliver(d, m)
		}
	}
}

// deliver sends m to d, retrying a failed attempt with a growing pause.
func (n *Notifier) deliver(d dest, m Message) {
	pause := n.cfg.Backoff
	for attempt := 0; ; attempt++ {
		err := n.attempt(d, m)
		if err == nil {
			n.cfg.Log.Info("notify: delivered", "request", m.Request.ID, "event", m.Event, "to", d.name)
			return
		}
		if attempt >= n.cfg.Retries {
			n.cfg.Log.Warn("notify: message dropped after retries", "request", m.Request.ID, "event", m.Event,
				"to", d.name, "attempts", attempt+1, "err", err)
			return
		}
		n.cfg.Log.Warn("notify: delivery failed, retrying", "request", m.Request.ID, "to", d.name, "in", pause, "err", err)
		select {
		case <-n.ctx.Done():
			return
		case <-time.After(pause):
		}
		pause *= 2
	}
}

func (n *Notifier) attempt(d dest, m Message) error {
	body, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encoding the message: %w", err)
	}
	ctx, cancel := context.WithTimeout(n.ctx, DefaultTimeout)
	defer cancel()
	if d.hook == nil {
		return n.cfg.MQTT.Publish(ctx, n.cfg.MQTTTopic, body, false)
	}
	return n.post(ctx, d.hook, m.Event, body)
}

// post POSTs body to the webhook w, signed when it has a secret.
func (n *Notifier) post(ctx context.Context, w *Webhook, event string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("webhook %s: %w", w.URL, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(HeaderEvent, event)
	if w.Secret != nil {
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		req.Header.Set(HeaderTimestamp, ts)
		req.Header.Set(HeaderSignature, Sign(w.Secret, ts, body))
	}
	resp, err := n.cfg.Client.Do(req)
	if err != nil {
		return fmt.Errorf("webhook %s: %w", w.URL, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("webhook %s: HTTP %s", w.URL, resp.Status)
	}
	return nil
}

// Sign is the signature of body sent at the Unix time ts (seconds, as
// text): "sha256=" and the hex HMAC-SHA256 of ts + "." + body under secret.
func Sign(secret []byte, ts string, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts))
	m.Write([]byte("."))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Verify checks a delivery as a receiver would: the signature over ts and
// body under secret, and a timestamp no further than maxAge from now.
func Verify(secret []byte, ts, signature string, body []byte, now time.Time, maxAge time.Duration) error {
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("timestamp %q is not Unix seconds", ts)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > maxAge || d < -maxAge {
		return fmt.Errorf("timestamp %s is %s away from now (at most %s)", ts, d.Round(time.Second), maxAge)
	}
	if !hmac.Equal([]byte(Sign(secret, ts, body)), []byte(signature)) {
		return errors.New("signature does not match")
	}
	return nil
}

// Close stops delivering and cancels the reminders; queued messages not
// yet sent are dropped.
func (n *Notifier) Close() {
	n.mu.Lock()
	n.closed = true
	for id, c := range n.cancels {
		c()
		delete(n.cancels, id)
	}
	n.mu.Unlock()
	n.stop()
	n.worker.Wait()
}
