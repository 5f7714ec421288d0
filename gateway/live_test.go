package gateway_test

import (
	"encoding/json"
	"math"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/gateway"
	"github.com/promcp/promcp-device/gateway/gatewaytest"
	"github.com/promcp/promcp-device/history"
	"github.com/promcp/promcp-device/history/boltseries"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/manifests/manifesttest"
	"github.com/promcp/promcp-device/promcp"
	"github.com/promcp/promcp-device/server"
	"github.com/promcp/promcp-device/server/servertest"
	"github.com/promcp/promcp-device/sim"
)

const probeURI = "promcp://pi-outdoor/capabilities/soil_moisture_probe"

// liveBench serves pi-outdoor.yml with its resources on a manual clock;
// the soil probe (an MCP3008 input, set with SetInput) is observed with a
// deadband of 0.2 V, at most one update per 10 s, sampled every second.
type liveBench struct {
	t   *testing.T
	w   *sim.World
	clk *clock.Manual
	srv *server.Server
	gw  *gateway.Gateway
}

func newLiveBench(t *testing.T, edit ...func(*manifests.Manifest)) *liveBench {
	t.Helper()
	return newLiveBenchWith(t, gateway.LiveOptions{}, edit...)
}

func newLiveBenchWith(t *testing.T, opts gateway.LiveOptions, edit ...func(*manifests.Manifest)) *liveBench {
	t.Helper()
	m := manifesttest.Load(t, "../manifests/examples/pi-outdoor.yml")
	for i := range m.Capabilities {
		if c := &m.Capabilities[i]; c.Name == "soil_moisture_probe" {
			c.Observe = manifests.Observe{Deadband: 0.2, MaxRate: &manifests.RateLimit{Max: 1, Per: 10 * time.Second}, Every: time.Second}
		}
	}
	for _, e := range edit {
		e(m)
	}
	clk := clock.NewManual(epoch)
	g := gatewaytest.Serve(t, m, gatewaytest.Options{Clock: clk, Hardware: kernelFiles(t.TempDir()), Server: []server.Option{server.WithResources()}})
	if err := g.Gateway.ServeLive(opts); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Gateway.CloseLive)
	return &liveBench{t: t, w: g.World, clk: clk, srv: g.Server, gw: g.Gateway}
}

// updates collects the resource updates a client receives.
type updates struct {
	mu   sync.Mutex
	list []promcp.ReadResult
	uris []string
}

func (u *updates) handle(n mcp.JSONRPCNotification) {
	if n.Method != string(mcp.MethodNotificationResourceUpdated) {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	uri, _ := n.Params.AdditionalFields["uri"].(string)
	u.uris = append(u.uris, uri)
	// As on the wire: the body is under params._meta.
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	var r promcp.ReadResult
	raw, _ := json.Marshal(n.Params)
	_ = json.Unmarshal(raw, &p)
	_ = json.Unmarshal(p.Meta[server.ReadKey], &r)
	u.list = append(u.list, r)
}

func (u *updates) got() []promcp.ReadResult {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]promcp.ReadResult(nil), u.list...)
}

// client connects an in-process client on the 2025-11-25 protocol that
// collects updates.
func (b *liveBench) client() (*client.Client, *updates) {
	b.t.Helper()
	// resources/subscribe is the 2025-11-25 protocol's (2026-07-28
	// replaced it with subscriptions/listen).
	return b.clientOn(mcp.ProtocolVersion20251125)
}

// clientOn connects an in-process client on protocol ("" the newest).
func (b *liveBench) clientOn(protocol string) (*client.Client, *updates) {
	b.t.Helper()
	// In-process session ids are the time in nanoseconds, which stands
	// still in a synctest bubble: move the bubble's clock on, so that
	// each client has its own session.
	time.Sleep(time.Nanosecond)
	var opts []client.ClientOption
	if protocol != "" {
		opts = append(opts, client.WithProtocolVersion(protocol))
	}
	c := gatewaytest.Connect(b.t, b.srv, opts...)
	u := &updates{}
	c.OnNotification(u.handle)
	return c, u
}

