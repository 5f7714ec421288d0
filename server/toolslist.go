package server

import (
	"bytes"
	"context"
	"encoding/json"
	"mime"
	"net/http"
	"strconv"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// listCache keeps the tools/list pages as mcp-go encodes them, so that a
// tools/list is answered by writing bytes rather than by copying and
// sorting every tool and encoding a page of them anew (at 1,000
// capabilities the encoding was most of a list's CPU). The pages are
// mcp-go's own answer, taken once from its handler: a cached answer is
// byte for byte the one mcp-go would give, for as long as the tool set
// is the same.
//
// The cache is dropped whenever a tool is registered (register), and is
// not used at all on a server whose tools change under its MCP server
// (WithToolsListChanged: a fleet endpoint adds and removes gateways'
// tools itself). It holds the pages of one walk from the first page by
// nextCursor: a cursor it did not hand out is left to mcp-go, so a client
// cannot grow it.
type listCache struct {
	mu    sync.Mutex
	pages map[string][]byte // the result object of each page, by its cursor ("" first)
	fills int               // how many times the pages were encoded (tests)
}

// drop forgets the pages (the tool set changed).
func (c *listCache) drop() {
	c.mu.Lock()
	c.pages = nil
	c.mu.Unlock()
}

// page returns the encoded result of the page at cursor, filling the
// cache from mcp-go's handler when it is empty. ok is false for a cursor
// not handed out, or when mcp-go answered with an error.
func (s *Server) listPage(ctx context.Context, cursor string) ([]byte, bool) {
	c := &s.lists
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pages == nil {
		pages, err := s.encodeListPages(ctx)
		if err != nil {
			s.log.Warn("tools/list pages not cached", "err", err)
			return nil, false
		}
		c.pages = pages
		c.fills++
	}
	p, ok := c.pages[cursor]
	return p, ok
}

// encodeListPages asks mcp-go for every page, following nextCursor, and
// returns each page's result as mcp-go encodes it. A legacy request
// carries no protocol decorations (mcp-go's decorateResponse leaves its
// result as it is), and this server has no tool filters nor session
// tools, so the answer is the same in every session.
func (s *Server) encodeListPages(ctx context.Context) (map[string][]byte, error) {
	pages := map[string][]byte{}
	cursor := ""
	for {
		c, err := json.Marshal(cursor)
		if err != nil {
			return nil, err
		}
		req := `{"jsonrpc":"2.0","id":0,"method":"tools/list","params":{"cursor":` + string(c) + `}}`
		res, ok := s.mcp.HandleMessage(ctx, json.RawMessage(req)).(mcp.JSONRPCResponse)
		if !ok {
			return nil, errNotAList
		}
		body, err := json.Marshal(res.Result)
		if err != nil {
			return nil, err
		}
		pages[cursor] = body
		var next struct {
			NextCursor string `json:"nextCursor"`
		}
		if err := json.Unmarshal(body, &next); err != nil {
			return nil, err
		}
		if next.NextCursor == "" || pages[next.NextCursor] != nil {
			return pages, nil
		}
		cursor = next.NextCursor
	}
}

type listError string

func (e listError) Error() string { return string(e) }

const errNotAList = listError("mcp-go did not answer tools/list with a result")

// listRequest is a tools/list request as the cache answers it: a JSON-RPC
// request with an id, no params but an optional cursor.
type listRequest struct {
	id     mcp.RequestId
	cursor string
}

// parseListRequest reads body as a plain tools/list request: the four
// JSON-RPC members at most, params with a cursor at most (no _meta: a
// progress token or a 2026-07-28 request goes to mcp-go). ok is false for
// anything else.
func parseListRequest(body []byte) (listRequest, bool) {
	if !bytes.Contains(body, []byte(mcp.MethodToolsList)) {
		return listRequest{}, false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return listRequest{}, false
	}
	var version, method string
	var id any
	if json.Unmarshal(m["jsonrpc"], &version) != nil || version != mcp.JSONRPC_VERSION ||
		json.Unmarshal(m["method"], &method) != nil || method != string(mcp.MethodToolsList) ||
		json.Unmarshal(m["id"], &id) != nil || id == nil {
		return listRequest{}, false
	}
	switch id.(type) {
	case string, float64:
	default:
		return listRequest{}, false
	}
	req := listRequest{id: mcp.NewRequestId(id)}
	for k, v := range m {
		switch k {
		case "jsonrpc", "method", "id":
		case "params":
			var p map[string]json.RawMessage
			if json.Unmarshal(v, &p) != nil {
				return listRequest{}, false
			}
			for pk, pv := range p {
				if pk != "cursor" || json.Unmarshal(pv, &req.cursor) != nil {
					return listRequest{}, false
				}
			}
		default:
			return listRequest{}, false
		}
	}
	return req, true
}

// listFront answers a plain tools/list POSTed in a live session of the
// legacy protocol generation (a session id this endpoint's table knows
// for the caller, a valid pre-2026-07-28 MCP-Protocol-Version header)
// from the cached pages, and passes every other request to next
// (mcp-go): it validates and answers them as before. The answer is
// mcp-go's, as application/json. One difference: a notification waiting
// for a session without a GET stream goes out with the next request
// mcp-go answers, not with this one.
func (s *Server) listFront(sessions *sessionTable, next http.Handler) http.Handler {
	if s.listChanged {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hb, ok := r.Body.(*heldBody)
		// A browser's request (Origin) gets mcp-go's CORS headers.
		if !ok || r.Method != http.MethodPost || r.Header.Get("Origin") != "" {
			next.ServeHTTP(w, r)
			return
		}
		req, ok := parseListRequest(hb.b)
		if !ok || !legacySession(r, sessions) {
			next.ServeHTTP(w, r)
			return
		}
		page, ok := s.listPage(r.Context(), req.cursor)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(listResponseLen(req, page)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(appendListResponse(make([]byte, 0, listResponseLen(req, page)), req, page))
	})
}

// legacySession reports whether r is made in a live session of the
// legacy protocol generation, as mcp-go would accept it: an
// application/json body, a supported MCP-Protocol-Version before
// 2026-07-28, and a session id the table knows for this caller at this
// endpoint.
func legacySession(r *http.Request, sessions *sessionTable) bool {
	// The common Content-Type is compared as it is; any other is parsed.
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt != "application/json" {
			return false
		}
	}
	v := r.Header.Get(mcp.HeaderProtocolVersion)
	if v == "" || !mcp.IsValidProtocolVersion(v) || mcp.IsModernProtocol(v) {
		return false
	}
	id := r.Header.Get(mcpserver.HeaderKeySessionID)
	return id != "" && sessions.lookup(id, CallerFrom(r.Context()).Name, r.URL.Path)
}

func listResponseLen(req listRequest, page []byte) int {
	return len(appendListResponse(nil, req, nil)) + len(page)
}

// appendListResponse appends the JSON-RPC response of req with the result
// page, and a newline, as mcp-go's json.Encoder writes it.
func appendListResponse(b []byte, req listRequest, page []byte) []byte {
	id, _ := json.Marshal(req.id)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"result":`...)
	b = append(b, page...)
	return append(b, "}\n"...)
}

// stdioList returns the answer to msg from the cached pages when it is a
// plain tools/list (over stdio a request without _meta is of the legacy
// generation); ok is false for anything else, which is mcp-go's.
func (s *Server) stdioList(ctx context.Context, msg []byte) (answer []byte, ok bool) {
	if s.listChanged {
		return nil, false
	}
	req, ok := parseListRequest(msg)
	if !ok {
		return nil, false
	}
	page, ok := s.listPage(ctx, req.cursor)
	if !ok {
		return nil, false
	}
	return appendListResponse(make([]byte, 0, listResponseLen(req, page)), req, page), true
}
