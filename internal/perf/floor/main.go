// Command floor is the performance floor of scripts/perf-compare: a bare
// mcp-go server with one read tool equivalent to the greenhouse's
// read_temperature_zone1 (the same value, unit, timestamp and quality, a
// cached value, an output schema and structured content), over mcp-go's
// streamable HTTP on a loopback port. It is not part of promcp-device.
//
//	go run ./internal/perf/floor   # prints http://127.0.0.1:PORT/mcp
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

const outputSchema = `{"type":"object","required":["value","unit","timestamp","quality"],"properties":{` +
	`"value":{"type":["number","null"]},"unit":{"type":"string","const":"°C"},` +
	`"timestamp":{"type":"string","format":"date-time"},` +
	`"quality":{"type":"string","enum":["good","stale","degraded","error"]}}}`

// reading is the cached sample, refreshed at most every 2 s.
type reading struct {
	mu   sync.Mutex
	at   time.Time
	body []byte
}

func (r *reading) get() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now := time.Now(); now.Sub(r.at) >= 2*time.Second {
		r.at = now
		r.body, _ = json.Marshal(map[string]any{"value": 21.5, "unit": "°C",
			"timestamp": now.UTC().Format(time.RFC3339Nano), "quality": "good"})
	}
	return r.body
}

func main() {
	s := server.NewMCPServer("floor", "1", server.WithToolCapabilities(false), server.WithRecovery())
	var r reading
	s.AddTool(mcp.Tool{
		Name:            "read_temperature_zone1",
		Description:     "Air temperature in zone 1.",
		RawInputSchema:  json.RawMessage(`{"type":"object","properties":{}}`),
		RawOutputSchema: json.RawMessage(outputSchema),
		Annotations:     mcp.ToolAnnotation{ReadOnlyHint: mcp.ToBoolPtr(true)},
	}, func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		b := r.get()
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(string(b))},
			StructuredContent: json.RawMessage(b)}, nil
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
	hs := &http.Server{Handler: server.NewStreamableHTTPServer(s, server.WithEndpointPath("/mcp")), ReadHeaderTimeout: 10 * time.Second}
	fmt.Printf("floor: serving on http://%s/mcp\n", ln.Addr())
	go func() {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		<-ctx.Done()
		_ = hs.Close()
	}()
	if err := hs.Serve(ln); err != nil && err != http.ErrServerClosed {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
}