func (b *liveBench) subscribe(c *client.Client, uri string) {
	b.t.Helper()
	if err := c.Subscribe(b.t.Context(), mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: uri}}); err != nil {
		b.t.Fatal(err)
	}
	synctest.Wait()
}

// step sets the probe's input, advances the clock by one second and
// lets the sampling run.
func (b *liveBench) step(volts float64) {
	b.t.Helper()
	if err := b.w.SetInput("soil_adc", 0, volts); err != nil {
		b.t.Fatal(err)
	}
	b.clk.Advance(time.Second)
	synctest.Wait()
}

// expectIdle checks, once the bubble's goroutines wait, that the probe
// has no subscriber left and that nothing samples it while the clock runs.
func (b *liveBench) expectIdle(when string) {
	b.t.Helper()
	synctest.Wait()
	if n := b.srv.Subscribers(probeURI); n != 0 {
		b.t.Fatalf("%s: subscribers = %d, want 0", when, n)
	}
	before := b.w.SPITransactions("spi0")
	for range 5 {
		b.step(1.0)
	}
	if n := b.w.SPITransactions("spi0") - before; n != 0 {
		b.t.Errorf("%s: %d SPI transactions with no subscriber, want 0 (sampling stopped)", when, n)
	}
}

func nearV(v any, want float64) bool {
	f, ok := v.(float64)
	return ok && math.Abs(f-want) < 0.01
}

// A subscription receives the first value, then changes beyond the
// deadband no more often than the rate allows (the latest value once the
// period has passed), and every change of quality at once.
func TestSubscriptionDeadbandRateAndQuality(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newLiveBench(t)
		c, u := b.client()
		b.subscribe(c, probeURI)
		if got := u.got(); len(got) != 1 || !nearV(got[0].Value, 1.418) || got[0].Quality != promcp.QualityGood {
			t.Fatalf("after subscribing: updates %+v, want the current value 1.418 V good", got)
		}
		b.step(1.50) // t=1: 0.08 V from the last sent: inside the deadband
		if n := len(u.got()); n != 1 {
			t.Fatalf("a change of 0.08 V (deadband 0.2) sent an update: %+v", u.got())
		}
		for range 8 { // t=2..9: 1.7 V is beyond the deadband, but one update per 10 s
			b.step(1.70)
		}
		if n := len(u.got()); n != 1 {
			t.Fatalf("updates within the rate period: %+v, want none after the first", u.got())
		}
		b.step(1.70) // t=10: the period has passed
		got := u.got()
		if len(got) != 2 || !nearV(got[1].Value, 1.70) {
			t.Fatalf("at the end of the rate period: updates %+v, want a second one with 1.70 V", got)
		}
		// Below the plausible range (0.5 V): degraded, sent at once,
		// though the rate period has not passed.
		b.step(0.2)
		got = u.got()
		if len(got) != 3 || got[2].Quality != promcp.QualityDegraded {
			t.Fatalf("a change of quality: updates %+v, want a third, degraded", got)
		}
		b.step(1.70) // back to good: sent at once too
		got = u.got()
		if len(got) != 4 || got[3].Quality != promcp.QualityGood {
			t.Fatalf("back to good: updates %+v, want a fourth, good", got)
		}
		for i, r := range got {
			if r.Unit != "V" || r.Timestamp.IsZero() {
				t.Errorf("update %d = %+v, want the read_* body (unit V, timestamp)", i, r)
			}
		}
		if uris := u.uris; len(uris) != 4 || uris[0] != probeURI {
			t.Errorf("update uris %v, want %s", uris, probeURI)
		}
	})
}

