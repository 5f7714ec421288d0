package lint

import (
	"fmt"
	"slices"
	"strings"

	"github.com/promcp/promcp-device/promcp"
)

var (
	requiredRead      = []string{"quality", "timestamp", "value"}
	requiredDo        = []string{"compensable", "idempotency_key", "status", "timestamp"}
	requiredCanDo     = []string{"blocked", "candidates", "feasible", "query_id"}
	requiredCandidate = []string{"capability", "confidence", "permission", "source", "valid_until"}
	requiredBlocked   = []string{"capability", "permission", "reason", "source"}
)

func strs[T ~string](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}

// responseOf applies check to the properties of tool's response schema
// when the tool is of the kind prefix (a name prefix, or "can_do") and has
// a response schema.
func responseOf(kind string, check func(p map[string]any) []string) func(*Tool) []string {
	return func(t *Tool) []string {
		of := strings.HasPrefix(t.Name, kind) || kind == "do_" && isDo(t.Name) // start_* answers as a do_*
		if kind == "can_do" {
			of = t.Name == "can_do"
		}
		if !of {
			return nil
		}
		rs := t.response()
		if rs == nil {
			return nil
		}
		return check(props(object(rs)))
	}
}

// missing returns a message per field of want not in p.
func missing(p map[string]any, want []string, msg func(f string) string) []string {
	var out []string
	for _, f := range want {
		if _, ok := p[f]; !ok {
			out = append(out, msg(f))
		}
	}
	return out
}

// outside returns the values of vs not in allowed, sorted.
func outside(vs, allowed []string) []string {
	var out []string
	for _, v := range vs {
		if !slices.Contains(allowed, v) {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}

func list(vs []string) string { return "['" + strings.Join(vs, "', '") + "']" }

// itemProps is the properties of the items of array property name.
func itemProps(p map[string]any, name string) map[string]any {
	return props(sub(sub(p, name), "items"))
}

// responseRules: R000–R013 and SE001, the reference linter's response
// schemas, read from outputSchema or responseSchema. (The reference
// defines no R011.)
var responseRules = []toolRule{
	{Rule{"R000", Info, "a response schema is declared", false}, func(t *Tool) []string {
		return when(t.response() == nil, "No responseSchema declared. Add 'responseSchema' (or the MCP outputSchema) to enable full response contract validation.")
	}},
	{Rule{"R001", Error, "a read_* response has value, timestamp and quality", false}, responseOf("read_", func(p map[string]any) []string {
		return missing(p, requiredRead, func(f string) string {
			return fmt.Sprintf("read_* responseSchema missing required field: '%s'. Required: %s.", f, list(requiredRead))
		})
	})},
	{Rule{"R002", Error, "a read_* quality enum has only good, stale, degraded, error", false}, responseOf("read_", func(p map[string]any) []string {
		q, ok := p["quality"].(map[string]any)
		if !ok {
			return nil
		}
		bad := outside(enum(q), strs(promcp.Qualities()))
		return when(len(bad) > 0, fmt.Sprintf("quality enum has invalid values: %s.", list(bad)))
	})},
	{Rule{"R003", Error, "a read_* quality enum has all four values", false}, responseOf("read_", func(p map[string]any) []string {
		q, ok := p["quality"].(map[string]any)
		if !ok {
			return nil
		}
		miss := outside(strs(promcp.Qualities()), enum(q))
		return when(len(miss) > 0, fmt.Sprintf("quality enum is incomplete. Missing: %s.", list(miss)))
	})},
	{Rule{"R004", Error, "a do_* response has status, idempotency_key, compensable and timestamp", false}, responseOf("do_", func(p map[string]any) []string {
		return missing(p, requiredDo, func(f string) string {
			return fmt.Sprintf("do_* responseSchema missing required field: '%s'. Required: %s.", f, list(requiredDo))
		})
	})},
	{Rule{"R005", Error, "a do_* status enum has only success, partial, failed", false}, responseOf("do_", func(p map[string]any) []string {
		bad := outside(enum(sub(p, "status")), strs(promcp.Statuses()))
		return when(len(bad) > 0, fmt.Sprintf("status enum has invalid values: %s.", list(bad)))
	})},
	{Rule{"R006", Error, "a do_* response has compensable", false}, responseOf("do_", func(p map[string]any) []string {
		_, ok := p["compensable"]
		return when(!ok, "do_* responseSchema missing 'compensable' field.")
	})},
	{Rule{"R007", Error, "a do_* response has idempotency_key", false}, responseOf("do_", func(p map[string]any) []string {
		_, ok := p["idempotency_key"]
		return when(!ok, "do_* responseSchema missing 'idempotency_key' field.")
	})},
	{Rule{"R008", Warning, "a do_* response has side_effects", false}, responseOf("do_", func(p map[string]any) []string {
		_, ok := p["side_effects"]
		return when(!ok, "do_* responseSchema missing 'side_effects' array (recommended).")
	})},
	{Rule{"R009", Error, "a can_do response has query_id, feasible, candidates and blocked", false}, responseOf("can_do", func(p map[string]any) []string {
		return missing(p, requiredCanDo, func(f string) string {
			return fmt.Sprintf("can_do responseSchema missing required field: '%s'. Required: %s.", f, list(requiredCanDo))
		})
	})},
	{Rule{"R010", Error, "can_do candidates[] have capability, source, confidence, permission, valid_until", false}, responseOf("can_do", itemsHave("candidates", requiredCandidate))},
	{Rule{"R012", Error, "can_do candidates[] permission enum has only the spec's values", false}, responseOf("can_do", func(p map[string]any) []string {
		perm, ok := itemProps(p, "candidates")["permission"].(map[string]any)
		if !ok {
			return nil
		}
		bad := outside(enum(perm), strs(promcp.Permissions()))
		return when(len(bad) > 0, fmt.Sprintf("can_do candidates permission enum has unknown values: %s. Use namespaced prefix for domain extensions.", list(bad)))
	})},
	{Rule{"R013", Error, "can_do blocked[] have capability, source, permission, reason", false}, responseOf("can_do", itemsHave("blocked", requiredBlocked))},
	{Rule{"SE001", Error, "a read_* response declares no side_effects", false}, responseOf("read_", func(p map[string]any) []string {
		_, ok := p["side_effects"]
		return when(ok, "read_* tool declares 'side_effects'. Read tools must have no side effects — rename to do_* if mutation occurs.")
	})},
}

// itemsHave checks that the items of a can_do response's array key declare
// the required fields; a response without the array passes (another rule
// asks for it: R009).
func itemsHave(key string, required []string) func(p map[string]any) []string {
	return func(p map[string]any) []string {
		if _, ok := p[key]; !ok {
			return nil
		}
		return missing(itemProps(p, key), required, func(f string) string {
			return fmt.Sprintf("can_do %s[] missing required field: '%s'.", key, f)
		})
	}
}
