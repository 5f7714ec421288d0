package fleet

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/promcp/promcp-device/promcp"
	"github.com/promcp/promcp-device/server"
)

// Call runs tool (its name on gateway gw) on gw through NATS and returns
// the gateway's own result. An error means no answer: errors.Is(err,
// nats.ErrNoResponders) when the gateway is not reachable at all (the
// call was never delivered), a deadline when the answer did not come
// (the call may have run).
func (v *View) Call(ctx context.Context, gw, tool string, args json.RawMessage, timeout time.Duration) (*mcp.CallToolResult, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	dl, _ := ctx.Deadline()
	c := server.CallerFrom(ctx)
	data, err := json.Marshal(callRequest{Tool: tool, Arguments: args, Caller: wireCaller{Name: c.Name, Role: c.Role},
		Credential: c.Credential, Deadline: dl.UTC()})
	if err != nil {
		return nil, err
	}
	msg, err := v.request(ctx, gw, CallSubject(gw, v.cfg.Node), data)
	if err != nil {
		return nil, err
	}
	if code := msg.Header.Get(micro.ErrorCodeHeader); code != "" {
		return nil, fmt.Errorf("gateway %s: %s %s", gw, code, msg.Header.Get(micro.ErrorHeader))
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(msg.Data, &res); err != nil {
		return nil, fmt.Errorf("gateway %s: unreadable result: %w", gw, err)
	}
	return &res, nil
}

// request sends data on subject to gateway gw and waits for its answer
// on a reply subject naming gw (ReplyPrefix), which only gw (or a hub)
// may publish on, until ctx ends: a late answer finds no subscriber.
// nats.ErrNoResponders when nobody subscribes to subject.
func (v *View) request(ctx context.Context, gw, subject string, data []byte) (*nats.Msg, error) {
	inbox := ReplyPrefix(v.cfg.Node, gw) + "." + newRequestToken()
	sub, err := v.nc.SubscribeSync(inbox)
	if err != nil {
		return nil, err
	}
	defer sub.Unsubscribe()
	if err := v.nc.PublishRequest(subject, inbox, data); err != nil {
		return nil, err
	}
	for {
		msg, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			return nil, err
		}
		if msg.Subject != inbox {
			// A message JetStream delivered here keeps the subject it was
			// stored under: it is no answer (a gateway may create
			// consumers with any deliver subject; docs/fleet.md, Trust).
			continue
		}
		if len(msg.Data) == 0 && msg.Header.Get("Status") == "503" {
			return nil, nats.ErrNoResponders
		}
		return msg, nil
	}
}

// routedRead is a routed read_*'s handler: the gateway's answer, or a
// read with quality error and source_unreachable when none came.
func (e *Endpoint) routedRead(gw, tool string, unit any) func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := e.v.Call(ctx, gw, tool, rawArgs(req), e.cfg.CallTimeout)
		if err == nil {
			return restamp(res, gw, req.Params.Name), nil
		}
		body := map[string]any{"value": nil, "unit": unit, "timestamp": e.v.cfg.Clock.Now().UTC(), "quality": promcp.QualityError,
			"quality_reason": "gateway " + gw + " did not answer",
			"error":          promcp.Error{Code: promcp.CodeSourceUnreachable, Message: "routed read to gateway " + gw + " failed: " + err.Error()}}
		return resultOf(body, true), nil
	}
}

// routedDo is a routed do_*'s handler. Only the owning gateway decides
// and acts; it deduplicates by idempotency_key. When its answer is lost
// the outcome is unknown: the result is partial with the same key, and
// nothing is retried here.
func (e *Endpoint) routedDo(gw, tool string) func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args := rawArgs(req)
		res, err := e.v.Call(ctx, gw, tool, args, e.cfg.CallTimeout)
		if err == nil {
			return restamp(res, gw, req.Params.Name), nil
		}
		var a struct {
			Key   string `json:"idempotency_key"`
			Value any    `json:"value"`
		}
		_ = json.Unmarshal(args, &a)
		body := map[string]any{"idempotency_key": a.Key, "applied_value": nil, "previous_value": nil, "side_effects": []string{},
			"compensable": false, "compensation_hint": nil, "timestamp": e.v.cfg.Clock.Now().UTC(), "requested_value": a.Value}
		if errors.Is(err, nats.ErrNoResponders) {
			// Nobody received it: nothing happened.
			body["status"], body["permission"] = promcp.StatusFailed, promcp.SourceUnreachable
			body["reason"] = "gateway " + gw + " is not reachable from this node: the action was not delivered and nothing changed"
			body["error"] = promcp.Error{Code: promcp.CodeSourceUnreachable, Message: err.Error()}
			return resultOf(body, true), nil
		}
		body["status"] = promcp.StatusPartial
		body["reason"] = "the answer of gateway " + gw + " was lost (" + err.Error() + "): the action may or may not have happened. " +
			"Do not retry with a new key: read the state with read_*, or call again with the same idempotency_key " +
			strconv.Quote(a.Key) + " (the gateway runs a key at most once and returns its outcome)"
		return resultOf(body, false), nil
	}
}

