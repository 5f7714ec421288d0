package server_test

import (
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/promcp/promcp-device/capabilities"
	"github.com/promcp/promcp-device/server"
)

// serveInProcess serves set on a new server made with sopts (and the
// gateway options gopts) and returns an initialised in-process MCP client
// made with copts. Everything is closed when the test ends.
func serveInProcess(t testing.TB, set *capabilities.Set, sopts []server.Option, gopts server.GatewayOptions, copts ...client.ClientOption) (*server.Server, *client.Client) {
	t.Helper()
	srv, err := server.New("bench", "test", sopts...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := server.Serve(srv, set, gopts); err != nil {
		t.Fatal(err)
	}
	c, err := client.NewInProcessClientWithOptions(srv.MCP(), copts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(t.Context(), mcp.InitializeRequest{Params: mcp.InitializeParams{
		ClientInfo: mcp.Implementation{Name: "test", Version: "1"}}}); err != nil {
		t.Fatal(err)
	}
	return srv, c
}
