package server

import (
	"context"
	"reflect"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// taskIndex ties a task-augmented tools/call to its task, which mcp-go
// does not tell the handler: mcp-go v1.2.1 runs the handler of a task with
// the request's context, which it cancels as soon as tools/call has
// answered with the task, so a cancelled context does not mean
// tasks/cancel. The index learns each task's id from the call's answer
// (an after-call hook, matched to the handler by the call's arguments, the
// one map both see) and tasks/cancel from the task-cancelled hook.
type taskIndex struct {
	mu        sync.Mutex
	ids       map[uintptr]chan string // by arguments map: the task's id, once known
	cancelled map[string]chan struct{}
}

func newTaskIndex() *taskIndex {
	return &taskIndex{ids: map[uintptr]chan string{}, cancelled: map[string]chan struct{}{}}
}

// argsKey identifies a call by its arguments map; 0 when it has none.
func argsKey(req *mcp.CallToolRequest) uintptr {
	m, ok := req.Params.Arguments.(map[string]any)
	if !ok || m == nil {
		return 0
	}
	return reflect.ValueOf(m).Pointer()
}

func (x *taskIndex) idChan(k uintptr) chan string {
	x.mu.Lock()
	defer x.mu.Unlock()
	ch, ok := x.ids[k]
	if !ok {
		ch = make(chan string, 1)
		x.ids[k] = ch
	}
	return ch
}

func (x *taskIndex) cancelChan(id string) chan struct{} {
	x.mu.Lock()
	defer x.mu.Unlock()
	ch, ok := x.cancelled[id]
	if !ok {
		ch = make(chan struct{})
		x.cancelled[id] = ch
	}
	return ch
}

// options adds the task hooks to hooks and returns the task options.
func (x *taskIndex) options(hooks *mcpserver.Hooks) []mcpserver.ServerOption {
	hooks.AddAfterCallTool(func(_ context.Context, _ any, msg *mcp.CallToolRequest, result any) {
		if ct, ok := result.(*mcp.CreateTaskResult); ok && msg != nil {
			if k := argsKey(msg); k != 0 {
				select {
				case x.idChan(k) <- ct.Task.TaskId:
				default: // a stale entry: never block the server's hook
				}
				// A call whose handler does not wait for its task (a
				// refusal answers at once) leaves its entry: drop it.
				time.AfterFunc(time.Minute, func() {
					x.mu.Lock()
					defer x.mu.Unlock()
					if ch, ok := x.ids[k]; ok && len(ch) > 0 {
						delete(x.ids, k)
					}
				})
			}
		}
	})
	th := &mcpserver.TaskHooks{}
	th.AddOnTaskCancelled(func(_ context.Context, m mcpserver.TaskMetrics) {
		ch := x.cancelChan(m.TaskID)
		x.mu.Lock()
		defer x.mu.Unlock()
		select {
		case <-ch:
		default:
			close(ch)
		}
	})
	return []mcpserver.ServerOption{mcpserver.WithTaskHooks(th)}
}

// taskContext returns a context for a task's handler that tasks/cancel of
// its task cancels, and not the end of the tools/call that created it.
// It waits (up to a few seconds) to learn the task's id; without it, the
// context is never cancelled by tasks/cancel.
func (x *taskIndex) taskContext(ctx context.Context, req *mcp.CallToolRequest) (context.Context, context.CancelFunc) {
	out, cancel := context.WithCancel(context.WithoutCancel(ctx))
	k := argsKey(req)
	if x == nil || k == 0 {
		return out, cancel
	}
	ch := x.idChan(k)
	go func() {
		var id string
		select {
		case id = <-ch:
		case <-time.After(5 * time.Second): // the hook runs as tools/call answers
		case <-out.Done():
		}
		x.mu.Lock()
		delete(x.ids, k)
		x.mu.Unlock()
		if id == "" {
			return
		}
		select {
		case <-x.cancelChan(id):
			cancel()
		case <-out.Done():
		}
		x.mu.Lock()
		delete(x.cancelled, id)
		x.mu.Unlock()
	}()
	return out, cancel
}
