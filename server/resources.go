package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// ReadKey is the _meta key under which a notifications/resources/updated
// carries the resource's new body (for a capability, the read_* contract
// body): the protocol's params hold only the uri and _meta, so a client
// that ignores _meta re-reads the resource as usual.
const ReadKey = "io.promcp/read"

// WithResources makes the server serve resources (Resource,
// ResourceTemplate) and accept resources/subscribe: it keeps the
// subscribers itself, per session, drops them when the session ends, and
// tells the resource's Watch function when a resource gains its first
// subscriber and loses its last. Notify sends an update to the
// subscribers of a resource.
func WithResources() Option {
	return func(s *Server) { s.live = newSubscriptions() }
}

// Resource declares a resource with a fixed URI.
type Resource struct {
	URI         string
	Name        string
	Title       string
	Description string
	// Read returns the resource's body, served as JSON.
	Read func(ctx context.Context) (any, error)
	// Watch, when set, is called with true when the resource gains its
	// first subscriber and with false when it loses its last (by
	// resources/unsubscribe or the end of the session). Calls for one
	// resource are made in order, never concurrently.
	Watch func(on bool)
}

// ResourceTemplate declares a family of resources, an RFC 6570 URI
// template such as "promcp://gw/history/temperature{?since,step,agg}".
type ResourceTemplate struct {
	URITemplate string
	Name        string
	Title       string
	Description string
	// Read returns the body of the resource uri, whose template variables
	// are in args (the query's from the URI, the path's as mcp-go matched
	// them: a Read that needs its path variables exactly parses uri). A bad argument is an *ArgError, answered as invalid
	// error naming it (mcp-go answers every resource handler error with
	// JSON-RPC code -32603 and the error's message).
	Read func(ctx context.Context, uri string, args map[string]string) (any, error)
}

// ArgError is a resource template argument that is not valid.
type ArgError struct {
	Arg string // the template variable
	Msg string // what is wrong and what is wanted
}

func (e *ArgError) Error() string { return fmt.Sprintf("argument %s: %s", e.Arg, e.Msg) }

// Resource registers r. It needs WithResources.
func (s *Server) Resource(r Resource) error {
	if s.live == nil {
		return errors.New("resource " + r.URI + ": the server was made without WithResources")
	}
	if r.URI == "" || r.Read == nil {
		return errors.New("resource: a URI and a Read function are required")
	}
	if !s.live.add(r.URI, r.Watch) {
		return fmt.Errorf("resource %s is already registered", r.URI)
	}
	res := mcp.Resource{URI: r.URI, Name: r.Name, Title: r.Title, Description: r.Description, MIMEType: "application/json"}
	s.mcp.AddResource(res, func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		body, err := r.Read(ctx)
		if err != nil {
			return nil, err
		}
		return jsonContents(req.Params.URI, body)
	})
	return nil
}

// ResourceTemplate registers t. It needs WithResources.
func (s *Server) ResourceTemplate(t ResourceTemplate) error {
	if s.live == nil {
		return errors.New("resource template " + t.URITemplate + ": the server was made without WithResources")
	}
	if t.URITemplate == "" || t.Read == nil {
		return errors.New("resource template: a URI template and a Read function are required")
	}
	s.live.mu.Lock()
	if s.live.templates == nil {
		s.live.templates = map[string]ResourceTemplate{}
	}
	s.live.templates[t.Name] = t
	s.live.mu.Unlock()
	tmpl := mcp.NewResourceTemplate(t.URITemplate, t.Name, mcp.WithTemplateDescription(t.Description), mcp.WithTemplateMIMEType("application/json"))
	tmpl.Title = t.Title
	s.mcp.AddResourceTemplate(tmpl, func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		args := map[string]string{}
		for k, v := range req.Params.Arguments {
			switch x := v.(type) {
			case string:
				args[k] = x
			case []string:
				if len(x) > 0 {
					args[k] = x[0]
				}
			}
		}
		// The query is read from the URI itself: mcp-go's template match
		// depends on the order of the query's variables.
		if u, err := url.Parse(req.Params.URI); err == nil {
			for k, v := range u.Query() {
				if len(v) > 0 {
					args[k] = v[0]
				}
			}
		}
		body, err := t.Read(ctx, req.Params.URI, args)
		if err != nil {
			return nil, err // an *ArgError's message names the argument
		}
		return jsonContents(req.Params.URI, body)
	})
	return nil
}

