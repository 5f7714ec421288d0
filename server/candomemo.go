package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/promcp/promcp-device/promcp"
)

// A can_do answer that its handler gives again unchanged (the gateway does
// while nothing it depends on can have changed, see gateway/candocache.go)
// comes back with the promcp.Memo it was first given with. The first time,
// the server encodes it as any answer and keeps the encoding in the Memo,
// cut where the per-call parts go; each time after, it makes only those:
//
//   - the body's query_id (a new UUID per call, as the spec's query_id is
//     the query's), metadata.timestamp (now) and metadata.total_latency_ms;
//   - the stamp's claim, which names the timestamp ("can_do at …"), and
//     its body digest, of the new body.
//
// Everything else in the body and in the envelope comes from the report,
// the grounds (the intent and scope, which the gateway's question key
// holds) and the caller's permission to act (restrictCandidates), which
// the kept encoding records and a call must match. Neither the body nor the
// envelope is encoded again, and the typed checks are not run again: they
// passed on the same report, and the per-call parts are of the same form.
// Only answers checked "typed" with the envelope in _meta are kept.

// canDoMemo is an answer's encoding, cut where the per-call parts go:
//
//	body  = body[0] + query_id + body[1] + timestamp + body[2] + latency + body[3]
//	stamp = stamp[0] + timestamp + stamp[1] + sha256(body) + stamp[2]
type canDoMemo struct {
	restriction string // the caller's restriction it was made for (restriction)
	body        [4][]byte
	stamp       [3][]byte

	// The same pieces as mcp-go's encoding writes the result's members,
	// for the read front (readfront.go): the body as the text content's
	// JSON string (without its quotes), the body and the stamp HTML-escaped
	// as encoding/json writes a RawMessage. The per-call parts are ASCII
	// that neither escapes, so the pieces escaped one by one are the whole
	// escaped. wired is false when they did not make the whole again.
	wired              bool
	textBody, wireBody [4][]byte
	wireStamp          [3][]byte
}

// memoable reports whether rep is an answer given again whose encoding may
// be kept: the handler set its Memo and left the per-call parts to the
// server, it did not fail, and the envelope goes in _meta.
func (s *Server) memoable(rep promcp.CapabilityReport, failed bool) bool {
	return rep.Memo != nil && !failed && rep.Error == nil && s.placement == ProvenanceMeta &&
		rep.QueryID == "" && rep.Metadata.Timestamp.IsZero() && rep.Metadata.TotalLatencyMS == 0
}

// restriction is what restrictCandidates does to a report for caller c: ""
// when c may act, else the reason it may not (the server's own refusals,
// read-only and refuseDo, are the same for every caller).
func (s *Server) restriction(c Caller) string {
	if s.authorize(c, promcp.KindDo) {
		return ""
	}
	return "\x00" + s.mayNotAct(c)
}

// fromMemo is the result of the answer whose encoding m keeps, for caller
// c, with its per-call parts made now; nil when m keeps none, or one made
// for a caller restricted otherwise.
func (s *Server) fromMemo(m *promcp.Memo, c Caller, start time.Time) *mcp.CallToolResult {
	kept, _ := m.Load().(*canDoMemo)
	if kept == nil || kept.restriction != s.restriction(c) {
		return nil
	}
	now := s.clock.Now().UTC()
	body, stamp := kept.make(newUUID(), now.Format(time.RFC3339Nano), time.Since(start).Milliseconds())
	return &mcp.CallToolResult{
		Content:           []mcp.Content{mcp.NewTextContent(string(body))},
		StructuredContent: json.RawMessage(body),
		Result:            mcp.Result{Meta: &mcp.Meta{AdditionalFields: map[string]any{ProvenanceKey: json.RawMessage(stamp)}}},
	}
}

// make returns the body and the stamp with these per-call parts.
func (m *canDoMemo) make(queryID, timestamp string, latencyMS int64) (body, stamp []byte) {
	body = joinBody(nil, &m.body, queryID, timestamp, latencyMS)
	sum := sha256.Sum256(body)
	return body, joinStamp(&m.stamp, timestamp, sum[:])
}

// wireOf returns the result's members as mcp-go's encoding writes them,
// with these per-call parts (the read front's, readfront.go).
func (m *canDoMemo) wireOf(queryID, timestamp string, latencyMS int64) *wire {
	sum := sha256.Sum256(joinBody(nil, &m.body, queryID, timestamp, latencyMS))
	text := joinBody([]byte{'"'}, &m.textBody, queryID, timestamp, latencyMS)
	return &wire{text: append(text, '"'), body: joinBody(nil, &m.wireBody, queryID, timestamp, latencyMS),
		stamp: joinStamp(&m.wireStamp, timestamp, sum[:])}
}

// joinBody appends to dst a body made of pieces and the per-call parts.
func joinBody(dst []byte, pieces *[4][]byte, queryID, timestamp string, latencyMS int64) []byte {
	n := len(dst) + len(pieces[0]) + len(pieces[1]) + len(pieces[2]) + len(pieces[3]) + len(queryID) + len(timestamp) + 21
	body := append(make([]byte, 0, n), dst...)
	body = append(append(body, pieces[0]...), queryID...)
	body = append(append(body, pieces[1]...), timestamp...)
	body = strconv.AppendInt(append(body, pieces[2]...), latencyMS, 10)
	return append(body, pieces[3]...)
}

