package hass

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/promcp"
)

// poll reads every capability through its read_* tool and publishes what
// changed (everything with force).
func (b *Bridge) poll(ctx context.Context, force bool) {
	for _, c := range b.caps {
		b.refresh(ctx, c, force)
	}
}

// refresh reads capability c and publishes its state (when it has a
// value), its availability (online while good or degraded, offline on
// error or stale) and its attributes.
func (b *Bridge) refresh(ctx context.Context, c *manifests.Capability, force bool) {
	body, err := b.call(ctx, "read_"+c.Name, map[string]any{})
	if err != nil {
		b.log.Warn("homeassistant: read failed", "capability", c.Name, "err", err)
		body = map[string]any{"quality": string(promcp.QualityError)}
	}
	q, _ := body["quality"].(string)
	avail := Availability(promcp.Quality(q))
	t := b.cfg.Topics
	if v, ok := body["value"]; ok && v != nil && avail == Online {
		b.publishChanged(ctx, t.State(c.Name), StatePayload(v), force)
	}
	attrs := map[string]any{"quality": q, "tool": "read_" + c.Name}
	for _, k := range []string{"quality_reason", "unit"} { // not the timestamp: attributes change when something does
		if v, ok := body[k]; ok && v != nil {
			attrs[k] = v
		}
	}
	if e, ok := body["error"].(map[string]any); ok {
		attrs["error"] = e["message"]
	}
	b.mu.Lock()
	if lc, ok := b.lastCmd[c.Name]; ok {
		attrs["last_command"] = lc
	}
	b.mu.Unlock()
	a, _ := json.Marshal(attrs)
	b.publishChanged(ctx, t.Attributes(c.Name), string(a), force)
	b.publishChanged(ctx, t.Availability(c.Name), avail, force)
}

// Availability is the availability payload of a reading of quality q:
// online while good or degraded (Home Assistant shows the value), offline
// on error or stale (it shows the entity unavailable, not an old value).
func Availability(q promcp.Quality) string {
	if q == promcp.QualityGood || q == promcp.QualityDegraded {
		return Online
	}
	return Offline
}

// StatePayload is a value as a state topic carries it: ON or OFF for a
// boolean, the number in decimal, the string as it is.
func StatePayload(v any) string {
	switch v := v.(type) {
	case bool:
		if v {
			return On
		}
		return Off
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case string:
		return v
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// received takes a message the broker delivers: Home Assistant's birth
// (online on <discovery_prefix>/status) asks for the discovery again; a
// message on a command topic is queued with its idempotency key.
func (b *Bridge) received(pr paho.PublishReceived) (bool, error) {
	p := pr.Packet
	if p.Topic == b.cfg.Topics.Discovery+"/status" {
		if string(p.Payload) == Online {
			select {
			case b.up <- struct{}{}:
			default:
			}
		}
		return true, nil
	}
	e, ok := b.byCmd[p.Topic]
	if !ok {
		return true, nil
	}
	cmd := command{ent: e, payload: string(p.Payload), key: b.keys.key(p.PacketID, p.Duplicate())}
	select {
	case b.commands <- cmd:
	default:
		b.log.Warn("homeassistant: command dropped: too many waiting (nothing was applied)", "tool", e.Tool, "payload", cmd.payload)
	}
	return true, nil
}

// actuate runs the queued commands in order until ctx ends. It runs
// apart from the MQTT client's goroutine, which must stay free to read
// the acknowledgements of what the bridge publishes.
func (b *Bridge) actuate(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case cmd := <-b.commands:
			b.command(ctx, cmd)
		}
	}
}

// command runs one command through the do_* tool as the bridge's caller:
// policy decides it as it decides an agent's. Applied or refused, the
// capability is read again and its state re-published (for a refusal:
// the real value, which Home Assistant shows instead of the one asked
// for), and the outcome goes on its attributes topic and in the log.
func (b *Bridge) command(ctx context.Context, cmd command) {
	c := cmd.ent.Cap
	out := map[string]any{"tool": cmd.ent.Tool, "payload": cmd.payload, "idempotency_key": cmd.key,
		"at": time.Now().UTC().Format(time.RFC3339)}
	v, err := CommandValue(c, cmd.payload)
	var body map[string]any
	if err == nil {
		body, err = b.call(ctx, cmd.ent.Tool, map[string]any{"value": v, "idempotency_key": cmd.key})
	}
	switch {
	case err != nil:
		out["status"], out["reason"] = "refused", err.Error()
	case body["status"] == string(promcp.StatusSuccess) || body["status"] == string(promcp.StatusPartial):
		out["status"], out["applied_value"], out["replayed"] = body["status"], body["applied_value"], body["replayed"] == true
	default:
		out["status"], out["permission"], out["reason"] = "refused", body["permission"], body["reason"]
		if e, ok := body["error"].(map[string]any); ok && out["reason"] == nil {
			out["reason"] = e["message"]
		}
	}
	if out["status"] == "refused" {
		b.log.Warn("homeassistant: command refused, not applied", "tool", cmd.ent.Tool, "payload", cmd.payload,
			"caller", b.cfg.Caller.Name, "role", b.cfg.Caller.Role, "permission", out["permission"], "reason", out["reason"], "idempotency_key", cmd.key)
	} else {
		b.log.Info("homeassistant: command applied", "tool", cmd.ent.Tool, "payload", cmd.payload, "caller", b.cfg.Caller.Name,
			"applied_value", out["applied_value"], "replayed", out["replayed"], "idempotency_key", cmd.key)
	}
	b.mu.Lock()
	b.lastCmd[c.Name] = out
	b.mu.Unlock()
	b.refresh(ctx, c, true)
}

// CommandValue decodes a command payload for capability c: ON or OFF
// (also true or false) for a boolean, a number for a number or integer,
// the option for an enum. Range, step and options are the do_* tool's to
// check (its refusal is reported like any other).
func CommandValue(c *manifests.Capability, payload string) (any, error) {
	s := strings.TrimSpace(payload)
	switch c.Type {
	case manifests.TypeBoolean:
		switch strings.ToUpper(s) {
		case On, "TRUE":
			return true, nil
		case Off, "FALSE":
			return false, nil
		}
		return nil, fmt.Errorf("%q is not ON or OFF", s)
	case manifests.TypeNumber, manifests.TypeInteger:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("%q is not a number", s)
		}
		return f, nil
	}
	return s, nil
}
