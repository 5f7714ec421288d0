// Package servertest helps test servers built with package server (the
// library's own tests, the gateway's, the binary's): an MCP client of a
// [server.Server] in process, a buffer to collect logs in, and a loop to
// run beside concurrent calls. Like the server, it pulls in no hardware
// package.
package servertest

import (
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/promcp/promcp-device/server"
)

// Client returns an MCP client of srv in process, started and initialised
// with init (the zero value: any protocol version, no client info), made
// with opts. It is closed when the test ends; any failure fails the test.
func Client(t testing.TB, srv *server.Server, init mcp.InitializeParams, opts ...client.ClientOption) *client.Client {
	t.Helper()
	c, err := client.NewInProcessClientWithOptions(srv.MCP(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(t.Context(), mcp.InitializeRequest{Params: init}); err != nil {
		t.Fatal(err)
	}
	return c
}
