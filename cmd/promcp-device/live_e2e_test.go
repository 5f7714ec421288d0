package main

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/promcp/promcp-device/promcp"
	"github.com/promcp/promcp-device/server"
)

const (
	zone1URI = "promcp://greenhouse-1/capabilities/temperature_zone1"
	zone2URI = "promcp://greenhouse-1/capabilities/temperature_zone2"
)

// update is one notifications/resources/updated, with the read_* body it
// carries in _meta.
type update struct {
	uri  string
	body promcp.ReadResult
}

// liveClient starts and initialises c with the 2025-11-25 protocol (whose
// resources/subscribe the gateway serves) and returns the updates it
// receives.
func liveClient(t *testing.T, tr transport.Interface) (*client.Client, <-chan update) {
	t.Helper()
	return liveClientOn(t, tr, mcp.ProtocolVersion20251125)
}

// liveClientOn is liveClient on protocol.
func liveClientOn(t *testing.T, tr transport.Interface, protocol string) (*client.Client, <-chan update) {
	t.Helper()
	c := client.NewClient(tr, client.WithProtocolVersion(protocol))
	ch := make(chan update, 4096)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method != string(mcp.MethodNotificationResourceUpdated) {
			return
		}
		var p struct {
			URI  string                     `json:"uri"`
			Meta map[string]json.RawMessage `json:"_meta"`
		}
		var body promcp.ReadResult
		raw, _ := json.Marshal(n.Params)
		if err := json.Unmarshal(raw, &p); err != nil {
			t.Errorf("update params %s: %v", raw, err)
		} else if err := json.Unmarshal(p.Meta[server.ReadKey], &body); err != nil {
			t.Errorf("update params %s: %v", raw, err)
		}
		ch <- update{uri: p.URI, body: body}
	})
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Initialize(t.Context(), mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: protocol,
		ClientInfo:      mcp.Implementation{Name: "promcp-e2e", Version: "1"}}}); err != nil {
		t.Fatal(err)
	}
	return c, ch
}

func subscribe(t *testing.T, c *client.Client, uri string) {
	t.Helper()
	if err := c.Subscribe(t.Context(), mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: uri}}); err != nil {
		t.Fatalf("subscribe %s: %v", uri, err)
	}
}

// next returns the next update, failing the test past deadline.
func next(t *testing.T, ch <-chan update, deadline time.Time, what string) update {
	t.Helper()
	select {
	case u := <-ch:
		return u
	case <-time.After(time.Until(deadline)):
		t.Fatalf("timed out waiting for %s", what)
		return update{}
	}
}

// Over HTTP, a subscription to zone 1's temperature under
// greenhouse-faults.yml (5x simulated time: the stale phase lasts 6 s of
// real time, so a slow start under -race still sees it) receives the
// read_* body, stale and error as the sensor times out and dies, then good
// again; two updates of the same quality are at least the deadband apart
// (0.1 °C) and, sampled every 500 ms, at least the rate's second apart.
// The history then shows the fault: its buckets' quality and counts.
func TestSubscriptionOverHTTPUnderFaults(t *testing.T) {
	t.Parallel()
	u := startHTTP(t, "--manifest", greenhouse, "--time-scale", "5", "--scenario", lateFaults(t))
	tr, err := transport.NewStreamableHTTP(u, transport.WithContinuousListening())
	if err != nil {
		t.Fatal(err)
	}
	c, ch := liveClient(t, tr)
	list, err := c.ListResources(t.Context(), mcp.ListResourcesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var listed bool
	for _, r := range list.Resources {
		listed = listed || r.URI == zone1URI
	}
	if !listed {
		t.Fatalf("resources/list = %+v, want %s", list.Resources, zone1URI)
	}
	subscribe(t, c, zone1URI)
	deadline := time.Now().Add(3 * time.Minute)
	var got []promcp.ReadResult
	seen := map[promcp.Quality]bool{}
	for !(seen[promcp.QualityStale] && seen[promcp.QualityError] && got[len(got)-1].Quality == promcp.QualityGood) {
		up := next(t, ch, deadline, fmt.Sprintf("stale, error, then good again (seen %v)", seen))
		if up.uri != zone1URI {
			t.Fatalf("update for %s, want %s", up.uri, zone1URI)
		}
		got = append(got, up.body)
		seen[up.body.Quality] = true
	}
	if got[0].Unit != "°C" || got[0].Timestamp.IsZero() {
		t.Errorf("first update = %+v, want the read_* body in °C", got[0])
	}
	// The heater warms zone 1 (0.5 °C a simulated minute): changes beyond
	// the deadband follow.
	on, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "do_set_heater",
		Arguments: map[string]any{"value": true, "idempotency_key": "live-e2e-heater"}}})
	if err != nil || on.IsError {
		t.Fatalf("do_set_heater: %v %+v", err, on)
	}
	for n := 0; n < 3; {
		up := next(t, ch, deadline, "three updates as the heater warms zone 1")
		got = append(got, up.body)
		if up.body.Quality == promcp.QualityGood {
			n++
		}
	}
	pairs := 0
	for i := 1; i < len(got); i++ {
		a, b := got[i-1], got[i]
		if a.Quality != b.Quality || a.Quality != promcp.QualityGood {
			continue
		}
		va, _ := a.Value.(float64)
		vb, _ := b.Value.(float64)
		if math.Abs(vb-va) <= 0.1 {
			t.Errorf("updates %d and %d: %v then %v °C, inside the 0.1 °C deadband", i-1, i, va, vb)
		}
		pairs++
		if gap := b.Timestamp.Sub(a.Timestamp); gap < 900*time.Millisecond {
			t.Errorf("updates %d and %d sampled %s apart, want about a second or more (max_rate 1/s)", i-1, i, gap)
		}
	}
	if pairs < 2 {
		t.Errorf("%d pairs of good updates, want at least 2 to check the deadband on", pairs)
	}
	t.Logf("%d updates, %d consecutive good pairs; qualities seen %v", len(got), pairs, seen)

	res, err := c.ReadResource(t.Context(), mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{
		URI: "promcp://greenhouse-1/history/temperature_zone1?since=" + url.QueryEscape("10m") + "&step=10s&agg=max"}})
	if err != nil {
		t.Fatal(err)
	}
	var h struct {
		Buckets []struct {
			Quality promcp.Quality         `json:"quality"`
			Counts  map[promcp.Quality]int `json:"quality_counts"`
		} `json:"buckets"`
	}
	if err := json.Unmarshal([]byte(res.Contents[0].(mcp.TextResourceContents).Text), &h); err != nil {
		t.Fatal(err)
	}
	var bad bool
	for _, b := range h.Buckets {
		bad = bad || (b.Quality == promcp.QualityError && b.Counts[promcp.QualityError] > 0)
	}
	if !bad {
		t.Errorf("history buckets %+v, want one with quality error and its count", h.Buckets)
	}
}

