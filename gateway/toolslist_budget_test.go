package gateway_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// The tools/list budget: the bytes of every page's answer (as the server
// writes it) per tool listed, on a generated greenhouse of 200
// capabilities (200 read_*, 120 do_*, can_do), and the mean size of a
// read_* and a do_* tool in it. Bytes are deterministic. Measured when set
// (issue 28), plus about 5 %:
//
//	                     bytes  before the lean output schemas
//	per tool, all pages   1619  2369
//	read_* tool           1192  1577
//	do_* tool             2264  3627
const (
	budgetListPerTool = 1700
	budgetListRead    = 1250
	budgetListDo      = 2380
)

// TestToolsListBytesPerTool keeps tools/list within its budget: a tool's
// entry grows only by a decision that moves the budget.
func TestToolsListBytesPerTool(t *testing.T) {
	m := perfBench(t, 200).Server.MCP()
	total, tools := 0, 0
	size := map[string]int{}
	count := map[string]int{}
	cursor := ""
	for {
		c, _ := json.Marshal(cursor)
		req := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":` + string(c) + `}}`
		raw, err := json.Marshal(m.HandleMessage(t.Context(), json.RawMessage(req)))
		if err != nil {
			t.Fatal(err)
		}
		total += len(raw) + 1 // the transport's newline
		var page struct {
			Result struct {
				Tools      []json.RawMessage `json:"tools"`
				NextCursor string            `json:"nextCursor"`
			} `json:"result"`
		}
		if err := json.Unmarshal(raw, &page); err != nil {
			t.Fatalf("%v: %.200s", err, raw)
		}
		for _, tool := range page.Result.Tools {
			var named struct{ Name string }
			if err := json.Unmarshal(tool, &named); err != nil {
				t.Fatal(err)
			}
			kind, _, _ := strings.Cut(named.Name, "_")
			size[kind] += len(tool)
			count[kind]++
		}
		tools += len(page.Result.Tools)
		if cursor = page.Result.NextCursor; cursor == "" {
			break
		}
	}
	if tools != 321 || count["read"] != 200 || count["do"] != 120 {
		t.Fatalf("listed %d tools (%v), want 321: 200 read_*, 120 do_*, can_do", tools, count)
	}
	for _, b := range []struct {
		what       string
		got, limit int
	}{
		{"bytes per tool, all pages", total / tools, budgetListPerTool},
		{"bytes per read_* tool", size["read"] / count["read"], budgetListRead},
		{"bytes per do_* tool", size["do"] / count["do"], budgetListDo},
	} {
		t.Logf("%s: %d (budget %d)", b.what, b.got, b.limit)
		if b.got > b.limit {
			t.Errorf("tools/list at 200 capabilities: %s %d, over the budget of %d", b.what, b.got, b.limit)
		}
	}
}
