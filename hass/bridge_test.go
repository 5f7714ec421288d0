package hass_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/packets"
	"github.com/eclipse/paho.golang/paho"

	"github.com/promcp/promcp-device/drivers/mqtt"
	"github.com/promcp/promcp-device/hass"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/promcp"
	"github.com/promcp/promcp-device/server"
	"github.com/promcp/promcp-device/sim"
)

// TestRedeliveredCommandActuatesOnce: a QoS 1 command the broker delivers
// again (DUP set, the same packet id) reaches the do_* tool with the key
// of its first delivery, and the server's idempotency store replays it:
// the handler runs once. A new message reusing the packet id runs again.
// The caller the handler sees is the bridge's.
func TestRedeliveredCommandActuatesOnce(t *testing.T) {
	b, err := sim.StartBroker(sim.BrokerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	srv, err := server.New("test-gw", "test")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	on, runs := false, atomic.Int32{}
	var keys, callers []string
	srv.Read(server.ReadTool{Name: "read_pump", Description: "Whether the pump runs.", Value: map[string]any{"type": "boolean"}},
		func(ctx context.Context, _ server.ReadRequest) (promcp.ReadResult, error) {
			mu.Lock()
			defer mu.Unlock()
			return promcp.ReadResult{Value: on, Quality: promcp.QualityGood, Timestamp: time.Now()}, nil
		})
	srv.Do(server.DoTool{Name: "do_set_pump", Description: "Run (true) or stop (false) the pump.", Value: map[string]any{"type": "boolean"}},
		func(ctx context.Context, req server.DoRequest) (promcp.DoResult, error) {
			runs.Add(1)
			mu.Lock()
			defer mu.Unlock()
			on = req.Value == true
			keys = append(keys, req.IdempotencyKey)
			callers = append(callers, req.Caller.Name+"/"+req.Caller.Role)
			return promcp.DoResult{Status: promcp.StatusSuccess, AppliedValue: on, Timestamp: time.Now()}, nil
		})
	caps := []*manifests.Capability{{Name: "pump", Type: manifests.TypeBoolean, Do: &manifests.Action{Tool: "do_set_pump"}}}
	topics := hass.Topics{Discovery: "homeassistant", Base: "promcp/test-gw", Node: "test-gw"}
	br, err := hass.New(hass.Config{MQTT: mqtt.Config{Broker: "mqtt://" + b.Addr(), ClientID: "bridge"}, Topics: topics,
		Caller: server.Caller{Name: "homeassistant", Role: "operator"}, Poll: time.Hour}, srv, caps, nil)
	if err != nil {
		t.Fatal(err)
	}
	var states atomic.Int32
	b.Subscribe(topics.Attributes("pump"), 1, func(string, []byte) { states.Add(1) })
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- br.Run(ctx) }()
	waitFor(t, "the first attributes", func() bool { return states.Load() > 0 })

	deliver := func(id uint16, dup bool, payload string) {
		n := states.Load()
		pk := &packets.Publish{Properties: &packets.Properties{}, PacketID: id, QoS: 1, Duplicate: dup, Topic: topics.Command("do_set_pump"), Payload: []byte(payload)}
		br.Received(paho.PublishReceived{Packet: paho.PublishFromPacketPublish(pk)})
		waitFor(t, "the command's outcome", func() bool { return states.Load() > n })
	}
	deliver(3, false, "ON")
	deliver(3, true, "ON") // the broker's redelivery: replayed, not run
	deliver(3, false, "OFF")
	cancel()
	if err := <-done; err != nil {
		t.Error(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if runs.Load() != 2 || len(keys) != 2 || keys[0] == keys[1] || !strings.HasPrefix(keys[0], "homeassistant-") || on {
		t.Errorf("handler ran %d times with keys %v (pump on %t); want twice (ON, then OFF), two keys, off", runs.Load(), keys, on)
	}
	if callers[0] != "homeassistant/operator" {
		t.Errorf("caller %s, want homeassistant/operator", callers[0])
	}
}

// waitFor polls ok; a minute bounds what never comes.
func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(5 * time.Millisecond) // messages cross the broker
	}
}
