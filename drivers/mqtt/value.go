package mqtt

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Kind is the type a channel's value is decoded to.
type Kind int

// Kinds of value.
const (
	Number  Kind = iota // float64
	Integer             // int64 (rounded)
	Boolean             // bool
	Text                // string
)

// Channel is one value of a device: where it is published and how a
// command sets it.
type Channel struct {
	Name string
	// State is the topic the value arrives on; Path a dot-separated path
	// into its JSON payload, or "" for the whole payload.
	State, Path string
	// Command is the topic commands are published on ("" read-only);
	// Payload the command's template ({{value}} and {{json}}).
	Command, Payload string
	// On and Off are a boolean's words.
	On, Off string
	Retain  bool
}

// Decode extracts the channel's value from payload as kind. A JSON
// payload is walked along Path; a plain payload is taken whole (only
// without a Path).
func (ch Channel) Decode(payload []byte, kind Kind) (any, error) {
	var v any
	if ch.Path == "" {
		v = plain(payload)
	} else {
		var doc any
		dec := json.NewDecoder(bytes.NewReader(payload))
		dec.UseNumber()
		if err := dec.Decode(&doc); err != nil {
			return nil, fmt.Errorf("payload %s is not JSON: %w", clip(payload), err)
		}
		v = doc
		for _, key := range strings.Split(ch.Path, ".") {
			m, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("payload %s has no %q", clip(payload), ch.Path)
			}
			if v, ok = m[key]; !ok {
				return nil, fmt.Errorf("payload %s has no %q", clip(payload), ch.Path)
			}
		}
	}
	switch kind {
	case Number, Integer:
		var s string
		switch x := v.(type) {
		case json.Number:
			s = x.String()
		case string:
			s = strings.TrimSpace(x)
		default:
			return nil, fmt.Errorf("%s: %v is not a number", ch.Name, v)
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not a number", ch.Name, s)
		}
		if kind == Integer {
			return int64(f + copysignHalf(f)), nil
		}
		return f, nil
	case Boolean:
		switch x := v.(type) {
		case bool:
			return x, nil
		case json.Number:
			return x.String() != "0", nil
		case string:
			switch s := strings.TrimSpace(x); {
			case strings.EqualFold(s, ch.On), strings.EqualFold(s, "true"), s == "1":
				return true, nil
			case strings.EqualFold(s, ch.Off), strings.EqualFold(s, "false"), s == "0":
				return false, nil
			}
		}
		return nil, fmt.Errorf("%s: %v is neither %s nor %s", ch.Name, v, ch.On, ch.Off)
	}
	switch x := v.(type) {
	case string:
		return x, nil
	case json.Number:
		return x.String(), nil
	case bool:
		return strconv.FormatBool(x), nil
	}
	return nil, fmt.Errorf("%s: %v is not a word", ch.Name, v)
}

func copysignHalf(f float64) float64 {
	if f < 0 {
		return -0.5
	}
	return 0.5
}

// plain is a whole payload as a value: a JSON scalar as JSON, anything
// else as its text.
func plain(payload []byte) any {
	s := strings.TrimSpace(string(payload))
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return json.Number(s)
	}
	return s
}

// Encode renders the command for v (float64, int64, bool or string).
func (ch Channel) Encode(v any) []byte {
	var text, js string
	switch x := v.(type) {
	case bool:
		text = ch.Off
		if x {
			text = ch.On
		}
		js = strconv.Quote(text)
	case float64:
		text = strconv.FormatFloat(x, 'f', -1, 64)
		js = text
	case int64:
		text = strconv.FormatInt(x, 10)
		js = text
	case string:
		text = x
		b, _ := json.Marshal(x)
		js = string(b)
	default:
		text = fmt.Sprint(x)
		js = strconv.Quote(text)
	}
	out := strings.ReplaceAll(ch.Payload, "{{json}}", js)
	return []byte(strings.ReplaceAll(out, "{{value}}", text))
}

// Offline reports whether an availability payload says the device is
// gone: the word itself, or a JSON object whose "state" is the word
// (Zigbee2MQTT's {"state":"offline"}). Case is ignored.
func Offline(payload []byte, word string) bool {
	s := strings.TrimSpace(string(payload))
	if strings.EqualFold(s, word) {
		return true
	}
	var obj struct {
		State string `json:"state"`
	}
	return strings.HasPrefix(s, "{") && json.Unmarshal(payload, &obj) == nil && strings.EqualFold(obj.State, word)
}

// clip shows a payload in an error, at most 64 bytes of it.
func clip(p []byte) string {
	if len(p) > 64 {
		return strconv.Quote(string(p[:64])) + "…"
	}
	return strconv.Quote(string(p))
}
