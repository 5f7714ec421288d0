package server

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"
)

func TestGuardNumbers(t *testing.T) {
	unchanged := []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":1e309}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"do_x","arguments":{"value":1e308}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"do_x","arguments":{"value":"1e309"}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"content":[],"tools/call":1e309}}`,
		`not json tools/call`,
	}
	for _, msg := range unchanged {
		if out, changed := guardNumbers([]byte(msg)); changed || string(out) != msg {
			t.Errorf("guardNumbers(%s) = %s, %t; want it unchanged", msg, out, changed)
		}
	}
	msg := `{"jsonrpc":"2.0","id":"a-1","method":"tools/call","params":{"name":"do_x","arguments":{"value":-1e309,"idempotency_key":"k","nested":{"a":[1,2e999]}}}}`
	out, changed := guardNumbers([]byte(msg))
	if !changed {
		t.Fatalf("guardNumbers(%s) changed nothing", msg)
	}
	var m struct {
		ID     string `json:"id"`
		Params struct {
			Name      string         `json:"name"`
			Arguments map[string]any `json:"arguments"`
		} `json:"params"`
	}
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("guarded message %s does not decode: %v", out, err)
	}
	if m.ID != "a-1" || m.Params.Name != "do_x" || m.Params.Arguments["idempotency_key"] != "k" {
		t.Fatalf("guarded message %s lost id, name or key", out)
	}
	e := numberOutOfRange(map[string]any{"value": m.Params.Arguments["value"]})
	if e == nil || e.Field != "value" || !strings.Contains(e.Message, "-1e309 is out of range") {
		t.Fatalf("numberOutOfRange(value) = %+v", e)
	}
	if e := numberOutOfRange(map[string]any{"nested": m.Params.Arguments["nested"]}); e == nil || e.Field != "nested" {
		t.Fatalf("numberOutOfRange(nested) = %+v", e)
	}
}

// TestGuardLines: lines come through whole and in order, however the
// reads are cut, with or without a final newline.
func TestGuardLines(t *testing.T) {
	in := `{"method":"ping"}` + "\r\n" +
		`{"id":2,"method":"tools/call","params":{"name":"do_x","arguments":{"value":1e309}}}` + "\n" +
		`{"method":"last"}`
	b, err := io.ReadAll(iotest.OneByteReader(newGuardLines(iotest.HalfReader(strings.NewReader(in)))))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) != 3 || lines[0] != `{"method":"ping"}`+"\r" || lines[2] != `{"method":"last"}` ||
		!strings.Contains(lines[1], `promcp:number out of range:1e309`) {
		t.Fatalf("guarded stream = %q", b)
	}
}

// TestGuardNumbersWithoutExponent: the fast path that skips messages
// without an exponent still guards a number of more than 308 digits, and
// an initialize spelled with an escape is still seen as one.
func TestGuardNumbersWithoutExponent(t *testing.T) {
	msg := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"do_x","arguments":{"value":` + strings.Repeat("9", 310) + `}}}`
	if _, changed := guardNumbers([]byte(msg)); !changed {
		t.Fatal("a 310-digit integer argument was not guarded")
	}
	if mayOverflow([]byte(`{"method":"tools/call","params":{"arguments":{"value":12.5,"n":-3}}}`)) {
		t.Fatal("mayOverflow: true for plain numbers")
	}
	for _, body := range []string{`{"jsonrpc":"2.0","id":1,"method":"initialize"}`, `{"jsonrpc":"2.0","id":1,"method":"initializ\u0065"}`} {
		r, _ := http.NewRequest(http.MethodPost, "/mcp", nil)
		if !isInitialize(r, []byte(body)) {
			t.Errorf("isInitialize(%s) = false", body)
		}
	}
	r, _ := http.NewRequest(http.MethodPost, "/mcp", nil)
	if isInitialize(r, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_x"}}`)) {
		t.Error("isInitialize(tools/call) = true")
	}
}
