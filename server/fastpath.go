package server

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/promcp/promcp-device/promcp"
)

// typedReadCheck returns a check of a read result against t's output
// schema done on the Go value, or nil when the schema says more than the
// check knows (then the JSON Schema validator runs). The read schema is the
// kind's, with the unit fixed and the value's JSON type narrowed: with
// ReadResult.Validate (quality, timestamp, error only with quality error),
// checking the unit and the value's type is the whole schema.
func typedReadCheck(t ReadTool) func(promcp.ReadResult) error {
	var want string
	for k, v := range t.Value {
		switch k {
		case "type":
			want, _ = v.(string)
		case "description", "title":
		default:
			return nil
		}
	}
	if t.Value != nil && want == "" {
		return nil
	}
	return func(r promcp.ReadResult) error {
		if r.Unit != t.Unit {
			return fmt.Errorf("%w: %s: unit %q, the tool declares %q", promcp.ErrContract, t.Name, r.Unit, t.Unit)
		}
		if r.Value == nil || want == "" || jsonType(r.Value, want) {
			return nil
		}
		return fmt.Errorf("%w: %s: value %v (%T) is not of JSON type %s", promcp.ErrContract, t.Name, r.Value, r.Value, want)
	}
}

func jsonType(v any, want string) bool {
	switch want {
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "number", "integer":
		f, ok := promcp.Number(v)
		return ok && (want == "number" || f == math.Trunc(f))
	}
	return false
}

// argMemo remembers the arguments of a read tool that already passed its
// input schema, by their raw JSON: agents call reads with the same few
// arguments ({} mostly), so most calls skip the decode and the schema.
// It keeps at most 64 entries. Safe for concurrent use.
type argMemo struct {
	mu sync.RWMutex
	m  map[string]map[string]any
	// questions are can_do's arguments decoded and resolved, by their raw
	// JSON (can_do only; question).
	questions map[string]question
}

// question is a can_do request decoded from arguments that passed the
// input schema, resolved (a PhysMCP query made the intent), and the scope
// its grounds name. Shared by every call with the same raw arguments:
// never changed once kept.
type question struct {
	req   promcp.CanDoRequest
	scope string
}

// question decodes can_do's arguments into the request, checked against
// the input schema, its defaults filled and a PhysMCP query resolved, and
// says which scope it asks about; the same raw arguments are decoded once
// (at most 64 kept).
func (a *argMemo) question(s *Server, req mcp.CallToolRequest) (promcp.CanDoRequest, string, *promcp.Error) {
	raw := rawArguments(req)
	a.mu.RLock()
	q, ok := a.questions[string(raw)]
	a.mu.RUnlock()
	if ok {
		return q.req, q.scope, nil
	}
	if _, perr := a.arguments(s, "can_do", req); perr != nil {
		return promcp.CanDoRequest{}, "", perr
	}
	if err := json.Unmarshal(raw, &q.req); err != nil {
		return promcp.CanDoRequest{}, "", &promcp.Error{Code: promcp.CodeInvalidArgument, Message: err.Error()}
	}
	if q.req.Scope == "" && len(q.req.ScopeDevices) == 0 {
		q.req.Scope = "local"
	}
	q.req.Resolve() // a PhysMCP query becomes the intent
	q.scope = q.req.Scope
	if len(q.req.ScopeDevices) > 0 {
		q.scope = "devices " + strings.Join(q.req.ScopeDevices, ", ")
	}
	a.mu.Lock()
	if a.questions == nil {
		a.questions = map[string]question{}
	}
	if len(a.questions) < 64 {
		a.questions[string(raw)] = q
	}
	a.mu.Unlock()
	return q.req, q.scope, nil
}

func (a *argMemo) arguments(s *Server, tool string, req mcp.CallToolRequest) (map[string]any, *promcp.Error) {
	raw := string(rawArguments(req))
	a.mu.RLock()
	args, ok := a.m[raw]
	a.mu.RUnlock()
	if ok {
		return maps.Clone(args), nil
	}
	args, perr := s.arguments(tool, req)
	if perr == nil {
		a.mu.Lock()
		if len(a.m) < 64 {
			a.m[raw] = maps.Clone(args)
		}
		a.mu.Unlock()
	}
	return args, perr
}
