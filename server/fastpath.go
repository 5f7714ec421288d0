package server

import (
	"fmt"
	"maps"
	"math"
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