// Unsubscribing and closing the session stop the updates and the
// sampling: no goroutine is left (synctest fails on a leaked one).
func TestUnsubscribeAndSessionEndDropSubscriber(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newLiveBench(t)
		c1, u1 := b.client()
		c2, u2 := b.client()
		b.subscribe(c1, probeURI)
		b.subscribe(c2, probeURI)
		if n := b.srv.Subscribers(probeURI); n != 2 {
			t.Fatalf("subscribers = %d, want 2", n)
		}
		if err := c1.Unsubscribe(t.Context(), mcp.UnsubscribeRequest{Params: mcp.UnsubscribeParams{URI: probeURI}}); err != nil {
			t.Fatal(err)
		}
		n1 := len(u1.got())
		for range 11 {
			b.step(2.5)
		}
		if len(u1.got()) != n1 {
			t.Errorf("after unsubscribing, client 1 got %d more updates", len(u1.got())-n1)
		}
		// Client 2 subscribed while the resource was watched already: the
		// first update it gets is the change, once the rate period passed.
		if got := u2.got(); len(got) != 1 || !nearV(got[0].Value, 2.5) {
			t.Errorf("client 2, still subscribed, got %+v, want the change to 2.5 V", got)
		}
		c2.Close()
		b.expectIdle("after the session ended")
	})
}

// On the 2026-07-28 protocol, subscriptions/listen subscribes the
// resources it lists for as long as its stream is open.
func TestSubscriptionThroughListen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newLiveBench(t)
		c, u := b.clientOn("")
		stop, err := c.ListenAsync(t.Context(), mcp.SubscriptionFilter{ResourceSubscriptions: []string{probeURI}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if n := b.srv.Subscribers(probeURI); n != 1 {
			t.Fatalf("subscribers while listening = %d, want 1", n)
		}
		for range 10 {
			b.step(2.0)
		}
		if got := u.got(); len(got) != 2 || !nearV(got[0].Value, 1.418) || !nearV(got[1].Value, 2.0) {
			t.Errorf("updates through listen %+v, want 1.418 then 2.0 V", got)
		}
		stop()
		synctest.Wait()
		if n := b.srv.Subscribers(probeURI); n != 0 {
			t.Errorf("subscribers after the stream closed = %d, want 0", n)
		}
	})
}

// A subscription to a URI no resource has is refused, naming it.
func TestSubscribeUnknownURIRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newLiveBench(t)
		c, _ := b.client()
		err := c.Subscribe(t.Context(), mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: "promcp://pi-outdoor/capabilities/nothing"}})
		if err == nil || !strings.Contains(err.Error(), `unknown resource uri "promcp://pi-outdoor/capabilities/nothing"`) {
			t.Fatalf("subscribe to an unknown uri: %v, want an error naming it", err)
		}
	})
}

// historyOf reads the history template on c and decodes it.
func historyOf(t *testing.T, c *client.Client, query string) (historyBody, error) {
	t.Helper()
	res, err := c.ReadResource(t.Context(), mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{
		URI: "promcp://pi-outdoor/history/soil_moisture_probe" + query}})
	if err != nil {
		return historyBody{}, err
	}
	var h historyBody
	text, ok := res.Contents[0].(mcp.TextResourceContents)
	if !ok {
		t.Fatalf("history contents %T, want text", res.Contents[0])
	}
	if err := json.Unmarshal([]byte(text.Text), &h); err != nil {
		t.Fatalf("history body %s: %v", text.Text, err)
	}
	return h, nil
}

type historyBody struct {
	Capability string           `json:"capability"`
	Step       string           `json:"step"`
	Agg        string           `json:"agg"`
	Count      int              `json:"sample_count"`
	Samples    []history.Sample `json:"samples"`
	Buckets    []struct {
		Start   time.Time              `json:"start"`
		Value   *float64               `json:"value"`
		Quality promcp.Quality         `json:"quality"`
		Samples int                    `json:"samples"`
		Counts  map[promcp.Quality]int `json:"quality_counts"`
	} `json:"buckets"`
}