// joinStamp is a stamp made of pieces, the timestamp and the body's digest.
func joinStamp(pieces *[3][]byte, timestamp string, sum []byte) []byte {
	stamp := make([]byte, 0, len(pieces[0])+len(pieces[1])+len(pieces[2])+len(timestamp)+2*len(sum))
	stamp = append(append(stamp, pieces[0]...), timestamp...)
	stamp = hex.AppendEncode(append(stamp, pieces[1]...), sum)
	return append(stamp, pieces[2]...)
}

// keepWire sets m's wire pieces when, with the per-call parts of the
// answer (body, stamp) they were cut from, they make exactly what
// encoding/json writes for its members.
func (m *canDoMemo) keepWire(body, stamp []byte, queryID, ts string, latencyMS int64) {
	for i, p := range m.body {
		t, _ := json.Marshal(string(p)) // a string: cannot fail
		m.textBody[i] = t[1 : len(t)-1]
		var b bytes.Buffer
		json.HTMLEscape(&b, p)
		m.wireBody[i] = b.Bytes()
	}
	for i, p := range m.stamp {
		var b bytes.Buffer
		json.HTMLEscape(&b, p)
		m.wireStamp[i] = b.Bytes()
	}
	w := m.wireOf(queryID, ts, latencyMS)
	text, err1 := json.Marshal(string(body))
	wb, err2 := json.Marshal(json.RawMessage(body))
	ws, err3 := json.Marshal(json.RawMessage(stamp))
	m.wired = err1 == nil && err2 == nil && err3 == nil &&
		bytes.Equal(w.text, text) && bytes.Equal(w.body, wb) && bytes.Equal(w.stamp, ws)
}

// frontFromMemo is fromMemo for a request the read front marked
// (readfront.go), decoded without _meta or task: the result with the
// front's placeholders for its members, their bytes left in the request's
// slot for the writer. nil otherwise (then fromMemo answers).
func (s *Server) frontFromMemo(ctx context.Context, req *mcp.CallToolRequest, m *promcp.Memo, c Caller, start time.Time) *mcp.CallToolResult {
	slot, ok := ctx.Value(frontKey{}).(*readSlot)
	if !ok || req.Params.Meta != nil || req.Params.Task != nil || slot.wire.Load() != nil {
		return nil
	}
	kept, _ := m.Load().(*canDoMemo)
	if kept == nil || !kept.wired || kept.restriction != s.restriction(c) {
		return nil
	}
	now := s.clock.Now().UTC()
	if !slot.wire.CompareAndSwap(nil, kept.wireOf(newUUID(), now.Format(time.RFC3339Nano), time.Since(start).Milliseconds())) {
		return nil
	}
	return s.front.placeholders(false)
}

// keepEncoded keeps res, the result encoded for rep (its per-call parts
// set) and caller c, in rep's Memo, cut where the per-call parts go. It
// keeps nothing unless the cut pieces make res's bytes again exactly.
func (s *Server) keepEncoded(rep promcp.CapabilityReport, c Caller, res *mcp.CallToolResult) {
	body, _ := res.StructuredContent.(json.RawMessage)
	var stamp json.RawMessage
	if res.Meta != nil {
		stamp, _ = res.Meta.AdditionalFields[ProvenanceKey].(json.RawMessage)
	}
	ts := rep.Metadata.Timestamp.UTC().Format(time.RFC3339Nano)
	m, ok := cutEncoded(body, stamp, rep.QueryID, ts, rep.Metadata.TotalLatencyMS)
	if !ok {
		return
	}
	if b, st := m.make(rep.QueryID, ts, rep.Metadata.TotalLatencyMS); !bytes.Equal(b, body) || !bytes.Equal(st, stamp) {
		return
	}
	m.restriction = s.restriction(c)
	m.keepWire(body, stamp, rep.QueryID, ts, rep.Metadata.TotalLatencyMS)
	rep.Memo.Store(m)
}

// cutEncoded cuts body and stamp where the per-call parts go (canDoMemo).
func cutEncoded(body, stamp []byte, queryID, ts string, latencyMS int64) (*canDoMemo, bool) {
	m := &canDoMemo{}
	head := []byte(`{"query_id":"` + queryID + `"`)
	if !bytes.HasPrefix(body, head) {
		return nil, false
	}
	// metadata is the body's last member (error, after it, is unset).
	meta := `"metadata":{"timestamp":"`
	at := bytes.LastIndex(body, []byte(meta+ts+`","total_latency_ms":`+strconv.FormatInt(latencyMS, 10)))
	if at < 0 {
		return nil, false
	}
	afterTS := at + len(meta) + len(ts)
	afterLatency := afterTS + len(`","total_latency_ms":`) + len(strconv.FormatInt(latencyMS, 10))
	m.body = [4][]byte{
		body[:len(`{"query_id":"`)],
		body[len(head)-1 : at+len(meta)],
		body[afterTS : afterTS+len(`","total_latency_ms":`)],
		body[afterLatency:],
	}
	// The claim is the envelope's first string after _tool.
	claim := `"claim":"can_do at `
	ci := bytes.Index(stamp, []byte(claim+ts))
	digest := `"body":"sha256:`
	di := bytes.LastIndex(stamp, []byte(digest))
	if ci < 0 || di < ci || di+len(digest)+2*sha256.Size > len(stamp) {
		return nil, false
	}
	afterClaimTS := ci + len(claim) + len(ts)
	m.stamp = [3][]byte{
		stamp[:ci+len(claim)],
		stamp[afterClaimTS : di+len(digest)],
		stamp[di+len(digest)+2*sha256.Size:],
	}
	return m, true
}