// Over stdio, unsubscribing stops the updates. With the heater on at
// 50x, zone 1 warms by more than its 0.1 °C deadband several times a real
// second; once unsubscribed (and once zone 2's first update, queued after
// anything zone 1 sent before, has arrived) no zone 1 update may come,
// while zone 2's subscription goes on for 30 simulated seconds.
func TestUnsubscribeOverStdio(t *testing.T) {
	t.Parallel()
	tr := transport.NewStdio(binary, nil, "serve", "--sim", "--log-level", "warn", "--manifest", greenhouse, "--time-scale", "50")
	c, ch := liveClient(t, tr)
	deadline := time.Now().Add(60 * time.Second)
	on, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "do_set_heater",
		Arguments: map[string]any{"value": true, "idempotency_key": "live-e2e-unsub"}}})
	if err != nil || on.IsError {
		t.Fatalf("do_set_heater: %v %+v", err, on)
	}
	subscribe(t, c, zone1URI)
	for range 3 {
		if up := next(t, ch, deadline, "zone 1 warming"); up.uri != zone1URI {
			t.Fatalf("update for %s, want %s", up.uri, zone1URI)
		}
	}
	if err := c.Unsubscribe(t.Context(), mcp.UnsubscribeRequest{Params: mcp.UnsubscribeParams{URI: zone1URI}}); err != nil {
		t.Fatal(err)
	}
	subscribe(t, c, zone2URI)
	var first time.Time
	for first.IsZero() {
		if up := next(t, ch, deadline, "zone 2's first update"); up.uri == zone2URI {
			first = up.body.Timestamp
		}
	}
	for {
		up := next(t, ch, deadline, "30 simulated seconds of zone 2 updates")
		if up.uri == zone1URI {
			t.Fatalf("after unsubscribing, zone 1 sent %+v", up.body)
		}
		if up.body.Timestamp.Sub(first) >= 30*time.Second {
			break
		}
	}
}

// On the 2026-07-28 protocol over HTTP, subscriptions/listen carries the
// updates: the first value, then zone 1's stale transition (5x).
func TestSubscriptionThroughListenOverHTTP(t *testing.T) {
	t.Parallel()
	u := startHTTP(t, "--manifest", greenhouse, "--time-scale", "5", "--scenario", lateFaults(t))
	tr, err := transport.NewStreamableHTTP(u)
	if err != nil {
		t.Fatal(err)
	}
	c, ch := liveClientOn(t, tr, mcp.LATEST_PROTOCOL_VERSION)
	stop, err := c.ListenAsync(t.Context(), mcp.SubscriptionFilter{ResourceSubscriptions: []string{zone1URI}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	deadline := time.Now().Add(3 * time.Minute)
	if up := next(t, ch, deadline, "the first update"); up.uri != zone1URI || up.body.Unit != "°C" {
		t.Fatalf("first update %+v, want zone 1's read_* body", up)
	}
	for {
		if up := next(t, ch, deadline, "zone 1 stale"); up.body.Quality == promcp.QualityStale {
			break
		}
	}
}

// lateFaults is greenhouse-faults.yml with every fault 2 simulated minutes
// later (24 s of real time at 5x): a start slowed by a loaded machine
// still subscribes before zone 1 goes stale, so the test sees each phase
// (at the file's 10 s, a start of more than 14 s missed the stale phase).
func lateFaults(t *testing.T) string {
	t.Helper()
	return scenarioPace{scale: 5, lead: 2 * time.Minute}.scenario(t, greenhouseFaults)
}
