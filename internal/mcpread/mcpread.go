// Package mcpread reads a text resource through an MCP client: the one
// way lint, the fleet and the tests read a tool's standing part
// (promcp://warrant/<tool>) or any other text resource.
package mcpread

import (
	"context"
	"fmt"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// Text returns the text of the resource uri (resources/read), which must
// be exactly one text content.
func Text(ctx context.Context, c *client.Client, uri string) ([]byte, error) {
	res, err := c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: uri}})
	if err != nil {
		return nil, fmt.Errorf("resources/read %s: %w", uri, err)
	}
	if len(res.Contents) != 1 {
		return nil, fmt.Errorf("resources/read %s: %d contents, want 1", uri, len(res.Contents))
	}
	tc, ok := res.Contents[0].(mcp.TextResourceContents)
	if !ok {
		return nil, fmt.Errorf("resources/read %s: %T, want text", uri, res.Contents[0])
	}
	return []byte(tc.Text), nil
}
