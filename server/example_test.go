package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/promcp/promcp-device/promcp"
	"github.com/promcp/promcp-device/server"
)

// A custom proMCP server without a manifest: a read, an action and can_do.
// The framework fills timestamps, the idempotency key, schemas and
// annotations, keeps do_* idempotent, and refuses to send a response that
// breaks the contract.
func Example() {
	ctx := context.Background()
	clock := fixedClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	srv, err := server.New("pump-station", "1.0", server.WithClock(clock))
	if err != nil {
		panic(err)
	}

	var mu sync.Mutex
	speed, writes := 30.0, 0

	must(srv.Read(server.ReadTool{Name: "read_pump_speed", Description: "Pump speed.", Unit: "%",
		Value: map[string]any{"type": "number"}},
		func(ctx context.Context, _ server.ReadRequest) (promcp.ReadResult, error) {
			mu.Lock()
			defer mu.Unlock()
			return promcp.ReadResult{Value: speed, Unit: "%", Quality: promcp.QualityGood}, nil
		}))

	must(srv.Do(server.DoTool{Name: "do_set_pump_speed", Description: "Set the pump speed.",
		Value:       map[string]any{"type": "number", "minimum": 0, "maximum": 100},
		SideEffects: []string{"flow changes"}, Compensable: true},
		func(ctx context.Context, req server.DoRequest) (promcp.DoResult, error) {
			mu.Lock()
			defer mu.Unlock()
			v := req.Value.(float64)
			if v < 0 || v > 100 {
				return promcp.DoResult{Status: promcp.StatusFailed, Permission: promcp.OutOfRange,
					Reason: "speed must be 0..100 %"}, nil
			}
			prev := speed
			speed, writes = v, writes+1
			return promcp.DoResult{Status: promcp.StatusSuccess, PreviousValue: prev, AppliedValue: v,
				CompensationHint: promcp.Hint(fmt.Sprintf("do_set_pump_speed value=%v", prev))}, nil
		}))

	must(srv.CanDo("Is changing the pump speed allowed now?",
		func(ctx context.Context, req promcp.CanDoRequest) (promcp.CapabilityReport, error) {
			return promcp.CapabilityReport{Candidates: []promcp.Candidate{{
				Capability: "do_set_pump_speed", Source: "pump-station/pump", Confidence: 1,
				Permission: promcp.Allowed, ValidUntil: clock.Now().Add(5 * time.Second),
				Constraints: promcp.Constraints{Min: ptr(0.0), Max: ptr(100.0), Unit: "%"},
			}}}, nil
		}))

	c, err := client.NewInProcessClient(srv.MCP())
	if err != nil {
		panic(err)
	}
	defer c.Close()
	must(c.Start(ctx))
	_, err = c.Initialize(ctx, mcp.InitializeRequest{})
	must(err)

	tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	must(err)
	for _, t := range tools.Tools {
		fmt.Printf("%s readOnly=%t destructive=%t idempotent=%t\n", t.Name,
			*t.Annotations.ReadOnlyHint, *t.Annotations.DestructiveHint, *t.Annotations.IdempotentHint)
	}

	call := func(name string, args map[string]any) map[string]any {
		res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: args}})
		must(err)
		var body map[string]any
		b, _ := json.Marshal(res.StructuredContent)
		must(json.Unmarshal(b, &body))
		return body
	}
	r := call("read_pump_speed", map[string]any{})
	fmt.Println("read:", r["value"], r["unit"], r["quality"], r["timestamp"])
	for range 2 {
		d := call("do_set_pump_speed", map[string]any{"value": 55, "idempotency_key": "k-1"})
		fmt.Println("do:", d["status"], d["previous_value"], "->", d["applied_value"], "replayed:", d["replayed"] == true, "hint:", d["compensation_hint"])
	}
	d := call("do_set_pump_speed", map[string]any{"value": 55, "idempotency_key": "k-1", "extra": 1})
	fmt.Println("bad argument:", d["status"], d["error"].(map[string]any)["code"])
	rep := call("can_do", map[string]any{"intent": map[string]any{"action": "do_set_pump_speed"}})
	fmt.Println("can_do feasible:", rep["feasible"])
	mu.Lock()
	fmt.Println("writes:", writes)
	mu.Unlock()

	// Output:
	// can_do readOnly=true destructive=false idempotent=true
	// do_set_pump_speed readOnly=false destructive=false idempotent=true
	// read_pump_speed readOnly=true destructive=false idempotent=true
	// read: 30 % good 2026-11-30T12:00:00Z
	// do: success 30 -> 55 replayed: false hint: do_set_pump_speed value=30
	// do: success 30 -> 55 replayed: true hint: do_set_pump_speed value=30
	// bad argument: failed invalid_argument
	// can_do feasible: true
	// writes: 1
}

type fixedClock time.Time

func (c fixedClock) Now() time.Time { return time.Time(c) }

// After fires at once: a fixed clock never moves, so nothing waits on it.
func (c fixedClock) After(time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	ch <- time.Time(c)
	return ch
}

func ptr[T any](v T) *T { return &v }

func must(err error) {
	if err != nil {
		panic(err)
	}
}
