package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/promcp/promcp-device/promcp"
)

// listServer is a server of n read_* tools (more than a page when n is
// over ToolsPageSize) and can_do.
func listServer(t *testing.T, n int) *Server {
	t.Helper()
	s, err := New("list", "test")
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		addRead(t, s, fmt.Sprintf("read_level_%03d", i))
	}
	if err := s.CanDo("Can do?", func(context.Context, promcp.CanDoRequest) (promcp.CapabilityReport, error) {
		return promcp.CapabilityReport{}, nil
	}); err != nil {
		t.Fatal(err)
	}
	return s
}

func addRead(t *testing.T, s *Server, name string) {
	t.Helper()
	err := s.Read(ReadTool{Name: name, Description: "A tank's level.", Unit: "%", Value: map[string]any{"type": "number"}, Source: "tank/" + name},
		func(context.Context, ReadRequest) (promcp.ReadResult, error) {
			return promcp.ReadResult{Value: 50.0, Unit: "%", Quality: promcp.QualityGood}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
}

// httpSession serves s over streamable HTTP and opens a session as an
// operator: post sends a JSON-RPC body in it and returns the status and
// body (httpSessionAs, candofront_internal_test.go, for another caller).
func httpSession(t *testing.T, s *Server) (post func(body string, header ...string) (int, []byte)) {
	t.Helper()
	return httpSessionAs(t, s, Caller{Name: "alice", Role: "operator"})
}

func listBody(id, cursor string) string {
	c, _ := json.Marshal(cursor)
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/list","params":{"cursor":` + string(c) + `}}`
}

func nextCursor(t *testing.T, b []byte) (string, []string) {
	t.Helper()
	var r struct {
		Result struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
			NextCursor string `json:"nextCursor"`
		} `json:"result"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%v: %.200s", err, b)
	}
	var names []string
	for _, tool := range r.Result.Tools {
		names = append(names, tool.Name)
	}
	return r.Result.NextCursor, names
}

// TestToolsListCachedIsMCPGos: over HTTP, every page of tools/list
// answered from the cache is byte for byte what mcp-go answers to the
// same request (sent with an Origin header, which the cache leaves to
// mcp-go), for numeric and string ids; the pages are encoded once for
// two walks through them.
func TestToolsListCachedIsMCPGos(t *testing.T) {
	s := listServer(t, 2*ToolsPageSize+10)
	post := httpSession(t, s)
	for walk := range 2 {
		cursor, pages := "", 0
		for {
			for _, id := range []string{"7", `"list-1"`} {
				code, cached := post(listBody(id, cursor))
				_, direct := post(listBody(id, cursor), "Origin", "http://127.0.0.1")
				if code != http.StatusOK || !bytes.Equal(cached, direct) {
					t.Fatalf("walk %d, page %q, id %s: cached answer (%d) %.300s\nmcp-go's %.300s", walk, cursor, id, code, cached, direct)
				}
			}
			_, b := post(listBody("7", cursor))
			pages++
			if cursor, _ = nextCursor(t, b); cursor == "" {
				break
			}
		}
		if pages != 3 {
			t.Fatalf("walk %d: %d pages, want 3", walk, pages)
		}
	}
	if s.lists.fills != 1 {
		t.Fatalf("the pages were encoded %d times for two walks, want once", s.lists.fills)
	}
}

// TestToolsListChangesWithTheTools: a tool registered after the list was
// cached is listed (the cache is dropped when the tool set changes).
func TestToolsListChangesWithTheTools(t *testing.T) {
	s := listServer(t, 3)
	post := httpSession(t, s)
	_, b := post(listBody("1", ""))
	if _, names := nextCursor(t, b); len(names) != 4 {
		t.Fatalf("listed %v, want 4 tools", names)
	}
	addRead(t, s, "read_level_new")
	_, b = post(listBody("2", ""))
	if _, names := nextCursor(t, b); len(names) != 5 || !strings.Contains(strings.Join(names, " "), "read_level_new") {
		t.Fatalf("after a new tool, listed %v, want it among 5", names)
	}
}

// TestToolsListOutsideASessionIsMCPGos: a tools/list in a session the
// server does not know, or of the 2026-07-28 generation, or with _meta, is
// answered by mcp-go as before (404 for the unknown session).
func TestToolsListOutsideASessionIsMCPGos(t *testing.T) {
	s := listServer(t, 3)
	post := httpSession(t, s)
	if code, b := post(listBody("1", ""), mcpserver.HeaderKeySessionID, "mcp-session-unknown"); code != http.StatusNotFound {
		t.Fatalf("unknown session: %d %s, want 404", code, b)
	}
	post(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"progressToken":1}}}`)
	if s.lists.fills != 0 {
		t.Fatalf("requests the cache leaves to mcp-go filled it")
	}
}

// TestParseListRequest: only a plain tools/list is the cache's.
func TestParseListRequest(t *testing.T) {
	for body, want := range map[string]bool{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`:                                true,
		`{"jsonrpc":"2.0","id":"a","method":"tools/list","params":{}}`:                  true,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"cmVhZA=="}}`: true,
		`{"jsonrpc":"2.0","method":"tools/list"}`:                                       false, // a notification
		`{"jsonrpc":"2.0","id":null,"method":"tools/list"}`:                             false,
		`{"jsonrpc":"2.0","id":{},"method":"tools/list"}`:                               false,
		`{"jsonrpc":"1.0","id":1,"method":"tools/list"}`:                                false,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"tools/list"}}`: false,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{}}}`:          false,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":1}}`:          false,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","extra":true}`:                   false,
		`[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]`:                              false,
	} {
		if _, ok := parseListRequest([]byte(body)); ok != want {
			t.Errorf("%s: cached %t, want %t", body, ok, want)
		}
	}
}

// TestToolsListStdio: over stdio, the cached pages are mcp-go's answers
// too, line by line.
func TestToolsListStdio(t *testing.T) {
	s := listServer(t, ToolsPageSize+1)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- s.ServeStdio(ctx, inR, outW, Caller{Name: "alice", Role: "operator"}) }()
	lines := bufio.NewReader(outR)
	send := func(body string) []byte {
		if _, err := io.WriteString(inW, body+"\n"); err != nil {
			t.Fatal(err)
		}
		line, err := lines.ReadBytes('\n')
		if err != nil {
			t.Fatal(err)
		}
		return line
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	cursor := ""
	for {
		got := send(listBody("3", cursor))
		want, err := json.Marshal(s.mcp.HandleMessage(ctx, json.RawMessage(listBody("3", cursor))))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, append(want, '\n')) {
			t.Fatalf("page %q over stdio: %.300s\nmcp-go's %.300s", cursor, got, want)
		}
		if cursor, _ = nextCursor(t, got); cursor == "" {
			break
		}
	}
	if s.lists.fills != 1 {
		t.Fatalf("pages encoded %d times, want once", s.lists.fills)
	}
	inW.Close()
	cancel()
	<-done
}