// A history query returns the samples the reads took, and their buckets:
// the mean, min and max of each, its worst quality and the count of each
// quality when one is not good.
func TestHistoryMatchesSamplesTaken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newLiveBench(t)
		c, _ := b.client()
		volts := []float64{1.0, 1.2, 1.4, 1.6, 0.2, 2.0} // 0.2 V is below the plausible 0.5 V
		var taken []promcp.ReadResult
		for i, v := range volts {
			if i > 0 {
				b.clk.Advance(time.Second)
			}
			if err := b.w.SetInput("soil_adc", 0, v); err != nil {
				t.Fatal(err)
			}
			var r promcp.ReadResult
			if err := callInto(t.Context(), c, "read_soil_moisture_probe", map[string]any{"max_age_ms": 0}, &r); err != nil {
				t.Fatal(err)
			}
			taken = append(taken, r)
		}
		b.clk.Advance(time.Second)
		since := url.QueryEscape(epoch.Format(time.RFC3339)) // as RFC 6570 expands it
		h, err := historyOf(t, c, "?since="+since)
		if err != nil {
			t.Fatal(err)
		}
		if h.Count != len(taken) || len(h.Samples) != len(taken) {
			t.Fatalf("history = %+v, want the %d samples taken", h, len(taken))
		}
		for i, x := range h.Samples {
			if !x.Time.Equal(taken[i].Timestamp) || x.Value != taken[i].Value || x.Quality != taken[i].Quality {
				t.Errorf("sample %d = %+v, want %v %v %s", i, x, taken[i].Timestamp, taken[i].Value, taken[i].Quality)
			}
		}
		val := func(i int) float64 { return taken[i].Value.(float64) }
		for agg, want := range map[string][2]float64{
			"mean": {(val(0) + val(1) + val(2)) / 3, (val(3) + val(4) + val(5)) / 3},
			"min":  {val(0), val(4)},
			"max":  {val(2), val(5)},
		} {
			h, err := historyOf(t, c, "?since="+since+"&step=3s&agg="+agg)
			if err != nil {
				t.Fatal(err)
			}
			if len(h.Buckets) != 2 || h.Agg != agg || h.Step != "3s" {
				t.Fatalf("agg=%s: %+v, want 2 buckets of 3s", agg, h)
			}
			b0, b1 := h.Buckets[0], h.Buckets[1]
			if !b0.Start.Equal(epoch) || b0.Samples != 3 || b0.Quality != promcp.QualityGood || b0.Counts != nil || b0.Value == nil || math.Abs(*b0.Value-want[0]) > 1e-9 {
				t.Errorf("agg=%s bucket 0 = %+v, want 3 good samples, value %v", agg, b0, want[0])
			}
			if !b1.Start.Equal(epoch.Add(3*time.Second)) || b1.Samples != 3 || b1.Quality != promcp.QualityDegraded ||
				b1.Counts[promcp.QualityGood] != 2 || b1.Counts[promcp.QualityDegraded] != 1 || b1.Value == nil || math.Abs(*b1.Value-want[1]) > 1e-9 {
				t.Errorf("agg=%s bucket 1 = %+v, want 3 samples, quality degraded (2 good, 1 degraded), value %v", agg, b1, want[1])
			}
		}
	})
}

// A bad history argument is refused with an error naming it.
func TestHistoryBadArgumentsNamed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newLiveBench(t)
		c, _ := b.client()
		for query, want := range map[string]string{
			"?step=soon":                      `argument step: "soon" (want a duration`,
			"?step=1ms&since=24h":             "argument step: 1ms makes 86400000 buckets",
			"?since=yesterday":                `argument since: "yesterday" (want an RFC 3339 time`,
			"?since=2030-01-01T00%3A00%3A00Z": "argument since: \"2030-01-01T00:00:00Z\" is in the future",
			"?step=1m&agg=median":             `argument agg: "median" (want mean, min, max or last)`,
			"?agg=max":                        "argument agg: an aggregate needs a step",
		} {
			if _, err := historyOf(t, c, query); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("history%s: %v, want an error containing %q", query, err, want)
			}
		}
		_, err := c.ReadResource(t.Context(), mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: "promcp://pi-outdoor/history/nope"}})
		if err == nil || !strings.Contains(err.Error(), `argument capability: "nope" is not a capability of this gateway`) {
			t.Errorf("history of an unknown capability: %v", err)
		}
	})
}

