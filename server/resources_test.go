package server_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/promcp/promcp-device/server"
	"github.com/promcp/promcp-device/server/servertest"
)

// watchLog checks that a resource's Watch calls alternate on, off, on...
type watchLog struct {
	mu     sync.Mutex
	on     bool
	calls  int
	broken string
}

func (w *watchLog) watch(on bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if on == w.on && w.broken == "" {
		w.broken = fmt.Sprintf("call %d: Watch(%v) while already %v", w.calls, on, w.on)
	}
	w.on = on
	w.calls++
}

// Many sessions subscribing, unsubscribing and ending at once, while
// updates are sent: Watch alternates on and off (never twice on), the
// subscribers end at zero, the resource is unwatched, nothing is sent to
// a session that ended, and no goroutine is left (synctest fails on one).
func TestSubscriptionsUnderConcurrency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := server.New("bench", "test", server.WithResources())
		if err != nil {
			t.Fatal(err)
		}
		const uri = "promcp://bench/capabilities/x"
		w := &watchLog{}
		if err := s.Resource(server.Resource{URI: uri, Name: "x", Watch: w.watch,
			Read: func(context.Context) (any, error) { return map[string]any{"value": 1}, nil }}); err != nil {
			t.Fatal(err)
		}
		const sessions = 24
		var clients []*client.Client
		var received atomic.Int64
		for range sessions {
			time.Sleep(time.Nanosecond) // in-process session ids are the (bubble's) time
			c, err := client.NewInProcessClient(s.MCP())
			if err != nil {
				t.Fatal(err)
			}
			c.OnNotification(func(n mcp.JSONRPCNotification) {
				if n.Method == string(mcp.MethodNotificationResourceUpdated) {
					received.Add(1)
				}
			})
			if err := c.Start(t.Context()); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Initialize(t.Context(), mcp.InitializeRequest{Params: mcp.InitializeParams{
				ProtocolVersion: mcp.ProtocolVersion20251125, ClientInfo: mcp.Implementation{Name: "t", Version: "1"}}}); err != nil {
				t.Fatal(err)
			}
			clients = append(clients, c)
		}
		stopNotifying := servertest.Meanwhile(func() { s.Notify(uri, map[string]any{"value": 2}) })
		var wg sync.WaitGroup
		for i, c := range clients {
			wg.Go(func() {
				for j := range 20 {
					if err := c.Subscribe(t.Context(), mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: uri}}); err != nil {
						t.Error(err)
						return
					}
					if j%3 == 2 {
						continue // subscribed twice in a row: still one subscription
					}
					if err := c.Unsubscribe(t.Context(), mcp.UnsubscribeRequest{Params: mcp.UnsubscribeParams{URI: uri}}); err != nil {
						t.Error(err)
						return
					}
				}
				if i%2 == 0 {
					c.Close() // the session ends subscribed: dropped with it
				} else if err := c.Unsubscribe(t.Context(), mcp.UnsubscribeRequest{Params: mcp.UnsubscribeParams{URI: uri}}); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		stopNotifying()
		synctest.Wait()
		if n := s.Subscribers(uri); n != 0 {
			t.Errorf("subscribers = %d, want 0", n)
		}
		w.mu.Lock()
		if w.broken != "" || w.on || w.calls == 0 {
			t.Errorf("watch: %s; on at the end %v after %d calls, want alternating calls ending off", w.broken, w.on, w.calls)
		}
		w.mu.Unlock()
		before := received.Load()
		if n := s.Notify(uri, map[string]any{"value": 3}); n != 0 {
			t.Errorf("Notify with no subscriber sent %d", n)
		}
		synctest.Wait()
		if received.Load() != before {
			t.Error("an update reached a client with no subscription")
		}
		// And a session subscribed now gets exactly one update per Notify.
		if err := clients[1].Subscribe(t.Context(), mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: uri}}); err != nil {
			t.Fatal(err)
		}
		if n := s.Notify(uri, map[string]any{"value": 4}); n != 1 {
			t.Errorf("Notify with one subscriber sent %d, want 1", n)
		}
		synctest.Wait()
		if got := received.Load(); got != before+1 {
			t.Errorf("updates received after subscribing again: %d, want %d", got-before, 1)
		}
		if err := clients[1].Unsubscribe(t.Context(), mcp.UnsubscribeRequest{Params: mcp.UnsubscribeParams{URI: uri}}); err != nil {
			t.Fatal(err)
		}
		for i, c := range clients {
			if i%2 == 1 {
				c.Close()
			}
		}
	})
}

// A resource needs WithResources, and a template read names a bad
// argument.
func TestResourceTemplateArgError(t *testing.T) {
	plain := newServer(t, "bench")
	if err := plain.Resource(server.Resource{URI: "a://b", Read: func(context.Context) (any, error) { return nil, nil }}); err == nil {
		t.Error("Resource on a server without WithResources: no error")
	}
	s := newServer(t, "bench", server.WithResources())
	if err := s.ResourceTemplate(server.ResourceTemplate{URITemplate: "promcp://bench/h/{name}{?step}", Name: "h",
		Read: func(_ context.Context, _ string, args map[string]string) (any, error) {
			if args["step"] != "1m" {
				return nil, &server.ArgError{Arg: "step", Msg: fmt.Sprintf("%q (want 1m)", args["step"])}
			}
			return map[string]any{"ok": true}, nil
		}}); err != nil {
		t.Fatal(err)
	}
	c := servertest.Client(t, s, mcp.InitializeParams{
		ProtocolVersion: mcp.ProtocolVersion20251125, ClientInfo: mcp.Implementation{Name: "t", Version: "1"}})
	_, err := c.ReadResource(t.Context(), mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: "promcp://bench/h/x?step=2m"}})
	if err == nil || !strings.Contains(err.Error(), `argument step: "2m" (want 1m)`) {
		t.Errorf("bad step: %v, want the argument named", err)
	}
	res, err := c.ReadResource(t.Context(), mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: "promcp://bench/h/x?step=1m"}})
	if err != nil || res.Contents[0].(mcp.TextResourceContents).Text != `{"ok":true}` {
		t.Errorf("good step: %+v, %v", res, err)
	}
}
