package server

import (
	"bytes"
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
	n := len(m.body[0]) + len(m.body[1]) + len(m.body[2]) + len(m.body[3]) + len(queryID) + len(timestamp) + 20
	body = make([]byte, 0, n)
	body = append(append(body, m.body[0]...), queryID...)
	body = append(append(body, m.body[1]...), timestamp...)
	body = strconv.AppendInt(append(body, m.body[2]...), latencyMS, 10)
	body = append(body, m.body[3]...)
	sum := sha256.Sum256(body)
	stamp = make([]byte, 0, len(m.stamp[0])+len(m.stamp[1])+len(m.stamp[2])+len(timestamp)+2*len(sum))
	stamp = append(append(stamp, m.stamp[0]...), timestamp...)
	stamp = hex.AppendEncode(append(stamp, m.stamp[1]...), sum[:])
	stamp = append(stamp, m.stamp[2]...)
	return body, stamp
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