// ReadTemplate reads, in process, the resource uri of the template
// registered under name (ResourceTemplate.Name), with its arguments args,
// as a resources/read would: the operator console reads a capability's
// history so. It returns the body before it is encoded as JSON.
func (s *Server) ReadTemplate(ctx context.Context, name, uri string, args map[string]string) (any, error) {
	if s.live == nil {
		return nil, errors.New("the server serves no resources")
	}
	s.live.mu.Lock()
	t, ok := s.live.templates[name]
	s.live.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("no resource template %q is served", name)
	}
	return t.Read(ctx, uri, args)
}

func jsonContents(uri string, body any) ([]mcp.ResourceContents, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("resource %s: %w", uri, err)
	}
	return []mcp.ResourceContents{mcp.TextResourceContents{URI: uri, MIMEType: "application/json", Text: string(b)}}, nil
}

// Notify sends notifications/resources/updated for uri, with body under
// _meta[ReadKey], to every session subscribed to it; it returns how many
// were sent. A session whose channel is full misses the update (it is
// not queued without bound).
func (s *Server) Notify(uri string, body any) int {
	if s.live == nil {
		return 0
	}
	note := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{
		Method: string(mcp.MethodNotificationResourceUpdated),
		Params: mcp.NotificationParams{Meta: map[string]any{ReadKey: body}, AdditionalFields: map[string]any{"uri": uri}}}}
	n := 0
	for _, cs := range s.live.subscribers(uri) {
		if !cs.Initialized() {
			continue
		}
		if h, ok := cs.(mcpserver.SessionWithStreamableHTTPConfig); ok {
			h.UpgradeToSSEWhenReceiveNotification()
		}
		select {
		case cs.NotificationChannel() <- note:
			n++
		default:
			s.log.Debug("resource update not sent: the session's channel is full", "uri", uri, "session", cs.SessionID())
		}
	}
	return n
}

// Subscribers returns how many sessions are subscribed to uri.
func (s *Server) Subscribers(uri string) int {
	if s.live == nil {
		return 0
	}
	return len(s.live.sessionsOf(uri))
}

// subscriptions are the resources' subscribers, by session.
type subscriptions struct {
	mu        sync.Mutex
	watch     map[string]func(on bool)           // by URI: the registered resources
	sessions  map[string]mcpserver.ClientSession // the registered sessions, by id
	bySession map[string]map[string]struct{}     // session → URIs
	byURI     map[string]map[string]struct{}     // URI → sessions
	// watchMu orders the Watch calls (made outside mu).
	watchMu sync.Mutex
	// templates are the registered resource templates, by name.
	templates map[string]ResourceTemplate
}

func newSubscriptions() *subscriptions {
	return &subscriptions{watch: map[string]func(bool){}, sessions: map[string]mcpserver.ClientSession{}, bySession: map[string]map[string]struct{}{}, byURI: map[string]map[string]struct{}{}}
}

func (l *subscriptions) add(uri string, watch func(bool)) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.watch[uri]; ok {
		return false
	}
	l.watch[uri] = watch
	return true
}

// options adds to h the hooks that route subscriptions here and returns
// the resource options.
func (l *subscriptions) options(h *mcpserver.Hooks) []mcpserver.ServerOption {
	h.AddOnRequestInitialization(l.check)
	h.AddAfterSubscribe(func(ctx context.Context, _ any, m *mcp.SubscribeRequest, _ *mcp.EmptyResult) {
		if cs := mcpserver.ClientSessionFromContext(ctx); cs != nil {
			l.subscribe(cs.SessionID(), m.Params.URI)
		}
	})
	h.AddAfterUnsubscribe(func(ctx context.Context, _ any, m *mcp.UnsubscribeRequest, _ *mcp.EmptyResult) {
		if cs := mcpserver.ClientSessionFromContext(ctx); cs != nil {
			l.unsubscribe(cs.SessionID(), m.Params.URI)
		}
	})
	h.AddOnRegisterSession(func(_ context.Context, cs mcpserver.ClientSession) {
		l.mu.Lock()
		l.sessions[cs.SessionID()] = cs
		l.mu.Unlock()
	})
	h.AddOnUnregisterSession(func(_ context.Context, cs mcpserver.ClientSession) { l.drop(cs.SessionID()) })
	// Protocol 2026-07-28 subscribes with subscriptions/listen: the
	// listed resources are subscribed for as long as the stream is open,
	// on the session serving it (an ephemeral one over HTTP).
	h.AddBeforeSubscriptionsListen(func(ctx context.Context, id any, m *mcp.SubscriptionsListenRequest) {
		if cs := mcpserver.ClientSessionFromContext(ctx); cs != nil {
			key := listenKey(cs, id)
			l.mu.Lock()
			l.sessions[key] = cs
			l.mu.Unlock()
			for _, uri := range m.Params.Notifications.ResourceSubscriptions {
				l.subscribe(key, uri)
			}
		}
	})
	endListen := func(ctx context.Context, id any) {
		if cs := mcpserver.ClientSessionFromContext(ctx); cs != nil {
			l.drop(listenKey(cs, id))
		}
	}
	h.AddAfterSubscriptionsListen(func(ctx context.Context, id any, _ *mcp.SubscriptionsListenRequest, _ *mcp.SubscriptionsListenResult) {
		endListen(ctx, id)
	})
	h.AddOnError(func(ctx context.Context, id any, method mcp.MCPMethod, _ any, _ error) {
		if method == mcp.MethodSubscriptionsListen {
			endListen(ctx, id)
		}
	})
	return []mcpserver.ServerOption{mcpserver.WithResourceCapabilities(true, false)}
}

