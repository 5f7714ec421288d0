package lint_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/promcp/promcp-device/lint"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// annotatedServer is plain MCP as many servers are written: names in any
// style, the kind of each tool only in its annotations or its verb. It
// talks on stderr, as servers do, while it starts and while it lists.
func annotatedServer() *mcpserver.MCPServer {
	fmt.Fprintln(os.Stderr, "weather-server 0.3 starting")
	fmt.Fprintln(os.Stderr, "warning: no API key, using the demo quota")
	s := mcpserver.NewMCPServer("weather", "0.3", mcpserver.WithToolCapabilities(false))
	ok := func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("ok"), nil
	}
	s.AddTool(mcp.NewTool("getWeather", mcp.WithDescription("Returns the current weather for a city."),
		mcp.WithString("city", mcp.Required()), mcp.WithReadOnlyHintAnnotation(true)), ok)
	s.AddTool(mcp.NewTool("delete-file", mcp.WithDescription("Deletes a file from the workspace."),
		mcp.WithString("path", mcp.Required()), mcp.WithReadOnlyHintAnnotation(false), mcp.WithDestructiveHintAnnotation(true)), ok)
	s.AddTool(mcp.NewTool("list_stations", mcp.WithDescription("Names of the weather stations near a city.")), ok) // mcp-go's default hints: readOnlyHint false
	s.AddTool(mcp.NewTool("launch_balloon", mcp.WithDescription("Release a weather balloon from the given station.")), ok)
	s.AddTool(mcp.NewTool("do_action", mcp.WithDescription("Restarts the station's data logger."),
		mcp.WithDestructiveHintAnnotation(true)), ok)
	s.AddTool(mcp.NewTool("search", mcp.WithDescription("Search the forecast archive for a date."),
		mcp.WithReadOnlyHintAnnotation(true)), ok)
	bare := mcp.NewTool("frobnicate", mcp.WithDescription("Frobnicates."))
	bare.Annotations = mcp.ToolAnnotation{} // none sent: nothing says whether it reads
	s.AddTool(bare, ok)
	return s
}

// TestSuggestGolden: lint of a server that does not follow proMCP, over
// a real stdio connection, proposes a read_*/do_* name for each naming
// finding (from readOnlyHint/destructiveHint first, then the verb of the
// name or description; none when nothing says) and reports the server's
// stderr in its own section, after the findings, in the text and the JSON
// reports (testdata/annotated.*.golden; -update rewrites them).
func TestSuggestGolden(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s, err := lint.Connect(t.Context(), lint.Target{Command: exe, Env: []string{"PROMCP_LINT_FIXTURE=annotated"}}, "lint-test", "1")
	if err != nil {
		t.Fatal(err)
	}
	r := lint.Check("weather-server (stdio)", s.Tools)
	if r.Stderr, err = s.Finish(); err != nil {
		t.Fatal(err)
	}
	var text, js bytes.Buffer
	lint.WriteText(&text, r, false)
	if err := lint.WriteJSON(&js, r, false); err != nil {
		t.Fatal(err)
	}
	golden(t, "annotated.txt.golden", text.Bytes())
	golden(t, "annotated.json.golden", js.Bytes())
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the output:\n%s", path, got)
	}
}

// TestSuggest: the name proposed for single tools, and why.
func TestSuggest(t *testing.T) {
	yes, no := true, false
	for _, c := range []struct {
		tool lint.Tool
		want string
	}{
		{lint.Tool{Name: "getWeather", Annotations: &lint.Annotations{ReadOnlyHint: &yes}}, "read_weather"},
		{lint.Tool{Name: "get_weather", Annotations: &lint.Annotations{ReadOnlyHint: &no}}, "read_weather"},
		{lint.Tool{Name: "HTTPRequest", Description: "Sends an HTTP request."}, "do_http_request"},
		{lint.Tool{Name: "status", Description: "Status of the pump."}, "read_pump"},
		{lint.Tool{Name: "do_update", Description: "Switches the pump on or off.", Annotations: &lint.Annotations{DestructiveHint: &yes}}, "do_switch_pump"},
		{lint.Tool{Name: "readTemperature"}, "read_temperature"},
		{lint.Tool{Name: "pump", Description: "The pump."}, ""},
		{lint.Tool{Name: "läuft", Description: "Gets ünits."}, "read_luft"},
	} {
		s, ok := lint.Suggest(&c.tool)
		if s.Name != c.want || ok != (c.want != "") {
			t.Errorf("Suggest(%s) = %q (%s), %t; want %q", c.tool.Name, s.Name, s.Why, ok, c.want)
		}
	}
}