// Under --state the history is on disk: forced reads write at most one
// sample a second (every change of quality), and a new gateway on the
// same file answers from it.
func TestHistoryOnDiskSurvivesRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.db")
	open := func(now func() time.Time) *boltseries.Store {
		st, err := boltseries.Open(path, now, func(string) time.Duration { return 24 * time.Hour })
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	var wantTimes []time.Time
	synctest.Test(t, func(t *testing.T) {
		var b *liveBench
		st := open(func() time.Time { return b.clk.Now() })
		b = newLiveBenchWith(t, gateway.LiveOptions{Store: st})
		c, _ := b.client()
		read := func(volts float64) {
			if err := b.w.SetInput("soil_adc", 0, volts); err != nil {
				t.Fatal(err)
			}
			var r promcp.ReadResult
			if err := callInto(t.Context(), c, "read_soil_moisture_probe", map[string]any{"max_age_ms": 0}, &r); err != nil {
				t.Fatal(err)
			}
		}
		// Reads at 0, 0.25, 0.5, 0.75, 1, 2 s, and a degraded one at 2.25 s.
		for i, at := range []time.Duration{0, 250, 500, 750, 1000, 2000} {
			if i > 0 {
				b.clk.Advance(250 * time.Millisecond)
				if at == 2000 {
					b.clk.Advance(750 * time.Millisecond)
				}
			}
			read(1.0 + float64(i)/10)
		}
		b.clk.Advance(250 * time.Millisecond)
		read(0.2)
		h, err := historyOf(t, c, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range h.Samples {
			wantTimes = append(wantTimes, x.Time)
		}
		want := []time.Duration{0, time.Second, 2 * time.Second, 2250 * time.Millisecond}
		if len(h.Samples) != len(want) {
			t.Fatalf("on disk: %+v, want the samples at 0, 1, 2 s and the degraded one at 2.25 s", h.Samples)
		}
		for i, x := range h.Samples {
			if !x.Time.Equal(epoch.Add(want[i])) {
				t.Errorf("sample %d at %v, want %v", i, x.Time.Sub(epoch), want[i])
			}
		}
		if h.Samples[3].Quality != promcp.QualityDegraded {
			t.Errorf("last sample %+v, want degraded", h.Samples[3])
		}
		b.gw.CloseLive()
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		var b *liveBench
		st := open(func() time.Time { return b.clk.Now() })
		defer st.Close()
		b = newLiveBenchWith(t, gateway.LiveOptions{Store: st})
		c, _ := b.client()
		h, err := historyOf(t, c, "?since="+url.QueryEscape(epoch.Format(time.RFC3339)))
		if err != nil {
			t.Fatal(err)
		}
		if len(h.Samples) != len(wantTimes) {
			t.Fatalf("after a restart: %+v, want the %d samples on disk", h.Samples, len(wantTimes))
		}
		t.Cleanup(b.gw.CloseLive)
	})
}

// Sessions subscribing and unsubscribing at once while the clock runs:
// the sampling starts and stops with them, and once the last has left no
// subscriber, sampling or goroutine remains (synctest fails on a leak).
func TestSubscriptionsConcurrentWithSampling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newLiveBench(t)
		var clients []*client.Client
		for range 8 {
			c, _ := b.client()
			clients = append(clients, c)
		}
		stopClock := servertest.Meanwhile(func() { b.clk.Advance(100 * time.Millisecond) })
		var wg sync.WaitGroup
		for _, c := range clients {
			wg.Go(func() {
				for range 10 {
					if err := c.Subscribe(t.Context(), mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: probeURI}}); err != nil {
						t.Error(err)
						return
					}
					if err := c.Unsubscribe(t.Context(), mcp.UnsubscribeRequest{Params: mcp.UnsubscribeParams{URI: probeURI}}); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		stopClock()
		b.expectIdle("after the last session left")
	})
}