// restamp names, in the result's provenance stamp, the tool as the
// fleet serves it and the source as <gateway>/<device>.
func restamp(res *mcp.CallToolResult, gw, routed string) *mcp.CallToolResult {
	if res.Meta == nil {
		return res
	}
	if prov, ok := res.Meta.AdditionalFields[server.ProvenanceKey].(map[string]any); ok {
		prov["tool"] = routed
		if src, ok := prov["source"].(string); ok {
			prov["source"] = routedSource(gw, src)
		}
		prov["routed_via"] = "fleet"
	}
	return res
}

// resultOf is a tool result whose structured content and text are body.
func resultOf(body any, isError bool) *mcp.CallToolResult {
	b, _ := json.Marshal(body)
	var sc any
	_ = json.Unmarshal(b, &sc)
	return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(string(b))}, StructuredContent: sc, IsError: isError}
}

func rawArgs(req mcp.CallToolRequest) json.RawMessage {
	switch a := req.Params.Arguments.(type) {
	case nil:
		return nil
	case json.RawMessage:
		return a
	default:
		b, _ := json.Marshal(a)
		return b
	}
}

// unitOf is the unit a read tool's output schema declares, or nil.
func unitOf(t mcp.Tool) any {
	var s struct {
		Properties struct {
			Unit struct {
				Const any `json:"const"`
			} `json:"unit"`
		} `json:"properties"`
	}
	b := t.RawOutputSchema
	if len(b) == 0 {
		b, _ = json.Marshal(t.OutputSchema)
	}
	if json.Unmarshal(b, &s) != nil {
		return nil
	}
	return s.Properties.Unit.Const
}

// newQueryID is a random UUID v4.
func newQueryID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// group is one group endpoint of a gateway's routed tools.
type group struct {
	name  string
	tools []string // routed names
}

// Density limits of one group, can_do included.
const (
	maxGroupTools = 8
	maxGroupDos   = 5
)

// groupTools splits gateway in's tools into groups within the density
// limits (at most 8 tools with can_do, at most 5 do_*), keeping each
// read_x with its do_x: gw, gw_2, gw_3, ...
func groupTools(in Info) []group {
	type unit struct {
		names []string
		dos   int
	}
	var units []unit
	index := map[string]int{}
	for _, t := range in.Tools {
		switch {
		case strings.HasPrefix(t.Name, "read_"):
			index[strings.TrimPrefix(t.Name, "read_")] = len(units)
			units = append(units, unit{names: []string{routedName(in.GatewayID, t.Name)}})
		case strings.HasPrefix(t.Name, "do_"):
			u := unit{names: []string{routedName(in.GatewayID, t.Name)}, dos: 1}
			if i, ok := index[strings.TrimPrefix(t.Name, "do_")]; ok && len(units[i].names) == 1 && units[i].dos == 0 {
				units[i].names, units[i].dos = append(units[i].names, u.names...), 1
				continue
			}
			units = append(units, u)
		}
	}
	var out []group
	cur, dos := group{name: in.GatewayID}, 0
	for _, u := range units {
		if len(cur.tools) > 0 && (len(cur.tools)+len(u.names) > maxGroupTools-1 || dos+u.dos > maxGroupDos) {
			out = append(out, cur)
			cur, dos = group{name: in.GatewayID + "_" + strconv.Itoa(len(out)+1)}, 0
		}
		cur.tools = append(cur.tools, u.names...)
		dos += u.dos
	}
	return append(out, cur)
}
