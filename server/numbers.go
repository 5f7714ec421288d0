package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/promcp/promcp-device/promcp"
)

// A number too large for a float64 (1e309) is valid JSON, but mcp-go
// decodes tool arguments into Go values before any handler runs, fails,
// and answers a bare JSON-RPC error instead of the typed do_* body. So the
// transports pass each message through guardNumbers first: an argument
// holding such a number is replaced by a marker string, which
// argumentsFor then refuses as invalid_argument naming the argument.

// numberMarker starts the string that stands for an argument that held a
// number out of float64 range; the number's text (shortened) follows.
const numberMarker = "\x00promcp:number out of range:"

// guardNumbers returns msg with every tools/call argument that holds a
// number out of float64 range replaced by a marker string, and whether it
// changed anything (almost never).
func guardNumbers(msg []byte) ([]byte, bool) {
	if !mayOverflow(msg) || !bytes.Contains(msg, []byte("tools/call")) {
		return msg, false
	}
	var whole map[string]json.RawMessage
	if json.Unmarshal(msg, &whole) != nil {
		return msg, false
	}
	var method string
	if json.Unmarshal(whole["method"], &method) != nil || method != "tools/call" {
		return msg, false
	}
	var params map[string]json.RawMessage
	if json.Unmarshal(whole["params"], &params) != nil {
		return msg, false
	}
	var args map[string]json.RawMessage
	if json.Unmarshal(params["arguments"], &args) != nil {
		return msg, false
	}
	changed := false
	for name, v := range args {
		var x any
		err := json.Unmarshal(v, &x)
		if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok && strings.HasPrefix(te.Value, "number") {
			text := strings.TrimPrefix(te.Value, "number ")
			if len(text) > 40 {
				text = text[:40] + "…"
			}
			args[name], _ = json.Marshal(numberMarker + text)
			changed = true
		}
	}
	if !changed {
		return msg, false
	}
	var err error
	if params["arguments"], err = json.Marshal(args); err != nil {
		return msg, false
	}
	if whole["params"], err = json.Marshal(params); err != nil {
		return msg, false
	}
	out, err := json.Marshal(whole)
	if err != nil {
		return msg, false
	}
	return out, true
}

// mayOverflow reports whether msg may hold a JSON number out of float64
// range: one needs an exponent (a digit followed by e or E) or more than
// 308 digits. Most messages have neither and are not decoded.
func mayOverflow(msg []byte) bool {
	run := 0
	for _, c := range msg {
		switch {
		case c >= '0' && c <= '9':
			if run++; run > 308 {
				return true
			}
		case (c == 'e' || c == 'E') && run > 0:
			return true
		default:
			run = 0
		}
	}
	return false
}

// numberOutOfRange returns the error for an argument that held a number
// out of float64 range (see guardNumbers), or nil.
func numberOutOfRange(args map[string]any) *promcp.Error {
	for name, v := range args {
		s, ok := v.(string)
		if !ok || !strings.HasPrefix(s, numberMarker) {
			continue
		}
		return &promcp.Error{Code: promcp.CodeInvalidArgument, Field: name,
			Message: fmt.Sprintf("%s %s is out of range: it does not fit a 64-bit float (magnitude up to about 1.8e308)",
				name, strings.TrimPrefix(s, numberMarker))}
	}
	return nil
}

// guardLines passes newline-delimited JSON-RPC messages (stdio) through
// guardNumbers.
type guardLines struct {
	r   *bufio.Reader
	buf []byte
	err error
	// intercept, when set, may take a message (answering it itself)
	// instead of passing it on.
	intercept func(msg []byte) bool
}

func newGuardLines(r io.Reader) *guardLines { return &guardLines{r: bufio.NewReader(r)} }

func (g *guardLines) Read(p []byte) (int, error) {
	for len(g.buf) == 0 {
		if g.err != nil {
			return 0, g.err
		}
		line, err := g.r.ReadBytes('\n')
		g.err = err
		if len(line) > 0 && g.intercept != nil && g.intercept(bytes.TrimRight(line, "\r\n")) {
			continue
		}
		if len(line) > 0 {
			if guarded, changed := guardNumbers(bytes.TrimRight(line, "\r\n")); changed {
				line = append(guarded, '\n')
			}
			g.buf = line
		}
	}
	n := copy(p, g.buf)
	g.buf = g.buf[n:]
	return n, nil
}

// guardBodies passes HTTP request bodies through guardNumbers. The body is
// bounded by the limits in front of it.
func guardBodies(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hb, ok := r.Body.(*heldBody); ok && r.Method == http.MethodPost {
			// Read by the gate already: not copied again.
			if body, changed := guardNumbers(hb.b); changed {
				r.Body = io.NopCloser(bytes.NewReader(body))
				r.ContentLength = int64(len(body))
			}
		} else if r.Method == http.MethodPost && r.Body != nil && r.Body != http.NoBody {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				status := http.StatusBadRequest
				if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
					status = http.StatusRequestEntityTooLarge
				}
				jsonRPCError(w, status, "reading the request body: "+err.Error())
				return
			}
			body, _ = guardNumbers(body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
		}
		next.ServeHTTP(w, r)
	})
}
