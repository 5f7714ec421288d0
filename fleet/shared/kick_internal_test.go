package shared

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// TestLinkKickerDecides drives the kicker with the outcomes of hub
// requests at chosen times: it kicks only after "no responders" through
// an up link has lasted the grace, backs off between kicks, and an answer
// ends the episode; a link that is down neither counts nor resets.
func TestLinkKickerDecides(t *testing.T) {
	const grace = 10 * time.Second
	linked := true
	var kicks []time.Duration
	t0 := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	var at time.Duration
	k := newLinkKicker(Config{LinkGrace: grace, Log: slog.New(slog.DiscardHandler),
		Linked: func() bool { return linked },
		Kick:   func() (string, error) { kicks = append(kicks, at); return "hub-1 127.0.0.1:7422", nil }})
	nr := nats.ErrNoResponders
	step := func(d time.Duration, err error) {
		t.Helper()
		at = d
		k.observe(err, t0.Add(d))
	}
	want := func(w ...time.Duration) {
		t.Helper()
		if len(kicks) != len(w) {
			t.Fatalf("at %v: kicks at %v, want %v", at, kicks, w)
		}
		for i := range w {
			if kicks[i] != w[i] {
				t.Fatalf("at %v: kicks at %v, want %v", at, kicks, w)
			}
		}
	}
	step(0, nr)
	step(9*time.Second, nr)
	want() // within the grace
	step(10*time.Second, nr)
	want(10 * time.Second) // the grace has passed: one kick
	step(15*time.Second, nr)
	want(10 * time.Second) // within the gap (the grace)
	step(20*time.Second, nr)
	want(10*time.Second, 20*time.Second) // a second kick; the gap doubles
	step(35*time.Second, nr)
	want(10*time.Second, 20*time.Second)
	step(40*time.Second, nr)
	want(10*time.Second, 20*time.Second, 40*time.Second)

	// An answer (here a timeout: the request left the gateway) ends the
	// episode: counting starts over, and so does the back-off.
	step(41*time.Second, context.DeadlineExceeded)
	step(50*time.Second, nr)
	step(59*time.Second, nr)
	want(10*time.Second, 20*time.Second, 40*time.Second)
	step(60*time.Second, nr)
	want(10*time.Second, 20*time.Second, 40*time.Second, 60*time.Second)

	// A link that is down is the leaf's own business: not kicked, and not
	// an answer either.
	kicks = nil
	step(61*time.Second, nil)
	linked = false
	step(62*time.Second, nr)
	step(80*time.Second, nr)
	want()
	linked = true
	step(81*time.Second, nr)
	step(90*time.Second, nr)
	want()
	step(91*time.Second, nr)
	want(91 * time.Second)
}

// TestLinkKickerOff: without a Kick or Linked hook there is no kicker,
// and a nil kicker ignores what it is told.
func TestLinkKickerOff(t *testing.T) {
	if k := newLinkKicker(Config{Linked: func() bool { return true }}); k != nil {
		t.Fatal("a kicker without Config.Kick")
	}
	if k := newLinkKicker(Config{Kick: func() (string, error) { return "", errors.New("no") }}); k != nil {
		t.Fatal("a kicker without Config.Linked")
	}
	var k *linkKicker
	k.observe(nats.ErrNoResponders, time.Now())
}