// listenKey names the subscriptions of one subscriptions/listen stream.
func listenKey(cs mcpserver.ClientSession, id any) string {
	return fmt.Sprintf("listen %p %v", cs, id)
}

var subscribeMethod = []byte(`"resources/subscribe"`)

// check refuses a resources/subscribe to a URI no resource has, naming it
// (mcp-go would acknowledge it, and the client would wait for nothing).
func (l *subscriptions) check(_ context.Context, _ any, message any) error {
	raw, ok := message.(json.RawMessage)
	if !ok || !bytes.Contains(raw, subscribeMethod) {
		return nil
	}
	var m struct {
		Method string `json:"method"`
		Params struct {
			URI string `json:"uri"`
		} `json:"params"`
	}
	if json.Unmarshal(raw, &m) != nil || m.Method != string(mcp.MethodResourcesSubscribe) || m.Params.URI == "" {
		return nil
	}
	l.mu.Lock()
	_, known := l.watch[m.Params.URI]
	l.mu.Unlock()
	if !known {
		return fmt.Errorf("resources/subscribe: unknown resource uri %q (resources/list names the resources)", m.Params.URI)
	}
	return nil
}

func (l *subscriptions) subscribe(session, uri string) {
	l.watchMu.Lock()
	defer l.watchMu.Unlock()
	l.mu.Lock()
	watch, known := l.watch[uri]
	if !known {
		l.mu.Unlock()
		return
	}
	if l.bySession[session] == nil {
		l.bySession[session] = map[string]struct{}{}
	}
	l.bySession[session][uri] = struct{}{}
	if l.byURI[uri] == nil {
		l.byURI[uri] = map[string]struct{}{}
	}
	_, was := l.byURI[uri][session]
	l.byURI[uri][session] = struct{}{}
	first := !was && len(l.byURI[uri]) == 1
	l.mu.Unlock()
	if first && watch != nil {
		watch(true)
	}
}

func (l *subscriptions) unsubscribe(session, uri string) {
	l.watchMu.Lock()
	defer l.watchMu.Unlock()
	l.mu.Lock()
	last := l.removeLocked(session, uri)
	watch := l.watch[uri]
	l.mu.Unlock()
	if last && watch != nil {
		watch(false)
	}
}

// removeLocked removes one subscription; it reports whether it was the
// resource's last.
func (l *subscriptions) removeLocked(session, uri string) bool {
	subs, ok := l.byURI[uri]
	if !ok {
		return false
	}
	if _, ok := subs[session]; !ok {
		return false
	}
	delete(subs, session)
	if s := l.bySession[session]; s != nil {
		delete(s, uri)
		if len(s) == 0 {
			delete(l.bySession, session)
		}
	}
	if len(subs) == 0 {
		delete(l.byURI, uri)
		return true
	}
	return false
}

// drop removes every subscription of a session that ended.
func (l *subscriptions) drop(session string) {
	l.watchMu.Lock()
	defer l.watchMu.Unlock()
	l.mu.Lock()
	delete(l.sessions, session)
	var stop []func(bool)
	for uri := range l.bySession[session] {
		if l.removeLocked(session, uri) && l.watch[uri] != nil {
			stop = append(stop, l.watch[uri])
		}
	}
	l.mu.Unlock()
	for _, w := range stop {
		w(false)
	}
}

// subscribers returns the registered sessions subscribed to uri.
func (l *subscriptions) subscribers(uri string) []mcpserver.ClientSession {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]mcpserver.ClientSession, 0, len(l.byURI[uri]))
	for id := range l.byURI[uri] {
		if cs, ok := l.sessions[id]; ok {
			out = append(out, cs)
		}
	}
	return out
}

func (l *subscriptions) sessionsOf(uri string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	ids := make([]string, 0, len(l.byURI[uri]))
	for id := range l.byURI[uri] {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
