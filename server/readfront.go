package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"reflect"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/promcp/promcp-device/promcp"
)

// The read front: a cached read's bytes written as they are (issue 28,
// item 2). mcp-go v1.2.1 re-scans a result's raw JSON three times on the
// way out (Meta.MarshalJSON, CallToolResult.MarshalJSON, the transport's
// json.Marshal) and has no hook to hand it final bytes. So the call is left
// to mcp-go entirely (its session, hooks, recovery, cancellation, tool
// lookup, the handler and its observer, the response it builds and
// writes), and only the three large members of a cached sample's result
// are handed to it as short placeholder strings: mcp-go then scans a few
// dozen bytes, and the response writer puts the sample's bytes, encoded
// once, in place of each placeholder. Nothing is decoded or re-encoded.
//
// The front marks a request (readSlot, in its context) only when it may be
// a tools/call of a read_* tool (or can_do, below) POSTed in a live session of the legacy
// protocol generation, without Origin; the read handler answers with
// placeholders only for such a request, when mcp-go decoded it as a call
// without _meta (a progress token) or task, its arguments were accepted,
// and its answer is the tool's cached sample (reuse). Everything else is
// answered by mcp-go as before, byte for byte.
//
// A can_do call is marked the same way; its handler answers with
// placeholders only for a reused answer whose encoding is kept
// (frontFromMemo, candomemo.go), with the same _meta and task checks.

// frontKey is the context key of a request's readSlot.
type frontKey struct{}

// readSlot is what one marked request's handler left for the writer: the
// bytes of the members it answered with placeholders for (nil: none), a
// cached sample's or a reused can_do answer's (candomemo.go).
type readSlot struct {
	wire atomic.Pointer[wire]
}

// readFront holds a server's placeholders: quoted JSON strings with a
// random part, so that no value a client or device sends can spell one.
type readFront struct {
	once                sync.Once
	text, body, stamp   string // the placeholders, unquoted
	qText, qBody, qStmp []byte // the same, quoted, as mcp-go writes them
	prefix              []byte // what the three share, quoted: `"promcp-splice-<nonce>-`

	// The placeholders as a result holds them, boxed once.
	content               []mcp.Content
	boxedBody, boxedStamp any // json.RawMessage

	answered atomic.Int64 // reads answered with placeholders (tests)
}

func (f *readFront) init() {
	f.once.Do(func() {
		var n [16]byte
		_, _ = rand.Read(n[:]) // never fails (crypto/rand)
		base := "promcp-splice-" + hex.EncodeToString(n[:]) + "-"
		f.text, f.body, f.stamp = base+"t", base+"b", base+"s"
		f.qText, f.qBody, f.qStmp = []byte(`"`+f.text+`"`), []byte(`"`+f.body+`"`), []byte(`"`+f.stamp+`"`)
		f.prefix = []byte(`"` + base)
		f.content = []mcp.Content{mcp.NewTextContent(f.text)}
		f.boxedBody, f.boxedStamp = json.RawMessage(f.qBody), json.RawMessage(f.qStmp)
	})
}

// wire is a cached sample's result members as mcp-go's encoding writes
// them: the text content as a JSON string, the structured content and
// the stamp HTML-escaped as encoding/json compacts a RawMessage.
type wire struct {
	text, body, stamp []byte
}

// wireOf returns m's members encoded for the wire, once per sample.
func (m *stampMemo) wireOf() *wire {
	m.wireOnce.Do(func() {
		text := m.content[0].(mcp.TextContent).Text
		t, _ := json.Marshal(text) // a string: cannot fail
		var b, s bytes.Buffer
		json.HTMLEscape(&b, m.structured.(json.RawMessage))
		json.HTMLEscape(&s, m.stamp.(json.RawMessage))
		m.wire = &wire{text: t, body: b.Bytes(), stamp: s.Bytes()}
	})
	return m.wire
}

