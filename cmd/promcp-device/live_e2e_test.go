package main

import (
	"encoding/json"
	"math"
	"net/url"
	"strings"
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
	c := client.NewClient(tr, client.WithProtocolVersion(mcp.ProtocolVersion20251125))
	ch := make(chan update, 4096)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method != string(mcp.MethodNotificationResourceUpdated) {
			return
		}
		var p struct {
			URI  string                       `json:"uri"`
			Meta map[string]promcp.ReadResult `json:"_meta"`
		}
		raw, _ := json.Marshal(n.Params)
		if err := json.Unmarshal(raw, &p); err != nil {
			t.Errorf("update params %s: %v", raw, err)
		}
		ch <- update{uri: p.URI, body: p.Meta[server.ReadKey]}
	})
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Initialize(t.Context(), mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: mcp.ProtocolVersion20251125,
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
// greenhouse-faults.yml (10x simulated time) receives the read_* body,
// good, then stale and error as the sensor times out and dies, then good
// again; two updates of the same quality are at least the deadband apart
// (0.1 °C) and, sampled every 500 ms, at least the rate's second apart.
// The history then shows the fault: its buckets' quality and counts.
func TestSubscriptionOverHTTPUnderFaults(t *testing.T) {
	t.Parallel()
	u := startHTTP(t, "--manifest", greenhouse, "--time-scale", "10", "--scenario", greenhouseFaults)
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
	deadline := time.Now().Add(90 * time.Second)
	var got []promcp.ReadResult
	seen := map[promcp.Quality]bool{}
	for !(seen[promcp.QualityStale] && seen[promcp.QualityError] && got[len(got)-1].Quality == promcp.QualityGood) {
		up := next(t, ch, deadline, "stale, error, then good again")
		if up.uri != zone1URI {
			t.Fatalf("update for %s, want %s", up.uri, zone1URI)
		}
		got = append(got, up.body)
		seen[up.body.Quality] = true
	}
	if got[0].Quality != promcp.QualityGood || got[0].Unit != "°C" {
		t.Errorf("first update = %+v, want the good reading in °C", got[0])
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

// Over stdio, unsubscribing stops the updates: after zone 1 is
// unsubscribed, its stale transition (always sent to a subscriber) does
// not arrive, while zone 2's subscription receives its own updates until
// zone 2 is degraded (stuck), well after zone 1 went stale.
func TestUnsubscribeOverStdio(t *testing.T) {
	t.Parallel()
	tr := transport.NewStdio(binary, nil, "serve", "--sim", "--log-level", "warn", "--manifest", greenhouse,
		"--time-scale", "10", "--scenario", greenhouseFaults)
	c, ch := liveClient(t, tr)
	deadline := time.Now().Add(90 * time.Second)
	subscribe(t, c, zone1URI)
	if up := next(t, ch, deadline, "zone 1's first update"); up.uri != zone1URI || up.body.Quality != promcp.QualityGood {
		t.Fatalf("first update %+v, want zone 1 good", up)
	}
	if err := c.Unsubscribe(t.Context(), mcp.UnsubscribeRequest{Params: mcp.UnsubscribeParams{URI: zone1URI}}); err != nil {
		t.Fatal(err)
	}
	subscribe(t, c, zone2URI)
	for {
		up := next(t, ch, deadline, "zone 2 degraded (stuck)")
		if up.uri == zone1URI && up.body.Quality != promcp.QualityGood {
			t.Fatalf("after unsubscribing, zone 1 sent %+v", up.body)
		}
		if up.uri == zone2URI && up.body.Quality == promcp.QualityDegraded {
			if !strings.HasPrefix(up.body.QualityReason, "stuck: ") {
				t.Errorf("zone 2 degraded: %q, want stuck", up.body.QualityReason)
			}
			break
		}
	}
	// An update of zone 1 sent before the unsubscribe was answered may
	// still be queued; none may come after zone 1 went stale.
	for {
		select {
		case up := <-ch:
			if up.uri == zone1URI && up.body.Quality != promcp.QualityGood {
				t.Fatalf("after unsubscribing, zone 1 sent %+v", up.body)
			}
			continue
		default:
		}
		break
	}
}
