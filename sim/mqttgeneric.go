//go:build !nomqtt

package sim

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"

	"github.com/promcp/promcp-device/manifests"
)

// A generic mqtt device (no preset; a PhysMCP mqtt binding) has no
// firmware of its own to imitate, so the simulator plays the simplest
// honest one: it publishes each channel's value, retained, on the
// channel's state topic (a JSON object nested by path when the channel
// has one, else the bare value: a boolean as its on/off word), and a
// command on a channel's command topic sets the value and publishes the
// state again. Availability, when declared, is "online" or the offline
// word, retained.

// genericTopics returns the device's channels grouped by state topic, in a
// stable order.
func (dev *mqttDevice) genericTopics() (topics []string, by map[string][]manifests.MQTTChannel) {
	by = map[string][]manifests.MQTTChannel{}
	for _, c := range dev.d.MQTT.Channels {
		ch, _ := dev.d.MQTT.Channel(c.Name)
		if ch.State == "" {
			continue
		}
		if _, ok := by[ch.State]; !ok {
			topics = append(topics, ch.State)
		}
		by[ch.State] = append(by[ch.State], ch)
	}
	sort.Strings(topics)
	return topics, by
}

// publishGenericLocked publishes the state topics; dev.mu is held.
func (dev *mqttDevice) publishGenericLocked() {
	topics, by := dev.genericTopics()
	for _, t := range topics {
		chs := by[t]
		if len(chs) == 1 && chs[0].Path == "" {
			dev.b.Publish(t, []byte(genericWord(chs[0], dev.values[chs[0].Name])), true)
			continue
		}
		obj := map[string]any{}
		for _, ch := range chs {
			setPath(obj, ch.Path, dev.values[ch.Name])
		}
		p, _ := json.Marshal(obj)
		dev.b.Publish(t, p, true)
	}
}

// genericWord is a bare value as the device would publish it.
func genericWord(ch manifests.MQTTChannel, v any) string {
	switch x := v.(type) {
	case bool:
		if x {
			return ch.On
		}
		return ch.Off
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case nil:
		return ""
	}
	p, _ := json.Marshal(v)
	return string(p)
}

// genericCommandsLocked applies a command on topic to the channels whose
// command topic it is; dev.mu is held.
func (dev *mqttDevice) genericCommandsLocked(topic string, payload []byte) {
	for _, c := range dev.d.MQTT.Channels {
		ch, _ := dev.d.MQTT.Channel(c.Name)
		if ch.Command != topic {
			continue
		}
		if v, ok := genericValue(ch, dev.values[ch.Name], payload); ok {
			dev.values[ch.Name] = v
		}
	}
}

// genericValue decodes a command's payload for a channel whose value now
// is old: the on/off words (or 1/0, true/false) for a boolean, a number,
// or a JSON object holding the channel's path.
func genericValue(ch manifests.MQTTChannel, old any, payload []byte) (any, bool) {
	s := strings.TrimSpace(string(payload))
	var obj map[string]any
	if ch.Path != "" && json.Unmarshal(payload, &obj) == nil {
		var cur any = obj
		for _, part := range strings.Split(ch.Path, ".") {
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, false
			}
			cur = m[part]
		}
		switch x := cur.(type) {
		case bool, float64:
			return x, true
		case string:
			s = x
		default:
			return nil, false
		}
	}
	if _, isBool := old.(bool); isBool {
		switch {
		case strings.EqualFold(s, ch.On) || s == "1" || strings.EqualFold(s, "true"):
			return true, true
		case strings.EqualFold(s, ch.Off) || s == "0" || strings.EqualFold(s, "false"):
			return false, true
		}
		return nil, false
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return f, true
	}
	return nil, false
}