// frontReuse is reuse for a request the front marked: when body is the
// tool's cached sample, the result with placeholders for its members, and
// the sample left in the request's slot for the writer. nil otherwise
// (then the caller answers as it always did). A call whose arguments were
// refused (argErr) is answered as it always was.
func (s *Server) frontReuse(ctx context.Context, req *mcp.CallToolRequest, argErr *promcp.Error, tool string, body any, isError bool, checked string) *mcp.CallToolResult {
	slot, ok := ctx.Value(frontKey{}).(*readSlot)
	if !ok || argErr != nil || req.Params.Meta != nil || req.Params.Task != nil || slot.wire.Load() != nil {
		return nil
	}
	memo := s.stamps[tool]
	if memo == nil {
		return nil
	}
	last := memo.Load()
	if last == nil || last.checked != checked || last.isError != isError || len(last.content) != 1 || !reflect.DeepEqual(last.body, body) {
		return nil
	}
	if _, ok := last.content[0].(mcp.TextContent); !ok {
		return nil
	}
	if !slot.wire.CompareAndSwap(nil, last.wireOf()) {
		return nil
	}
	return s.front.placeholders(last.isError)
}

// placeholders is a result whose members are the front's placeholders,
// counted as answered by the front.
func (f *readFront) placeholders(isError bool) *mcp.CallToolResult {
	f.answered.Add(1)
	f.init()
	return &mcp.CallToolResult{
		Content:           f.content,
		StructuredContent: f.boxedBody,
		IsError:           isError,
		Result:            mcp.Result{Meta: &mcp.Meta{AdditionalFields: map[string]any{ProvenanceKey: f.boxedStamp}}},
	}
}

// readFrontHandler marks the plain reads and can_do calls among the
// requests to next (see the package note above) and writes their answers
// through a splicer.
// Every request still goes to next.
func (s *Server) readFrontHandler(sessions *sessionTable, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hb, ok := r.Body.(*heldBody)
		if !ok || r.Method != http.MethodPost || r.Header.Get("Origin") != "" ||
			!mayBeRead(hb.b) || !legacySession(r, sessions) {
			next.ServeHTTP(w, r)
			return
		}
		s.front.init()
		slot := &readSlot{}
		next.ServeHTTP(&splicer{ResponseWriter: w, slot: slot, f: &s.front}, r.WithContext(context.WithValue(r.Context(), frontKey{}, slot)))
	})
}

// mayBeRead is the front's cheap look at a body: it names tools/call and
// a read tool or can_do. Whether it is a plain call is decided on the
// request as mcp-go decoded it (frontReuse, frontFromMemo).
func mayBeRead(body []byte) bool {
	return bytes.Contains(body, []byte(`"tools/call"`)) &&
		(bytes.Contains(body, []byte(`"read_`)) || bytes.Contains(body, []byte(`"can_do"`)))
}

// splicer writes what mcp-go writes, with a marked read's placeholders
// replaced by its sample's bytes. mcp-go writes each message (JSON or an
// SSE event) in one Write.
type splicer struct {
	http.ResponseWriter
	slot *readSlot
	f    *readFront
}

func (w *splicer) Write(p []byte) (int, error) {
	wr := w.slot.wire.Load()
	if wr == nil || !bytes.Contains(p, w.f.prefix) {
		return w.ResponseWriter.Write(p)
	}
	out := make([]byte, 0, len(p)+len(wr.text)+len(wr.body)+len(wr.stamp))
	rest := p
	for {
		i := bytes.Index(rest, w.f.prefix)
		if i < 0 {
			break
		}
		out = append(out, rest[:i]...)
		rest = rest[i:]
		switch {
		case bytes.HasPrefix(rest, w.f.qText):
			out, rest = append(out, wr.text...), rest[len(w.f.qText):]
		case bytes.HasPrefix(rest, w.f.qBody):
			out, rest = append(out, wr.body...), rest[len(w.f.qBody):]
		case bytes.HasPrefix(rest, w.f.qStmp):
			out, rest = append(out, wr.stamp...), rest[len(w.f.qStmp):]
		default:
			out, rest = append(out, rest[0]), rest[1:]
		}
	}
	out = append(out, rest...)
	if _, err := w.ResponseWriter.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush passes a flush on (mcp-go flushes SSE events).
func (w *splicer) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }

// Unwrap gives http.ResponseController the writer below.
func (w *splicer) Unwrap() http.ResponseWriter { return w.ResponseWriter }
